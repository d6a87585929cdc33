"""firestore_outbox.publishers.kafka: internal."""
