"""Facts about this host and process that the sans-I/O core takes as parameters.

Kept out of ``producer._remoting`` because finding an address touches sockets and the
instance hash needs real randomness.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import threading

from producer._remoting.uniq_key import UniqKeyGenerator

# TEST-NET-1: "connecting" a UDP socket there only picks a route; no packet is sent.
_PROBE_ADDRESS = ("192.0.2.1", 9)
_per_thread = threading.local()


def local_ipv4() -> str:
    """This host's outward IPv4 address, like Java's ``UtilAll.getIP``; else 127.0.0.1.

    It ends up in ``UNIQ_KEY`` and the client id, where it only has to tell hosts apart.
    """
    for candidate in (_routed_address, _hostname_address):
        try:
            address = candidate()
        except OSError:
            continue
        if _is_usable(address):
            return address
    return "127.0.0.1"


def _routed_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(_PROBE_ADDRESS)
        return str(probe.getsockname()[0])


def _hostname_address() -> str:
    return socket.gethostbyname(socket.gethostname())


def _is_usable(address: str) -> bool:
    try:
        ip = ipaddress.IPv4Address(address)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_unspecified or ip.is_link_local)


def new_uniq_key_generator(ip: str | None = None) -> UniqKeyGenerator:
    """A generator with this process's ip and pid and a random instance hash."""
    instance_hash = int.from_bytes(os.urandom(4), "big")
    return UniqKeyGenerator(ip or local_ipv4(), os.getpid(), instance_hash)


def shared_uniq_key_generator() -> UniqKeyGenerator:
    """The generator of this thread in this process; producers sharing it never repeat an id.

    Java shares one atomic counter per JVM. Generators are not locked, so each thread gets
    its own, with its own random instance hash; a forked child gets a new one (same
    prefix and counter as the parent would repeat the parent's ids).
    """
    pid = os.getpid()
    current: tuple[int, UniqKeyGenerator] | None = getattr(_per_thread, "generator", None)
    if current is None or current[0] != pid:
        current = (pid, new_uniq_key_generator())
        _per_thread.generator = current
    return current[1]
