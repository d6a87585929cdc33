"""firestore_outbox.publishers: internal."""
