"""firestore_outbox.relay.follow: internal."""
