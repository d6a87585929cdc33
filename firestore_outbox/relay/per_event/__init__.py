"""firestore_outbox.relay.per_event: internal."""
