"""firestore_outbox.producer: internal."""
