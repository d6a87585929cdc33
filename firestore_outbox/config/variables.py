"""Every environment variable the code reads: its default and its meaning.

The documentation's configuration page is generated from this table (docs/hooks/reference.py),
and `tests/unit/test_docs.py` checks that every variable the code reads is on that page, so a
variable added to a settings class without a row here fails the build and the test. Text is
Markdown (links are relative to the page, `reference/configuration.md`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["VARIABLES", "Variable"]


@dataclass(frozen=True)
class Variable:
    """One row of the configuration page: the variable(s) it names, the default, the meaning."""

    names: str
    default: str
    meaning: str

    def variables(self) -> frozenset[str]:
        """The variable names this row documents."""
        return frozenset(re.findall(r"`([A-Z][A-Z0-9_]+)[`=]", self.names))


VARIABLES: tuple[Variable, ...] = (
    Variable(
        "`FIRESTORE_PROJECT_ID`",
        "none",
        "project id; required outside the emulator unless a service-account key names one",
    ),
    Variable(
        "`FIRESTORE_DATABASE`",
        "`(default)`",
        "database id",
    ),
    Variable(
        "`FIRESTORE_EMULATOR_HOST`",
        "unset",
        "`host:port` of the emulator; no credentials needed then",
    ),
    Variable(
        "`FIRESTORE_CREDENTIALS_PATH` / `FIRESTORE_CREDENTIALS_JSON`",
        "unset",
        "service-account key as a file path or as JSON text; set one. Either also takes any "
        "other credentials file `GOOGLE_APPLICATION_CREDENTIALS` takes; both come before it",
    ),
    Variable(
        "`GOOGLE_APPLICATION_CREDENTIALS`",
        "unset",
        "path of any credentials file google-auth loads: a service-account key, an "
        "`external_account` configuration (Workload Identity Federation, no key: "
        "[the keyless route](../deploying.md#keyless-credentials-workload-identity-federation)), "
        "`authorized_user`, `external_account_authorized_user`, "
        "`impersonated_service_account`. Read only when neither `FIRESTORE_CREDENTIALS_` "
        "variable is set; only a service-account key names the project, so set "
        "`FIRESTORE_PROJECT_ID` with the others",
    ),
    Variable(
        "`FIRESTORE_TIMEOUT_SECONDS`",
        "`10`",
        (
            "how long each Firestore call of `outbox status`, `inspect`, `requeue`, `purge`, "
            "`reconcile` and of a unit of work's commit (`create_new_order`) may take, "
            "retries included. An unreachable Firestore ends a command in one line, `error: "
            "Firestore at HOST did not answer within N s (...)`, exit status 1; a commit "
            "raises `CommitOutcomeUnknown` naming the host and the deadline (its read-back "
            "shares the deadline, with at least a quarter of it). The relay uses "
            "`RELAY_FIRESTORE_TIMEOUT_SECONDS`"
        ),
    ),
    Variable(
        "`ORDERS_COLLECTION`, `OUTBOX_COLLECTION`",
        "`orders`, `outbox`",
        (
            "collection names (must differ). The outbox's own collections are named after "
            "`OUTBOX_COLLECTION`: `{OUTBOX_COLLECTION}_partitions`, `_partitions_mode`, "
            "`_health`, `_redrive` (see [Documents](../concepts/documents.md))"
        ),
    ),
    Variable(
        "`DOWNSTREAM_SERVICE_URL`",
        "none (the relay needs it)",
        (
            "where the relay POSTs each event; `http://` or `https://`. User info "
            "(`https://user:password@host/...`, percent-encoded) is sent as HTTP Basic "
            "authentication (before, it was silently dropped)"
        ),
    ),
    Variable(
        "`RELAY_MAX_ATTEMPTS`",
        "`5`",
        "attempts before an event becomes `FAILED`",
    ),
    Variable(
        "`RELAY_LOCK_TIMEOUT_SECONDS`",
        "`300`",
        ("a `PROCESSING` lease older than this is taken back; at least twice the longest attempt"),
    ),
    Variable(
        "`RELAY_BACKOFF_BASE_SECONDS`",
        "`10`",
        "smallest delay between attempts",
    ),
    Variable(
        "`RELAY_BACKOFF_MAX_SECONDS`",
        "`900`",
        "largest delay between attempts, `Retry-After` included",
    ),
    Variable(
        "`RELAY_BATCH_SIZE`",
        "`250`",
        (
            "events leased per batch (at most 500), and with partition leases at most this "
            "many sent and not settled; with `RELAY_LEASES=event`, the follow "
            "mode's listener window too, capped at 50 (with partition leases the window is 50"
            " whatever this is)"
        ),
    ),
    Variable(
        "`RELAY_CONCURRENCY`",
        "`16`",
        "publishes in flight at once",
    ),
    Variable(
        "`RELAY_BREAKER_THRESHOLD`",
        "`3`",
        (
            "channel failures in a row (401, 403, 404, 405, DNS/TLS/connect) after which a "
            "run stops and releases what it leased (the circuit breaker)"
        ),
    ),
    Variable(
        "`RELAY_TIME_BUDGET_SECONDS`",
        "`50`",
        (
            "how long one invocation keeps draining (the timer fires every minute); at least "
            "one attempt (`RELAY_HTTP_TIMEOUT_SECONDS`, its connect timeout and 0.5 s)"
        ),
    ),
    Variable(
        "`RELAY_FOLLOW_POLL_SECONDS`",
        "`10`",
        (
            "`outbox relay --follow` only: how often it re-reads due events and looks for "
            "abandoned leases, and the longest it waits without news from its listener"
        ),
    ),
    Variable(
        "`RELAY_HTTP_TIMEOUT_SECONDS`",
        "`10`",
        "read timeout of a delivery; connect timeout is the smaller of this and 5 s",
    ),
    Variable(
        "`RELAY_FIRESTORE_TIMEOUT_SECONDS`",
        "`10`",
        "time limit of each Firestore call of the relay, retries included",
    ),
    Variable(
        "`OUTBOX_RETENTION_SECONDS`",
        "`604800` (7 days)",
        (
            "how long a `PROCESSED` event is kept: the relay sets `expireAt` to its delivery "
            "time plus this, for a TTL policy; the default of `outbox purge`; `0` keeps "
            "events for ever"
        ),
    ),
    Variable(
        "`RELAY_EVENT_SOURCE`",
        "the collection's resource name",
        "CloudEvents `ce-source`",
    ),
    Variable(
        "`RELAY_SIGNING_SECRET`",
        "unset",
        (
            "when set, every delivery is signed (Standard Webhooks: `webhook-id`, "
            "`webhook-timestamp`, `webhook-signature`, see [Consuming "
            "events](../consuming.md)); several comma-separated secrets during a rotation, "
            "each `whsec_<base64>` or at least 16 characters"
        ),
    ),
    Variable(
        "`RELAY_PUBLISHER`",
        "`http`",
        (
            "`http` (POST to `DOWNSTREAM_SERVICE_URL`), `fc` (invoke a Function Compute "
            "function), `fc3` (invoke a Function Compute 3.0 function, once per event), "
            "`amqp` (see [Brokers and functions](../publishers/amqp.md)), `mns`, "
            "`eventbridge`, `rocketmq` (see [Message services](../publishers/index.md)), "
            "`kafka` (see [Kafka](../publishers/kafka.md))"
        ),
    ),
    Variable(
        "`RELAY_KAFKA_BOOTSTRAP_SERVERS`, `RELAY_KAFKA_TOPIC`",
        "none (`kafka` needs both)",
        (
            "`host:port` of the brokers (comma-separated, each port 1-65535, IPv6 in brackets) "
            "and the topic; each event is one message keyed by its aggregate id, with "
            "CloudEvents Kafka binding headers"
        ),
    ),
    Variable(
        "`RELAY_KAFKA_SECURITY_PROTOCOL`",
        "`PLAINTEXT`",
        (
            "`PLAINTEXT`, `SASL_PLAINTEXT` or `SASL_SSL` (ApsaraMQ for Kafka's internet "
            "endpoint: `SASL_SSL` on port 9093)"
        ),
    ),
    Variable(
        "`RELAY_KAFKA_SASL_MECHANISM`, `RELAY_KAFKA_USERNAME`, `RELAY_KAFKA_PASSWORD`",
        "unset (`SASL_*` needs all three)",
        (
            "`PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`, the SASL user and its password "
            "(masked like every secret)"
        ),
    ),
    Variable(
        "`RELAY_KAFKA_CA_FILE`",
        "the system's CA certificates",
        (
            "PEM file of the CA that signed the brokers' certificates (ApsaraMQ's CA), with "
            "`SASL_SSL` only; checked at start to hold PEM certificates"
        ),
    ),
    Variable(
        "`RELAY_KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM`",
        "`https`",
        (
            "librdkafka's setting of that name: `https` checks the broker's host name against "
            "its certificate, `none` the CA only (see [Kafka](../publishers/kafka.md#tls-and-"
            "the-host-name-check))"
        ),
    ),
    Variable(
        "`RELAY_ROCKETMQ_ENDPOINTS`, `RELAY_ROCKETMQ_TOPIC`",
        "none (`rocketmq` needs both)",
        ("`host:port` of the RocketMQ 5.x gRPC proxy (several separated by `;`) and the topic"),
    ),
    Variable(
        "`RELAY_ROCKETMQ_FIFO`, `RELAY_ROCKETMQ_TLS`",
        "`false`",
        ("`true` for a FIFO topic (message group = aggregate id); `true` for TLS to the proxy"),
    ),
    Variable(
        ("`RELAY_ROCKETMQ_NAMESPACE`, `RELAY_ROCKETMQ_ACCESS_KEY`, `RELAY_ROCKETMQ_SECRET_KEY`"),
        "unset",
        ("the instance's namespace, user name and password (the last masked like every secret)"),
    ),
    Variable(
        "`RELAY_FC_ENDPOINT`, `RELAY_FC_SERVICE`, `RELAY_FC_FUNCTION`",
        "none (`fc` needs them)",
        "`https://ACCOUNT_ID.REGION.fc.aliyuncs.com`, the service and function to invoke",
    ),
    Variable(
        "`RELAY_FC_ENDPOINT`, `RELAY_FC_FUNCTION` with `RELAY_PUBLISHER=fc3`",
        "none (`fc3` needs both)",
        (
            "the endpoint and the FC 3.0 function to invoke; `RELAY_FC_QUALIFIER` its version"
            " or alias; `RELAY_FC_INVOCATION_TYPE` must stay `async`; signed with the "
            "`ALIBABA_CLOUD_*` credentials"
        ),
    ),
    Variable(
        "`RELAY_FC_QUALIFIER`",
        "unset",
        "version or alias of the service",
    ),
    Variable(
        "`RELAY_FC_INVOCATION_TYPE`",
        "`async`",
        "`async` or `sync`",
    ),
    Variable(
        "`RELAY_MNS_ENDPOINT`, `RELAY_MNS_QUEUE` or `RELAY_MNS_TOPIC`",
        "none (`mns` needs the endpoint and one of the two)",
        (
            "`https://ACCOUNT_ID.mns.REGION.aliyuncs.com`; the queue (batched sends) or topic"
            " to publish to (see [Message services](../publishers/index.md))"
        ),
    ),
    Variable(
        "`RELAY_EVENTBRIDGE_ENDPOINT`, `RELAY_EVENTBRIDGE_BUS`",
        "none (`eventbridge` needs both)",
        ("`https://ACCOUNT_ID.eventbridge.REGION.aliyuncs.com` and the event bus to put events on"),
    ),
    Variable(
        "`RELAY_AMQP_URL`",
        "none (`amqp` needs it)",
        "`amqp://user:password@host:5672/vhost` or `amqps://...` (vhost `/` is `%2F`)",
    ),
    Variable(
        "`RELAY_AMQP_EXCHANGE`",
        "the default exchange",
        "the exchange each event is published to",
    ),
    Variable(
        "`RELAY_AMQP_ROUTING_KEY`",
        "each event's type",
        "the routing key of every message",
    ),
    Variable(
        (
            "`ALIBABA_CLOUD_ACCESS_KEY_ID`, `ALIBABA_CLOUD_ACCESS_KEY_SECRET`, "
            "`ALIBABA_CLOUD_SECURITY_TOKEN`"
        ),
        "unset",
        (
            "credentials that sign `fc` and `fc3` invocations and `mns`, `eventbridge` "
            "requests; Function Compute sets them for a function with a role"
        ),
    ),
    Variable(
        "`INBOX_COLLECTION`",
        "`inbox`",
        (
            "the consumers' inbox records (`firestore_outbox.consumer.inbox`, the reference "
            "receiver)"
        ),
    ),
    Variable(
        "`RECEIVER_SIGNING_SECRET`",
        "none (the receiver needs it unless `--no-verify`)",
        (
            "`outbox receiver`: the secret(s) deliveries must be signed with (the same "
            "forms), comma-separated during a rotation"
        ),
    ),
    Variable(
        "`RECEIVER_SIGNATURE_TOLERANCE_SECONDS`",
        "`300`",
        ("`outbox receiver`: how far a signature's timestamp may be from the receiver's clock"),
    ),
    Variable(
        "`RECEIVER_CONSUMER`",
        "`order-counter`",
        "`outbox receiver`: its consumer name in inbox keys",
    ),
    Variable(
        "`RECEIVER_COUNTS_COLLECTION`",
        "`order_counts`",
        "`outbox receiver`: where it counts orders per customer",
    ),
    Variable(
        "`IDEMPOTENCY_COLLECTION`",
        "`idempotency_keys`",
        "the order API's key records (give it a TTL policy on `expireAt`)",
    ),
    Variable(
        "`IDEMPOTENCY_TENANT_HEADER`",
        "`X-Tenant-Id`",
        "the header naming a key's tenant",
    ),
    Variable(
        "`IDEMPOTENCY_TTL_SECONDS`",
        "`86400`",
        "how long a key and its answer are kept; after that the key may be reused",
    ),
    Variable(
        "`IDEMPOTENCY_LOCK_TIMEOUT_SECONDS`",
        "`60`",
        (
            "after this long on Firestore's clock a request that never finished loses its key"
            " to the next repeat; more than the longest request, less than the TTL"
        ),
    ),
    Variable(
        "`IDEMPOTENCY_MAX_RESPONSE_BYTES`",
        "`262144`",
        "largest answer body stored for replay (at most 524288)",
    ),
    Variable(
        "`IDEMPOTENCY_MAX_REQUEST_BYTES`",
        "`1048576`",
        (
            "largest request body read for a keyed request (`413` beyond); `outbox api` "
            "refuses any larger request before reading it"
        ),
    ),
    Variable(
        "`IDEMPOTENCY_ENCRYPTION_KEYS`",
        "unset",
        (
            "`keyId:base64key,...` (16, 24 or 32 bytes): stored answers encrypted with "
            "AES-GCM; the first encrypts, all decrypt; never logged"
        ),
    ),
    Variable(
        "`RELAY_LEASES`",
        "`partition`",
        (
            "`partition`: invocations lease partitions and settle each event with one write, "
            "in per-aggregate order; `event`: the per-event leases of 0.2 (see [The "
            "relay](../concepts/relay.md))"
        ),
    ),
    Variable(
        "`RELAY_PARTITIONS`",
        "`16`",
        (
            "how many partitions events are spread over (SHA-256 of `aggregateId`); writers "
            "and relays must agree; change only as [Partitions](../concepts/partitions.md) "
            "says"
        ),
    ),
    Variable(
        "`RELAY_PARTITIONS_PER_CLAIM`",
        "`4`",
        "partitions one invocation claims at a time",
    ),
    Variable(
        "`RELAY_PARTITION_COLLECTION`",
        "`{OUTBOX_COLLECTION}_partitions` (`outbox_partitions`)",
        (
            "the partition lease documents; the relays' lease-mode records go to this name + "
            "`_mode`. Derived from `OUTBOX_COLLECTION` unless set (before 0.7 always "
            "`outbox_partitions`; see [Upgrading](../upgrading.md))"
        ),
    ),
    Variable(
        "`RELAY_FAN_OUT_MAX`",
        "`0` (off)",
        (
            "Function Compute only: how many more relay invocations one timer invocation may "
            "start for a large backlog (see [Deploy](../deploying.md))"
        ),
    ),
    Variable(
        "`RELAY_FAN_OUT_EVENTS`",
        "`2000`",
        ("open events one invocation is expected to drain; fan-out starts one more per this many"),
    ),
    Variable(
        "`RELAY_FAN_OUT_ENDPOINT`, `RELAY_FAN_OUT_FUNCTION`",
        "none (fan-out needs them)",
        (
            "the relay function itself, invoked asynchronously with the `ALIBABA_CLOUD_*` "
            "credentials through FC 3.0's API"
        ),
    ),
    Variable(
        "`RELAY_FAN_OUT_SERVICE`",
        "none",
        (
            "only for a relay deployed as an FC 2.0 function: its service; fan-out then uses "
            "FC 2.0's API"
        ),
    ),
    Variable(
        "`RELAY_RAMP`",
        "`off`",
        (
            "`on`: pace the relay's Firestore reads and settle writes to Firestore's 500/50/5"
            " ramp-up rule (see [Staying within Firestore's ramp-up "
            "rule](../performance.md#staying-within-firestores-ramp-up-rule))"
        ),
    ),
    Variable(
        "`RELAY_RAMP_RATE`",
        "`500`",
        (
            "operations per second the ramp starts at (shared equally by `1 + "
            "RELAY_FAN_OUT_MAX` invocations)"
        ),
    ),
    Variable(
        "`RELAY_RAMP_STEP_SECONDS`",
        "`300`",
        "the ramp allows 50% more after each step of this many seconds",
    ),
    Variable(
        "`RELAY_ORDERING`",
        "`aggregate` (`none` with `RELAY_LEASES=event`)",
        (
            "`aggregate`: one aggregate's events in commit order, then batch order; `none`: "
            "no order. Per-event leases do not order: `aggregate` with `RELAY_LEASES=event` "
            "is refused"
        ),
    ),
    Variable(
        "`RELAY_FAILED_HEAD`",
        "`hold`",
        (
            "`hold`: a FAILED event holds its aggregate's later events until requeued or "
            "released (`outbox held`); `skip`: they go on"
        ),
    ),
    Variable(
        "`OUTBOX_NUDGE`",
        "`off`",
        (
            "the fast path ([the fast path](../concepts/fast-path.md)): after a commit of "
            "outbox events, nudge the relay: `fc3` (async `InvokeFunction` of the relay "
            "function, fan-out's `RELAY_FAN_OUT_ENDPOINT`/`_FUNCTION` and AccessKey), `http` "
            "(POST to `OUTBOX_NUDGE_URL`), `process` (drain in the committing process); never "
            "fails or slows a commit. Set it on the relay function too: a relay with nudges "
            "on reads each partition it releases once more (one read)"
        ),
    ),
    Variable(
        "`OUTBOX_NUDGE_URL`",
        "none (`OUTBOX_NUDGE=http` needs it)",
        (
            "where `OUTBOX_NUDGE=http` POSTs its nudge: the URL of the relay function's HTTP "
            "trigger (`firestore_outbox.function_compute.http_handler`)"
        ),
    ),
    Variable(
        "`OUTBOX_NUDGE_SECRET`",
        "none (`OUTBOX_NUDGE=http` needs it)",
        (
            "signs every `http` nudge (Standard Webhooks headers); the HTTP-triggered relay "
            "function refuses a nudge not signed with it (401) and every request while it is "
            "unset (503). The same value on producers and that function: `whsec_<base64>` or "
            "at least 16 characters, comma-separated during a rotation (a secret)"
        ),
    ),
    Variable(
        "`OUTBOX_CONSOLE_TOKEN`",
        "unset",
        (
            "`outbox console`: required of every request when set, and to listen beyond "
            "127.0.0.1 (at least 16 characters; see [the console](../console.md))"
        ),
    ),
    Variable(
        "`OUTBOX_HEALTH_COLLECTION`",
        "`{OUTBOX_COLLECTION}_health` (`outbox_health`)",
        (
            "where the relay's heartbeat (documents `relay-0` .. `relay-7`) and the watchdog's "
            "incidents (`watchdog`) live (see [Watchdog and health](../watchdog.md)). Derived "
            "from `OUTBOX_COLLECTION` unless set (before 0.7 always `outbox_health`)"
        ),
    ),
    Variable(
        "`RELAY_HEARTBEAT_SECONDS`",
        "`15`",
        "a relay writes its heartbeat at most this often, unless what it reports changed",
    ),
    Variable(
        "`WATCHDOG_STALE_SECONDS`, `WATCHDOG_PENDING_AGE_SECONDS`, `WATCHDOG_STUCK_SECONDS`",
        "`300`, `600`, `60`",
        (
            "the watchdog's and the console's thresholds: no heartbeat for this long (the relay "
            "stopped); the oldest due event has waited this long; a lease held this long past "
            "its expiry"
        ),
    ),
    Variable(
        "`WATCHDOG_FAILED_GROWTH`, `WATCHDOG_WINDOW_SECONDS`",
        "`1`, `900`",
        "this many events became FAILED within the window: an incident",
    ),
    Variable(
        "`WATCHDOG_WEBHOOK_URL`, `WATCHDOG_WEBHOOK_FORMAT`, `WATCHDOG_WEBHOOK_SECRET`",
        "unset, `json`, unset",
        (
            "where the watchdog posts alerts and recoveries: `json`, `dingtalk` or `lark` "
            "(a custom robot's message); the secret signs them (Standard Webhooks for `json`, "
            "each robot's signing otherwise). The URL and the secret are secrets"
        ),
    ),
    Variable(
        "`WATCHDOG_TIMEOUT_SECONDS`",
        "`5`",
        "the bound of each of a watchdog check's Firestore reads and writes and of its webhook",
    ),
    Variable(
        "`LOG_LEVEL`",
        "`INFO`",
        "`DEBUG` … `CRITICAL`",
    ),
    Variable(
        "`FIRESTORE_EMULATOR_LAUNCHER`",
        "found via `gcloud`",
        "development only: the emulator launcher script",
    ),
    Variable(
        (
            "`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SDK_DISABLED` (and the SDK's other `OTEL_*` "
            "variables)"
        ),
        "unset",
        (
            "read by OpenTelemetry's SDK (the `otel` extra); the relay reads these two "
            "itself: the headers' values are masked as secrets, and `OTEL_SDK_DISABLED=true` "
            "turns the export off (see [Exporting over "
            "OTLP](../observability.md#exporting-over-otlp-sls-and-arms))"
        ),
    ),
    Variable(
        "`SERVERLESS_DEVS_BIN`",
        "`s` on `PATH`",
        ("development only: the Serverless Devs CLI that `outbox fc preview` runs"),
    ),
)
