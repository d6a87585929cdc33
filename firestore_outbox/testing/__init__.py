"""firestore_outbox.testing: internal."""
