"""The run that drives one event forward: `Relay` and its budget (`relay`, `ending`), the
lease-mode record, and the drains that call claim, read, publish and settle in turn."""
