"""Environments for the relay's configuration tests: a downstream URL holding a secret, and the
fc publisher's variables."""

from __future__ import annotations

URL = "https://hooks.example.com/orders?token=t0ps3cret"


FC = {
    "RELAY_PUBLISHER": "fc",
    "RELAY_FC_ENDPOINT": "https://123.cn-hangzhou.fc.aliyuncs.com",
    "RELAY_FC_SERVICE": "orders",
    "RELAY_FC_FUNCTION": "on-order-created",
    "ALIBABA_CLOUD_ACCESS_KEY_ID": "AKID",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "t0ps3cret",
}
