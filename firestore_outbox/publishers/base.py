"""What a publisher is given, what it answers, and the wire rules every publisher shares."""

from __future__ import annotations

import datetime
import email.utils
import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypedDict
from urllib.parse import quote

from firestore_outbox.masking import (
    REDACTED as REDACTED,  # re-exported: older imports name it here
)
from firestore_outbox.masking import Masker, masker
from firestore_outbox.signing import REPLAY_ATTRIBUTE

if TYPE_CHECKING:
    from firestore_outbox.signing import Signer

MAX_ERROR_LENGTH = 500


@dataclass(frozen=True)
class Delivery:
    """One event on its way downstream."""

    event_id: str
    event_type: str
    source: str
    subject: str
    time: str  # RFC 3339
    body: bytes  # JSON
    attempt: int  # 1 for the first attempt
    # `time.monotonic()` by which the attempt must be over, answer read or given up: the
    # relay sets it from its run's budget and the event's lease; None means no bound.
    deadline: float | None = None
    # The publish span's W3C trace context (`firestore_outbox.observability.tracing`): the
    # CloudEvents distributed-tracing
    # extension. Not signed: a consumer only uses it to continue the trace.
    traceparent: str | None = None
    tracestate: str | None = None
    # The re-drive job that sends it again (`firestore_outbox.redrive`), None for a live
    # delivery: the signed `outboxreplay` extension attribute.
    replay: str | None = None

    def trace_fields(self) -> dict[str, str]:
        """`traceparent` and `tracestate`, those that are set."""
        fields = {"traceparent": self.traceparent, "tracestate": self.tracestate}
        return {name: value for name, value in fields.items() if value}


class Outcome(enum.Enum):
    """What one publish came to, which decides the event's next state (the wire table)."""

    DELIVERED = "delivered"
    RETRY = "retry"  # may succeed later: timeout, connection error, 408/425/429/5xx
    REJECTED = "rejected"  # will never be accepted as it is: 400, 409, 413, 415, 422, ...
    # The channel is broken, not the event (401, 403, 404, 405 from the endpoint, DNS, TLS or
    # connect failures): the event is handed back without spending an attempt, and a few in a
    # row stop the run (the relay's circuit breaker).
    CHANNEL = "channel"


@dataclass(frozen=True)
class PublishResult:
    """What a publisher answers for one event: its `Outcome`, a bounded error text free of
    secrets, and the seconds the target asked to wait (`Retry-After`); publishers answer, never
    raise."""

    outcome: Outcome
    error: str | None = None  # bounded, free of secrets
    retry_after: float | None = None  # seconds the downstream asked us to wait

    @classmethod
    def delivered(cls) -> PublishResult:
        return cls(Outcome.DELIVERED)


class _Timeouts(TypedDict):
    connect_timeout: float
    read_timeout: float


class PublisherOptions(_Timeouts, total=False):
    """What every publisher is built with (`firestore_outbox.publishers.registry` makes it once from
    the
    configuration): an attempt's connect and read timeouts, the connection pool's size
    (default 16), the signer of deliveries (default none) and more secrets to mask in errors."""

    pool_size: int
    signer: Signer | None
    secrets: Iterable[str]


def check_options(options: PublisherOptions) -> None:
    """`TypeError` for a name `PublisherOptions` does not have, as a misspelled keyword
    argument would raise: callers that mypy does not check (tests, benchmarks) pass them."""
    known = PublisherOptions.__required_keys__ | PublisherOptions.__optional_keys__
    unknown = options.keys() - known
    if unknown:
        raise TypeError(f"unexpected publisher options: {', '.join(sorted(unknown))}")


class Publisher(Protocol):
    """A delivery target: `publish` answers with a `PublishResult` and never raises."""

    def publish(self, delivery: Delivery) -> PublishResult:
        """Send one event; answer instead of raising, whatever the downstream does."""
        ...


def cloudevent_attributes(delivery: Delivery) -> dict[str, str]:
    """The CloudEvents attributes of a delivery, as values (what `firestore_outbox.signing` signs,
    which
    leaves the distributed-tracing extension's `traceparent`/`tracestate` out)."""
    return {
        "specversion": "1.0",
        "id": delivery.event_id,
        "type": delivery.event_type,
        "source": delivery.source,
        "subject": delivery.subject,
        "time": delivery.time,
        "datacontenttype": "application/json",
        **delivery.trace_fields(),
        **({REPLAY_ATTRIBUTE: delivery.replay} if delivery.replay else {}),
    }


def cloudevent_headers(delivery: Delivery) -> dict[str, str]:
    """CloudEvents 1.0 HTTP binary mode, plus `Idempotency-Key`; every value encoded by
    `header_value`, so any id, type or subject travels and comes back as it was; a replay
    carries `ce-outboxreplay: <job id>`. The trace
    context travels as the W3C `traceparent`/`tracestate` headers, as the CloudEvents
    distributed-tracing extension says for binary mode."""
    return {
        **delivery.trace_fields(),
        "Content-Type": "application/json",
        "ce-specversion": "1.0",
        "ce-id": header_value(delivery.event_id),
        "ce-type": header_value(delivery.event_type),
        "ce-source": header_value(delivery.source),
        "ce-time": header_value(delivery.time),
        "ce-subject": header_value(delivery.subject),
        "Idempotency-Key": header_value(delivery.event_id),
        **({f"ce-{REPLAY_ATTRIBUTE}": header_value(delivery.replay)} if delivery.replay else {}),
    }


# The CloudEvents HTTP binding (1.0, section 3.1.3.2): printable ASCII travels as itself,
# except space, `"` and `%`; everything else as `%XX` of its UTF-8 bytes.
_HEADER_SAFE = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in ' "%')
_NEEDS_ENCODING = re.compile(r'[^\x21-\x7e]|["%]')


def header_value(value: str) -> str:
    """`value` percent-encoded as the CloudEvents HTTP binding says (a no-op for the usual
    ids and types): a control or non-Latin-1 character would break the request."""
    if not _NEEDS_ENCODING.search(value):
        return value  # the usual case, and the cheap one
    # surrogatepass: a lone surrogate cannot be stored by Firestore, but must not crash here.
    return quote(value.encode("utf-8", "surrogatepass"), safe=_HEADER_SAFE)


_RETRIED_STATUSES = frozenset({408, 425, 429})
# The endpoint refuses us or is not there: the channel is broken, not the event.
_CHANNEL_STATUSES = frozenset({401, 403, 404, 405})


def classify_status(status: int) -> Outcome:
    """2xx delivered; 408, 425, 429 and 5xx retried; 401, 403, 404, 405 the channel's fault;
    any other 4xx rejected.

    Anything else (1xx, 3xx: the relay follows no redirect) is retried, so an unexpected answer
    costs attempts but never drops an event unseen.
    """
    if 200 <= status < 300:
        return Outcome.DELIVERED
    if status in _CHANNEL_STATUSES:
        return Outcome.CHANNEL
    if 400 <= status < 500 and status not in _RETRIED_STATUSES:
        return Outcome.REJECTED
    return Outcome.RETRY


def parse_retry_after(value: str | None, now: datetime.datetime | None = None) -> float | None:
    """Seconds from a `Retry-After` header (delta-seconds or an HTTP date); None if unusable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return max(0.0, (moment - now).total_seconds())


def error_class(result: PublishResult) -> str:
    """A short, stable name for why a delivery failed, to group and count failures by:
    `HTTP 503`, `timeout`, an exception class such as `ConnectionError`, or the outcome."""
    error = result.error or ""
    match = re.match(r"(HTTP \d{3}|timeout|[A-Za-z_][\w.]*(?=:))", error)
    return match.group(1) if match else result.outcome.value


def bounded_error(text: str, secrets: Iterable[str] | Masker = ()) -> str:
    """One line of at most `MAX_ERROR_LENGTH` characters with every secret, in every
    spelling (`firestore_outbox.masking.Masker`), replaced."""
    mask = secrets if isinstance(secrets, Masker) else masker(secrets)
    text = mask(text)
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) > MAX_ERROR_LENGTH:
        text = text[: MAX_ERROR_LENGTH - 3] + "..."
    return text
