"""Whose fault a failed POST is, from libcurl's error code (`CURLE_*`, curl.h: numbers that
are part of libcurl's ABI, named here because pycurl exports only some of them).

Failures before anything was sent (DNS, refused, TLS, proxy, connect timeout) are the
channel's: nothing reached the downstream. Timeouts and resets after the request went out may
have reached it and may pass: they are retried. The error's first words are the ones
`lastError` always had (`ConnectionError`, `timeout: ConnectTimeout`, ...), so that what
operators group and alert on (`error_class`) did not change with the transport.
"""

from __future__ import annotations

from firestore_outbox.publishers.base import Outcome

OPERATION_TIMEDOUT = 28
WRITE_ERROR = 23  # our own answer reader stopped the transfer at the cap

# The channel's: nothing reached the downstream, and the next event would fare no better.
CHANNEL = {
    1: "UNSUPPORTED_PROTOCOL",
    3: "URL_MALFORMAT",
    5: "COULDNT_RESOLVE_PROXY",
    6: "COULDNT_RESOLVE_HOST",
    7: "COULDNT_CONNECT",
    35: "SSL_CONNECT_ERROR",
    51: "PEER_FAILED_VERIFICATION",  # its number before libcurl 7.62 (a source build's)
    53: "SSL_ENGINE_NOTFOUND",
    54: "SSL_ENGINE_SETFAILED",
    58: "SSL_CERTPROBLEM",
    59: "SSL_CIPHER",
    60: "PEER_FAILED_VERIFICATION",
    66: "SSL_ENGINE_INITFAILED",
    77: "SSL_CACERT_BADFILE",
    82: "SSL_CRL_BADFILE",
    83: "SSL_ISSUER_ERROR",
    90: "SSL_PINNEDPUBKEYNOTMATCH",
    91: "SSL_INVALIDCERTSTATUS",
    97: "PROXY",
    98: "SSL_CLIENTCERT",
}
# The connection broke after the request went out (or while it did): retried.
BROKEN = {
    8: "WEIRD_SERVER_REPLY",
    16: "HTTP2",
    18: "PARTIAL_FILE",
    52: "GOT_NOTHING",
    55: "SEND_ERROR",
    56: "RECV_ERROR",
    92: "HTTP2_STREAM",
    95: "HTTP3",
}
# The words each channel failure's error starts with (the rest: "ConnectionError").
_CHANNEL_WORDS = {
    5: "ConnectionError: DNS",
    6: "ConnectionError: DNS",
    51: "ConnectionError: CERTIFICATE_VERIFY_FAILED",
    # OpenSSL's name for it, which `lastError` has always carried.
    60: "ConnectionError: CERTIFICATE_VERIFY_FAILED",
}


def describe(code: int, message: str, *, sent: bool) -> tuple[Outcome, str]:
    """The outcome of libcurl's error `code` (with its `message`), `sent` telling whether any
    of the request left: a timeout before it did is the channel's (connecting took too
    long), after it the attempt's (the answer took too long)."""
    said = f"curl {code} {_name(code)}: {message}"
    if code == OPERATION_TIMEDOUT:
        if sent:
            return Outcome.RETRY, f"timeout: ReadTimeout: {said}"
        return Outcome.CHANNEL, f"timeout: ConnectTimeout: {said}"
    if code in CHANNEL:
        return Outcome.CHANNEL, f"{_CHANNEL_WORDS.get(code, 'ConnectionError')}: {said}"
    if code in BROKEN:
        return Outcome.RETRY, f"ConnectionError: {said}"
    return Outcome.RETRY, f"CurlError: {said}"


def _name(code: int) -> str:
    if code == OPERATION_TIMEDOUT:
        return "OPERATION_TIMEDOUT"
    return CHANNEL.get(code) or BROKEN.get(code) or "CURLE"
