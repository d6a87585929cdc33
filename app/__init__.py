"""The reference order application (the design card's application layer), built on the
`firestore_outbox` library: the order domain, `OrderRepository`, `create_new_order`, the unit
of work with `uow.orders`, the HTTP order API, the order-count consumer and the demo.

It runs from the repository and goes into the Function Compute package; the wheel installs
only `firestore_outbox`, so an application's own `app` package never collides with it.
"""
