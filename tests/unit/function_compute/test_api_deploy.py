"""s.yaml deploys the order API as a second, HTTP-triggered function from the same build."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def api_resource() -> str:
    text = (ROOT / "s.yaml").read_text()
    return text[text.index("\n  api:\n") :]


def test_the_api_function_names_real_entry_points_and_an_http_trigger() -> None:
    api = api_resource()
    assert "handler: function_compute/api_handler.handler" in api
    assert "initializer: function_compute/api_handler.initialize" in api
    # the library's HTTP-trigger adapter, serving the example order API
    from firestore_outbox.function_compute import HttpFunction
    from function_compute import api_handler

    for entry in (api_handler.handler, api_handler.initialize):
        assert isinstance(getattr(entry, "__self__", None), HttpFunction)
    assert "triggerType: http" in api and "methods: [GET, POST]" in api
    assert "code: ./build/fc" in api and "runtime: python3.10" in api


def test_the_api_function_gets_every_front_door_variable() -> None:
    config = (ROOT / "firestore_outbox" / "idempotency" / "config.py").read_text()
    variables = set(re.findall(r'get\("(IDEMPOTENCY_[A-Z_]+)"\)', config))
    assert len(variables) == 7
    api = api_resource()
    for name in variables | {"FIRESTORE_CREDENTIALS_JSON", "ORDERS_COLLECTION"}:
        assert f"{name}: ${{env('{name}'" in api, name
