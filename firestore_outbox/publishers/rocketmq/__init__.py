"""firestore_outbox.publishers.rocketmq: internal."""
