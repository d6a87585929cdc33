"""Deploying from the team's own repository: `outbox fc init` writes the skeleton
(`firestore_outbox.deploy.skeleton`), `outbox fc build` the Function Compute code package
(`firestore_outbox.deploy.build`), `outbox fc preview` what `s deploy` would deploy with the
secrets hidden (`firestore_outbox.deploy.preview`). Tools for a laptop or CI: none of it is in
the function's package."""
