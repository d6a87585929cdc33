"""firestore_outbox.relay.partitioned: internal."""
