"""The reference order application (the design card's application layer) under the names the
design card gives it: `app.services.create_new_order`, `app.uow.FirestoreUnitOfWork`,
`app.repository`, `app.errors`, `app.firestore_client`, `app.api`, `app.order_counter`.

The code itself ships in the wheel as `firestore_outbox.example`, written on the library's
public names only; these modules re-export it, so this folder imports nothing else (a test
checks). It runs from the repository and goes into the Function Compute package.
"""
