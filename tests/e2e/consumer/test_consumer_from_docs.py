"""docs/consuming.md's "Your own consumer" as written: its `invoice_mailer.py` block saved in a
fresh directory and served by the real `outbox receiver --consumer`, deliveries sent by the
relay's own HTTP publisher, signed: applied once, a duplicate answered as one, another type
ignored, a forgery refused, on the emulator."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import requests

from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.http.publisher import HttpPublisher
from firestore_outbox.signing import Signer
from tests.e2e.consumer.test_receiver_command import environment
from tests.support.drill import OUTBOX

ROOT = Path(__file__).resolve().parents[3]
BLOCK = re.compile(r'^```python title="invoice_mailer\.py"\n(.*?)^```', re.S | re.M)
SECRET = "whsec-docs-consumer-0123456789"


def delivery(event_id: str, event_type: str, data: dict[str, str]) -> Delivery:
    body = json.dumps(data).encode()
    return Delivery(event_id, event_type, "/billing", "INV-1", "2026-12-03T08:00:00Z", body, 1)


def test_a_consumer_written_as_the_docs_say_is_served_by_outbox_receiver(
    settings: Settings, tmp_path: Path, unique: str
) -> None:
    [code] = BLOCK.findall((ROOT / "docs" / "consuming.md").read_text(encoding="utf-8"))
    (tmp_path / "invoice_mailer.py").write_text(code, encoding="utf-8")
    process = subprocess.Popen(
        [OUTBOX, "receiver", "--consumer", "invoice_mailer:InvoiceMailer", "--port", "0"],
        env=environment(
            settings, RECEIVER_SIGNING_SECRET=SECRET, INBOX_COLLECTION=f"inbox-{unique}"
        ),
        cwd=tmp_path,  # the module lies in the current directory, as the docs say
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("listening on "), process.stderr and process.stderr.read()
        url = line.removeprefix("listening on ")
        publisher = HttpPublisher(url, connect_timeout=2, read_timeout=10, signer=Signer([SECRET]))
        issued = delivery(
            f"e-{unique}", "InvoiceIssued", {"invoiceId": "INV-1", "customerId": "c-7"}
        )

        first = publisher.publish(issued)
        again = publisher.publish(issued)
        other = publisher.publish(delivery(f"o-{unique}", "OrderCreated", {"customerId": "c"}))
        forged = requests.post(url, data=b"{}", headers={"ce-id": "x"}, timeout=10)

        assert first.outcome is Outcome.DELIVERED and again.outcome is Outcome.DELIVERED
        assert other.outcome is Outcome.DELIVERED
        assert forged.status_code == 401
        db = get_db_client(settings)
        mail = db.collection("invoice_mails").document(f"e-{unique}").get().to_dict()
        assert mail == {"to": "c-7", "invoiceId": "INV-1"}
        assert db.collection("invoice_mails").document(f"o-{unique}").get().exists is False
        # One record, one run of the effect: the second delivery was a duplicate, and the
        # ignored type wrote none.
        [record] = [r.to_dict() for r in db.collection(f"inbox-{unique}").get()]
        assert (record["eventId"], record["status"], record["attempts"]) == (
            f"e-{unique}",
            "SUCCEEDED",
            1,
        )
    finally:
        process.terminate()
        process.wait(timeout=10)
