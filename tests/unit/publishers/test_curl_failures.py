"""libcurl's error codes onto the relay's outcomes (`firestore_outbox.publishers.http.failures`):
before anything was sent, the channel's; after, a retry; the first words of each error are
the ones `lastError` carried before the transport moved to libcurl (what `error_class` groups
by). Each code is named by pycurl's constant where pycurl exports one, so a renumbering fails
here."""

from __future__ import annotations

import pycurl
import pytest

from firestore_outbox.publishers.base import Outcome, PublishResult, error_class
from firestore_outbox.publishers.http.failures import BROKEN, CHANNEL, describe

CASES = [
    # (pycurl's constant, request sent?, outcome, error's first words)
    ("E_COULDNT_RESOLVE_HOST", False, Outcome.CHANNEL, "ConnectionError: DNS: curl 6 "),
    ("E_COULDNT_RESOLVE_PROXY", False, Outcome.CHANNEL, "ConnectionError: DNS: curl 5 "),
    ("E_COULDNT_CONNECT", False, Outcome.CHANNEL, "ConnectionError: curl 7 COULDNT_CONNECT"),
    ("E_SSL_CONNECT_ERROR", False, Outcome.CHANNEL, "ConnectionError: curl 35 "),
    (
        "E_PEER_FAILED_VERIFICATION",  # 60 since libcurl 7.62, 51 before
        False,
        Outcome.CHANNEL,
        f"ConnectionError: CERTIFICATE_VERIFY_FAILED: curl {pycurl.E_PEER_FAILED_VERIFICATION} ",
    ),
    ("E_SSL_CACERT_BADFILE", False, Outcome.CHANNEL, "ConnectionError: curl 77 "),
    ("E_OPERATION_TIMEDOUT", False, Outcome.CHANNEL, "timeout: ConnectTimeout: curl 28 "),
    ("E_OPERATION_TIMEDOUT", True, Outcome.RETRY, "timeout: ReadTimeout: curl 28 "),
    ("E_RECV_ERROR", True, Outcome.RETRY, "ConnectionError: curl 56 RECV_ERROR"),
    ("E_SEND_ERROR", True, Outcome.RETRY, "ConnectionError: curl 55 SEND_ERROR"),
    ("E_GOT_NOTHING", True, Outcome.RETRY, "ConnectionError: curl 52 GOT_NOTHING"),
    ("E_PARTIAL_FILE", True, Outcome.RETRY, "ConnectionError: curl 18 PARTIAL_FILE"),
    ("E_HTTP2", True, Outcome.RETRY, "ConnectionError: curl 16 HTTP2"),
]


@pytest.mark.parametrize(("constant", "sent", "outcome", "words"), CASES)
def test_each_libcurl_error_maps_onto_its_outcome(
    constant: str, sent: bool, outcome: Outcome, words: str
) -> None:
    code = getattr(pycurl, constant)
    got, error = describe(code, "what libcurl said", sent=sent)
    assert got is outcome
    assert error.startswith(words) and error.endswith(": what libcurl said"), error


@pytest.mark.parametrize(("constant", "sent", "outcome", "words"), CASES)
def test_errors_group_under_the_names_they_had(
    constant: str, sent: bool, outcome: Outcome, words: str
) -> None:
    _, error = describe(getattr(pycurl, constant), "x", sent=sent)
    assert error_class(PublishResult(outcome, error)) == words.split(":")[0]


def test_the_codes_pycurl_does_not_export_keep_libcurls_numbers() -> None:
    # curl.h: CURLE_WEIRD_SERVER_REPLY 8, CURLE_HTTP2_STREAM 92, CURLE_HTTP3 95, CURLE_PROXY 97.
    assert (BROKEN[8], BROKEN[92], BROKEN[95], CHANNEL[97]) == (
        "WEIRD_SERVER_REPLY",
        "HTTP2_STREAM",
        "HTTP3",
        "PROXY",
    )
    codes: dict[str, set[int]] = {}
    for code, name in [*CHANNEL.items(), *BROKEN.items()]:
        codes.setdefault(name, set()).add(code)
    for name, numbers in codes.items():
        exported = getattr(pycurl, f"E_{name}", None)
        assert exported is None or exported in numbers, f"pycurl.E_{name} is {exported}"


def test_an_unknown_code_is_retried_never_dropped() -> None:
    outcome, error = describe(999, "new in some libcurl", sent=True)
    assert outcome is Outcome.RETRY and error.startswith("CurlError: curl 999")
