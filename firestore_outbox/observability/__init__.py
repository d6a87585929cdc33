"""firestore_outbox.observability: internal."""
