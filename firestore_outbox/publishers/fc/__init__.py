"""firestore_outbox.publishers.fc: internal."""
