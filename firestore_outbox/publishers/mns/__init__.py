"""firestore_outbox.publishers.mns: internal."""
