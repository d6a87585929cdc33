"""pika's connection parameters for the broker URL, its name looked up within the attempt's
deadline.

pika looks a name up on a thread of its own per connection attempt, which nothing bounds or
caps: a resolver that hangs would leave a thread behind for every attempt. Here the name is
looked up on the relay's shared, capped pool (`firestore_outbox.publishers.http.dns`) within the
time left, and pika is given the address; with TLS the certificate is still checked against the
name."""

from __future__ import annotations

import socket
import time

import pika

from firestore_outbox.publishers.amqp.link import LinkClosed
from firestore_outbox.publishers.http import dns


def parameters_for(url: str, connect_timeout: float, deadline: float) -> pika.URLParameters:
    """Parameters for one connection to `url` (built afresh: an SSL context cannot be copied),
    its socket and handshake bounded by `connect_timeout`; `LinkClosed` when the name does not
    resolve by `deadline` (`time.monotonic()`)."""
    parameters = pika.URLParameters(url)
    parameters.socket_timeout = connect_timeout
    parameters.stack_timeout = connect_timeout
    name = parameters.host
    try:  # an IP literal is answered at once, without a lookup
        left = max(0.0, deadline - time.monotonic())
        addresses = dns.resolve(name, parameters.port, socket.AF_UNSPEC, left)
    except OSError as exc:  # socket.gaierror, dns.ResolutionTimeout among them
        raise LinkClosed(f"DNS: {name}: {exc}", opened=False) from None
    parameters.host = addresses[0][4][0]
    if parameters.ssl_options is not None and parameters.host != name:
        parameters.ssl_options = pika.SSLOptions(
            parameters.ssl_options.context, server_hostname=name
        )
    return parameters
