"""firestore_outbox.consumer: internal."""
