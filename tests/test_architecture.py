"""The shape of the code, checked: layers import only downwards, the core is pure, and
every request leaves through one door.

Layers, lowest first: ``_remoting`` (with ``errors``) <- ``_transport`` <- ``_client`` <-
``_send`` <- the facade (``producer``, ``producer.blocking``) <- ``cli`` and ``spark``,
which use the public API only. The consumer's pure core ``_consume`` sits on
``_remoting``; its shell ``consumer`` on ``_client`` and ``_consume``. ``testing`` (the
dev cluster) may use the remoting core and the transport only. ``latency_fault`` is pure
and imports no SDK (so the remoting core may use its Java string hash).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SDK = ROOT / "producer"

# The SDK modules each layer may import (prefix match on the dotted name).
CORE = ("producer.errors", "producer._remoting")
ALLOWED: dict[str, tuple[str, ...]] = {
    "producer._remoting": (*CORE, "latency_fault"),  # pure, SDK-free: Java's string hash
    "producer.errors": ("producer._remoting.codes",),
    "producer._transport": (*CORE, "producer._transport"),
    "producer._client": (*CORE, "producer._transport", "producer._client", "latency_fault"),
    "producer._send": (
        *CORE,
        "producer._transport",
        "producer._client",
        "producer._send",
        "latency_fault",
    ),
    "producer._transactions": (
        *CORE,
        "producer._transport",
        "producer._client",
        "producer._send",
        "producer._consume",
        "producer._producer",
        "producer._transactions",
    ),
    "producer.testing": (*CORE, "producer._transport", "producer.testing", "latency_fault"),
    # The consumer: a pure core (``_consume``) under an I/O shell that shares the
    # producer's client; it needs only the result type of the send layer, never the facade.
    "producer._consume": (*CORE, "producer._consume"),
    "producer.consumer": (
        *CORE,
        "producer._transport",
        "producer._client",
        "producer._send.result",
        "producer._consume",
        "producer.consumer",
    ),
    "latency_fault": ("latency_fault",),
}
# Nothing below the CLI may import it, and nothing but the CLI (and Spark's report) rich.
NEVER_BELOW_CLI = ("producer.cli", "rich")
ON_TOP = ("producer.cli", "producer.__main__", "producer.spark")  # users of the public API

IMPURE = {"asyncio", "anyio", "trio", "sniffio", "socket", "time", "threading", "selectors"}
PURE_FILES = [
    *sorted((SDK / "_remoting").glob("*.py")),
    SDK / "_send" / "plan.py",
    SDK / "_send" / "retry_policy.py",
    *sorted((SDK / "_consume").glob("*.py")),
    *sorted((ROOT / "latency_fault").glob("*.py")),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(path: Path, source: str | None = None) -> Iterator[tuple[int, str]]:
    """Every absolute module name ``path`` imports, with its line (relative ones resolved)."""
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rsplit(".", 1)[0]
    text = path.read_text() if source is None else source
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                yield node.lineno, f"{base}.{node.module}" if node.module else base
            else:
                yield node.lineno, node.module or ""


def layer_of(name: str) -> str | None:
    matches = [layer for layer in ALLOWED if name == layer or name.startswith(layer + ".")]
    return max(matches, key=len) if matches else None


def sdk_files() -> list[Path]:
    return sorted([*SDK.rglob("*.py"), *(ROOT / "latency_fault").rglob("*.py")])


def violations(sources: dict[Path, str | None]) -> list[str]:
    found = []
    for path, source in sources.items():
        own = module_name(path)
        layer = layer_of(own)
        for line, name in imported(path, source):
            where = f"{path.relative_to(ROOT)}:{line} imports {name}"
            is_sdk = name.split(".")[0] in ("producer", "latency_fault")
            upward = layer is not None and is_sdk and not name.startswith(ALLOWED[layer])
            below_cli = not own.startswith(ON_TOP)
            private = not below_cli and name.startswith("producer._")  # public API only
            if upward or private or (below_cli and name.startswith(NEVER_BELOW_CLI)):
                found.append(where)
    return found


def test_layers_import_only_downwards() -> None:
    assert violations(dict.fromkeys(sdk_files())) == []


def test_every_package_has_a_layer() -> None:
    """A new package gets an entry (what it may import) or is a user of the public API."""
    packages = [p.parent for p in SDK.glob("*/__init__.py")]
    unplaced = [module_name(p) for p in packages if layer_of(module_name(p)) is None]
    unplaced = [name for name in unplaced if not name.startswith(ON_TOP)]
    assert unplaced == []


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("_remoting/frame.py", "from producer._send.plan import SendPlan"),
        ("_remoting/frame.py", "from .._client import routes"),
        ("_transport/pool.py", "import producer._client.routes"),
        ("testing/_broker.py", "from producer._send.result import SendResult"),
        ("errors.py", "from producer._remoting.frame import encode_frame"),
        ("_send/sender.py", "from producer.cli import main"),
        ("_producer.py", "import rich"),
        ("cli/send.py", "from producer._send.result import SendResult"),
        ("testing/_cluster.py", "from producer.cli.cluster import run_cluster_cli"),
        ("spark/_partition.py", "from producer._send.future import SendFuture"),
        ("_consume/decisions.py", "from producer._client.routes import RouteTable"),
        ("consumer/_dead_letters.py", "from producer._producer import Producer"),
        ("consumer/_broker_api.py", "from producer._send.sender import Sender"),
        ("_send/sender.py", "from producer.spark import publish"),
    ],
)
def test_the_layer_check_catches_an_upward_import(path: str, source: str) -> None:
    assert len(violations({SDK / path: source})) == 1


@pytest.mark.parametrize("path", PURE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_core_is_sans_io_and_reads_no_clock_or_global_random(path: Path) -> None:
    for line, name in imported(path):
        assert name.split(".")[0] not in IMPURE, f"{path.name}:{line} imports {name}"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "random":
            assert {a.name for a in node.names} <= {"Random"}, f"{path.name}:{node.lineno}"
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "random"
        ):
            assert node.attr == "Random", f"{path.name}:{node.lineno} uses random.{node.attr}"


DOOR = SDK / "_client" / "remoting.py"


def test_every_request_leaves_through_the_remoting_client() -> None:
    """Only the door (and the transport that implements it) touches a connection: calls
    its ``request`` / ``send_oneway`` or takes one from the pool. Signing or tracing every
    request needs that one place."""
    callers = []
    for path in sdk_files():
        if path == DOOR or "_transport" in path.parts or "testing" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            receiver = ast.unparse(node.func.value)
            takes_connection = node.func.attr in ("open_connection", "request") or (
                node.func.attr in ("get", "send_oneway") and "conn" in receiver.lower()
            )
            if takes_connection:
                callers.append(f"{path.relative_to(ROOT)}:{node.lineno} {receiver}")
    assert callers == []
