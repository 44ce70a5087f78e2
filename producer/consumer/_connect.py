"""The connections a consumer-side client needs: a pool (serving broker requests with
``handler``), the one remoting door, routes from the name servers, and the broker API.
The push consumer and the dead-letter reader open them the same way."""

from __future__ import annotations

import os
import random
import ssl
from dataclasses import dataclass

from producer._client.clock import Clock
from producer._client.host import local_ipv4
from producer._client.remoting import RemotingClient
from producer._client.routes import RouteTable, parse_namesrv
from producer._remoting.acl import RequestSigner, signer_for
from producer._remoting.request_table import RequestHandler, not_supported
from producer._transport import ConnectionPool, Runtime
from producer._transport.base import client_tls
from producer._types.credentials import Credentials
from producer.consumer._broker_api import BrokerApi


@dataclass(frozen=True)
class Identity:
    """Who connects, and how."""

    group: str
    client_id: str
    namesrv_addrs: list[str]
    signer: RequestSigner | None
    tls: ssl.SSLContext | None
    connect_timeout_ms: float
    namespace: str | None = None  # the group above is already wrapped in it

    @classmethod
    def of_tool(
        cls,
        group: str,
        kind: str,
        namesrv: str | list[str],
        credentials: Credentials | None,
        ssl_option: bool | ssl.SSLContext | None,
        connect_timeout_ms: float,
        namespace: str | None = None,
    ) -> Identity:
        """A client that joins no group (a pull consumer, the DLQ reader): its id says
        ``kind`` and the process, as the Java tools' instance names do."""
        return cls(
            group,
            f"{local_ipv4()}@{kind}-{os.getpid()}",
            parse_namesrv(namesrv),
            signer_for(credentials),
            client_tls(ssl_option),
            connect_timeout_ms,
            namespace,
        )


async def open_api(
    runtime: Runtime,
    who: Identity,
    clock: Clock,
    rng: random.Random,
    handler: RequestHandler = not_supported,
) -> tuple[ConnectionPool, BrokerApi]:
    """An open pool (close it with ``__aexit__``) and the API over it."""
    pool = ConnectionPool(
        runtime.connector(ssl=who.tls, handler=handler),
        connect_timeout_ms=who.connect_timeout_ms,
    )
    await pool.__aenter__()
    client = RemotingClient(
        pool,
        clock,
        connect_timeout_ms=who.connect_timeout_ms,
        outgoing=() if who.signer is None else (who.signer,),
    )
    routes = RouteTable(who.namesrv_addrs, client, clock, rng, auto_create_topic=False)
    api = BrokerApi(
        group=who.group, client_id=who.client_id, client=client, routes=routes, clock=clock, rng=rng
    )
    api.namespace = who.namespace
    return pool, api
