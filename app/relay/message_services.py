"""Building the message-service publishers (`mns`, `eventbridge`, `rocketmq`) from a
`RelayConfig`;
each SDK or wire module is imported only when its publisher is chosen."""

from __future__ import annotations

from collections.abc import Sequence

from app.errors import ConfigError
from app.relay.config import RelayConfig
from app.relay.publishers import Publisher
from app.signing import Signer


def message_service_publisher(
    config: RelayConfig, signer: Signer | None, secrets: Sequence[str]
) -> Publisher:
    """The publisher `config.publisher` names, with the configured timeouts and pool."""
    key_id, key_secret = str(config.access_key_id), str(config.access_key_secret)
    timeouts = (config.connect_timeout_seconds, config.http_timeout_seconds)
    if config.publisher == "mns":
        from app.relay.mns import MnsPublisher, MnsTarget

        target = MnsTarget(
            endpoint=str(config.mns_endpoint),
            queue=config.mns_queue or None,
            topic=config.mns_topic or None,
            access_key_id=key_id,
            access_key_secret=key_secret,
            security_token=config.security_token,
        )
        return MnsPublisher(
            target,
            connect_timeout=timeouts[0],
            read_timeout=timeouts[1],
            pool_size=config.concurrency,
            signer=signer,
            secrets=secrets,
        )
    if config.publisher == "eventbridge":
        try:
            from app.relay.eventbridge import EventBridgePublisher, EventBridgeTarget
        except ImportError as exc:
            raise ConfigError(
                "RELAY_PUBLISHER=eventbridge needs alibabacloud-eventbridge: "
                f"pip install 'firestore-outbox[eventbridge]' ({exc})"
            ) from None
        return EventBridgePublisher(
            EventBridgeTarget(
                endpoint=str(config.eventbridge_endpoint),
                bus=str(config.eventbridge_bus),
                access_key_id=key_id,
                access_key_secret=key_secret,
                security_token=config.security_token,
            ),
            connect_timeout=timeouts[0],
            read_timeout=timeouts[1],
            pool_size=config.concurrency,
            signer=signer,
            secrets=secrets,
        )
    if config.publisher == "rocketmq":
        return _rocketmq(config, signer, secrets)
    raise ValueError(f"not a message-service publisher: {config.publisher}")


def _rocketmq(config: RelayConfig, signer: Signer | None, secrets: Sequence[str]) -> Publisher:
    try:
        from app.relay.rocketmq import RocketMqPublisher, RocketMqTarget
    except ImportError as exc:
        raise ConfigError(
            "RELAY_PUBLISHER=rocketmq needs rocketmq-python-client: "
            f"pip install 'firestore-outbox[rocketmq]' ({exc})"
        ) from None
    except OSError as exc:  # the client makes ~/logs/rocketmq_python when it is imported
        raise ConfigError(
            f"RELAY_PUBLISHER=rocketmq: the RocketMQ client cannot write its log folder under "
            f"HOME; point HOME at a writable directory ({exc.strerror})"
        ) from None
    target = RocketMqTarget(
        endpoints=str(config.rocketmq_endpoints),
        topic=str(config.rocketmq_topic),
        fifo=config.rocketmq_fifo,
        tls=config.rocketmq_tls,
        namespace=config.rocketmq_namespace or "",
        access_key=config.rocketmq_access_key or "",
        secret_key=config.rocketmq_secret_key or "",
    )
    return RocketMqPublisher(
        target, timeout=config.http_timeout_seconds, signer=signer, secrets=secrets
    )
