"""`publisher_for`: the publisher the configuration names, built with its timeouts."""

from __future__ import annotations

from app.errors import ConfigError
from app.logs import configured_secrets
from app.relay.config import RelayConfig
from app.relay.http import HttpPublisher
from app.relay.publishers import Publisher
from app.signing import Signer


def publisher_for(config: RelayConfig) -> Publisher:
    """The publisher `config.publisher` names, with the configured timeouts and pool."""
    connect, read, pool = (
        config.connect_timeout_seconds,
        config.http_timeout_seconds,
        config.concurrency,
    )
    signer = Signer(config.signing_secrets) if config.signing_secrets else None
    # A downstream may echo anything back in an error body, and errors become `lastError`:
    # every secret this process knows is masked there, as in the logs.
    secrets = [*configured_secrets(), *config.signing_secrets]
    if config.publisher in ("mns", "eventbridge", "rocketmq"):
        from app.relay.message_services import message_service_publisher

        return message_service_publisher(config, signer, secrets)
    if config.publisher != "fc":
        url = str(config.downstream_url)
        return HttpPublisher(
            url,
            connect_timeout=connect,
            read_timeout=read,
            pool_size=pool,
            signer=signer,
            secrets=secrets,
        )
    try:
        from app.relay.fc import FcPublisher, FcTarget
    except ImportError as exc:
        raise ConfigError(
            f"RELAY_PUBLISHER=fc needs aliyun-fc2: pip install 'firestore-outbox[fc]' ({exc})"
        ) from None
    target = FcTarget(
        endpoint=str(config.fc_endpoint),
        service=str(config.fc_service),
        function=str(config.fc_function),
        qualifier=config.fc_qualifier,
        asynchronous=config.fc_invocation_type == "async",
        access_key_id=str(config.access_key_id),
        access_key_secret=str(config.access_key_secret),
        security_token=config.security_token,
    )
    return FcPublisher(
        target,
        connect_timeout=connect,
        read_timeout=read,
        pool_size=pool,
        signer=signer,
        secrets=secrets,
    )
