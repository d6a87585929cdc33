"""firestore_outbox.config: the composition root (internal). It reads the environment once
(`loader.Configuration`) and builds every object from it (`wiring`, `warm_relay`); the entry
points call it, and nothing below imports it."""
