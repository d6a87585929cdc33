"""`OrderCounter`: the reference downstream consumer (`firestore_outbox.example`'s)."""

from firestore_outbox import load_receiver_config
from firestore_outbox.consumer import ReceiverConfig
from firestore_outbox.example import OrderCounter

__all__ = ["OrderCounter", "ReceiverConfig", "load_receiver_config"]
