"""firestore_outbox.firestore: internal."""
