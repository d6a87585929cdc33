"""`HttpTransport`: POSTs over kept-alive libcurl connections, every outcome a `PublishResult`
(`HttpPublisher` and the cloud API publishers send through it)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import certifi

from firestore_outbox.masking import masker
from firestore_outbox.publishers.base import (
    Outcome,
    PublisherOptions,
    PublishResult,
    bounded_error,
    check_options,
    classify_status,
    parse_retry_after,
)
from firestore_outbox.publishers.http.answers import DownstreamAnswer
from firestore_outbox.publishers.http.curl import CurlFailure, Handles
from firestore_outbox.publishers.http.failures import describe
from firestore_outbox.publishers.http.routes import Routes


class HttpTransport:
    """POSTs through libcurl (`firestore_outbox.publishers.http.curl`: keep-alive, up to
    `pool_size` idle connections, no redirects, no retries of its own) and turns every
    outcome into a `PublishResult`.

    libcurl rather than urllib3 or `requests`: per POST, with 16 in flight, it spent a third
    of the CPU our transport over urllib3 and http.client did (docs/performance.md), and it
    gives by its public options the deadline and interim-answer handling that took patches of
    their internals. TLS is verified against certifi's bundle; the proxy `HTTP(S)_PROXY`
    names is used unless `NO_PROXY` exempts the host (`...http.routes`). Each attempt ends by
    its deadline: the earlier of the one it is given and `connect_timeout + read_timeout`
    from its start, over name lookup, connect, send and read; `read_timeout` also bounds each
    wait for the answer's bytes. At most `MAX_ANSWER_BYTES` of an answer are read. Every
    spelling of each string in `secrets` is replaced by `***` in error messages.
    """

    def __init__(
        self,
        *,
        connect_timeout: float,
        read_timeout: float,
        pool_size: int = 16,
        secrets: Iterable[str] = (),
    ) -> None:
        self._bound = connect_timeout + read_timeout
        self._handles = Handles(
            pool_size,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            ca_file=certifi.where(),
        )
        self._routes = Routes()
        self._mask = masker(secrets)

    @classmethod
    def for_publisher(cls, masked: Iterable[str], options: PublisherOptions) -> HttpTransport:
        """The transport a publisher built with `options` sends over: `masked` (its target's
        own secrets) and `options["secrets"]` never reach an error."""
        check_options(options)
        return cls(
            connect_timeout=options["connect_timeout"],
            read_timeout=options["read_timeout"],
            pool_size=options.get("pool_size", 16),
            secrets=[*masked, *options.get("secrets", ())],
        )

    def post(
        self,
        url: str,
        body: bytes,
        headers: dict[str, str],
        *,
        deadline: float | None = None,
        outcome_of: Callable[[DownstreamAnswer], Outcome] | None = None,
    ) -> PublishResult:
        """POST and classify: by status code, or by `outcome_of(answer)` when given."""
        answer = self.exchange(url, body, headers, deadline=deadline)
        if isinstance(answer, PublishResult):
            return answer
        outcome = (outcome_of or _by_status)(answer)
        if outcome is Outcome.DELIVERED:
            return PublishResult.delivered()
        return self.refusal(outcome, answer)

    def exchange(
        self, url: str, body: bytes, headers: dict[str, str], *, deadline: float | None = None
    ) -> DownstreamAnswer | PublishResult:
        """POST and hand back the answer whatever its status, or, when none came, the
        failure as a result (`post` classifies it; a batch target reads it entry by entry)."""
        bound = time.monotonic() + self._bound
        deadline = bound if deadline is None else min(deadline, bound)
        lines = [f"{name}: {value}" for name, value in headers.items()]
        head = "".join(lines)
        if "\r" in head or "\n" in head or "\0" in head:  # it would forge headers
            return self.failure(Outcome.REJECTED, "InvalidHeader: a header holds CR, LF or NUL")
        if "Content-Type" not in headers and all(n.lower() != "content-type" for n in headers):
            lines.append("Content-Type:")  # not libcurl's form-encoded one
        route = self._routes.route(url)
        try:
            pin = self._routes.addresses(route, deadline - time.monotonic())
        except (OSError, UnicodeError) as exc:  # in time or not, nothing reached the downstream
            return self.failure(Outcome.CHANNEL, f"ConnectionError: DNS: {route.host}: {exc}")
        left = deadline - time.monotonic()
        if left <= 0:
            return self.failure(Outcome.RETRY, "timeout: deadline: passed before sending")
        taken = self._handles.take()
        try:
            return taken[1].post(url, route, pin, body, lines, left)
        except CurlFailure as exc:
            if time.monotonic() >= deadline:  # whatever broke, the deadline is why
                return self.failure(Outcome.RETRY, f"timeout: deadline: {exc}")
            return self.failure(*describe(exc.code, exc.message, sent=exc.sent))
        finally:
            self._handles.give_back(taken)

    def refusal(self, outcome: Outcome, answer: DownstreamAnswer) -> PublishResult:
        """`outcome` for `answer`, its status and excerpt as the (masked) error."""
        retry_after = parse_retry_after(answer.headers.get("Retry-After"))
        error = f"HTTP {answer.status}" + (f": {answer.excerpt}" if answer.excerpt else "")
        return self.failure(outcome, error, retry_after)

    def close(self) -> None:
        """Close every kept-alive connection (the transport opens new ones if used again)."""
        self._handles.close()

    def failure(
        self, outcome: Outcome, error: str, retry_after: float | None = None
    ) -> PublishResult:
        """`outcome` with `error` bounded and every secret masked."""
        return PublishResult(outcome, bounded_error(error, self._mask), retry_after)


def _by_status(answer: DownstreamAnswer) -> Outcome:
    return classify_status(answer.status)
