"""firestore_outbox.publishers.http: internal."""
