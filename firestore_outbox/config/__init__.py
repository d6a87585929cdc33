"""firestore_outbox.config: internal."""
