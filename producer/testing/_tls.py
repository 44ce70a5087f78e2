"""TLS for the dev cluster: a throwaway CA and a certificate for the loopback names.

``DevCluster(tls=True)`` makes them at start with ``trustme`` (the ``tls`` extra); the
cluster then serves TLS on the name server and every broker, and
``cluster.client_ssl_context()`` is a context that trusts that CA. ``tls=`` may also be
a server ``ssl.SSLContext`` of your own (then you know which CA your clients trust).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

#: The names the generated certificate is valid for: what a client on this host dials.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class ServerTls:
    """The server context, and the CA's PEM when we generated it (``None`` otherwise)."""

    context: ssl.SSLContext
    ca_pem: bytes | None = None

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts this cluster's CA (hostnames checked)."""
        if self.ca_pem is None:
            raise RuntimeError(
                "this cluster serves TLS with a context you passed: build the client's "
                "context from the CA you signed its certificate with"
            )
        return ssl.create_default_context(cadata=self.ca_pem.decode("ascii"))


def server_tls(tls: bool | ssl.SSLContext) -> ServerTls | None:
    """``DevCluster``'s ``tls=`` option as what its listeners serve."""
    if tls is False:
        return None
    if isinstance(tls, ssl.SSLContext):
        return ServerTls(tls)
    if tls is not True:
        raise TypeError(f"tls must be a bool or an ssl.SSLContext, got {type(tls).__name__}")
    try:
        import trustme
    except ModuleNotFoundError as exc:
        raise ImportError(
            "the dev cluster's generated TLS certificate needs trustme: pip install "
            '"rocketmq-aio-producer[tls]" (or pass tls= your own ssl.SSLContext)'
        ) from exc
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*LOOPBACK_NAMES).configure_cert(context)
    return ServerTls(context, ca.cert_pem.bytes())
