"""firestore_outbox.publishers.amqp: internal."""
