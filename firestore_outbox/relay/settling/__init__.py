"""firestore_outbox.relay.settling: internal."""
