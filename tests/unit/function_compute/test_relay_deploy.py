"""s.yaml's relay function takes `http` nudges once its optional HTTP trigger is uncommented:
its handler is `http_handler` (which runs the timer's events as `handler` does), the trigger
anonymous and POST only, and the nudge's secret comes from the environment, never inline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from firestore_outbox.function_compute import RelayFunction
from function_compute import relay_handler

ROOT = Path(__file__).resolve().parents[3]
TRIGGER_LINES = ("- triggerName: relay-nudge", "triggerType: http", "triggerConfig:")
CONFIG_LINES = ("authType:", "methods:", "disableURLInternet:")


def relay_props(uncomment: bool) -> dict[str, Any]:
    """The relay function's props; with `uncomment`, its HTTP trigger's lines uncommented."""
    lines = []
    for line in (ROOT / "s.yaml").read_text().splitlines():
        body = line.lstrip().removeprefix("# ")
        if (
            uncomment
            and line.lstrip().startswith("# ")
            and body.lstrip().startswith((*TRIGGER_LINES, *CONFIG_LINES))
        ):
            line = line.replace("# ", "", 1)
        lines.append(line)
    props: dict[str, Any] = yaml.safe_load("\n".join(lines))["resources"]["relay"]["props"]
    return props


def test_the_relay_function_runs_http_handler_which_serves_the_timer_too() -> None:
    props = relay_props(uncomment=False)
    assert props["handler"] == "function_compute/relay_handler.http_handler"
    assert props["initializer"] == "function_compute/relay_handler.initialize"
    assert isinstance(relay_handler.http_handler.__self__, RelayFunction)
    # the same warm relay serves both handlers, warmed by the one initializer
    assert relay_handler.http_handler.__self__ is relay_handler.handler.__self__
    assert relay_handler.initialize.__self__ is relay_handler.handler.__self__
    assert [t["triggerType"] for t in props["triggers"]] == ["timer"]  # the HTTP one is opt-in
    secret = props["environmentVariables"]["OUTBOX_NUDGE_SECRET"]
    assert secret == "${env('OUTBOX_NUDGE_SECRET', '')}"  # by reference, never inline


def test_the_optional_http_trigger_is_anonymous_and_post_only() -> None:
    timer, http = relay_props(uncomment=True)["triggers"]
    assert timer["triggerType"] == "timer"
    assert http["triggerType"] == "http" and http["triggerName"] == "relay-nudge"
    assert http["triggerConfig"]["authType"] == "anonymous"
    assert http["triggerConfig"]["methods"] == ["POST"]
