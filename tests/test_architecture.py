"""The shape of the code, checked: layers import only downwards, the core is pure, and
every request leaves through one door.

Layers, lowest first: ``_response_codes`` (the response-code table, importing nothing)
<- ``_types.attempt_record`` and ``_types.fate`` (what every error carries, importing no
SDK module) <- ``errors`` <- ``_types`` (the public value types) <- ``_remoting`` <-
``_types.consumer`` (the consumer side's value types: a received message decodes on first
read with the core's functions) <- ``_transport`` <- ``_client`` <-
``_send`` <- the facade (``producer``, ``producer.blocking``) <- ``cli`` and ``spark``,
which use the public API only. ``_lifecycle`` (``async with`` and the life-cycle state
of every client) imports only ``errors`` and its states' type, and may be used by every
layer that does I/O.
The consumer's pure core ``_consume`` sits on ``_remoting``; its shell ``consumer`` on
``_client`` and ``_consume``. ``testing`` (the dev cluster) may use the remoting core
and the transport only. ``latency_fault`` is pure and imports no SDK; it holds the one
Java string hash, which the layers above hand to the remoting core as a parameter (the
wire core imports no routing package). No module, and no layer, imports itself back through
others, and no SDK module is imported inside a function to get round that.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SDK = ROOT / "producer"

# The SDK modules each layer may import (prefix match on the dotted name).
# What every error carries: value types below the error tree (each its own layer).
CARRIED = ("producer._types.attempt_record", "producer._types.fate")
CORE = (
    "producer._response_codes",
    *CARRIED,
    "producer.errors",
    "producer._types",
    "producer._remoting",
)
CONSUMED = "producer._types.consumer"  # above the core: a prefix grants no layer nested in it
LIFECYCLE = "producer._lifecycle"
ALLOWED: dict[str, tuple[str, ...]] = {
    "producer._response_codes": (),
    # the wrong-state errors, made in one place, and the states' value type
    LIFECYCLE: ("producer.errors", "producer._types.lifecycle_state"),
    "producer._remoting": CORE,  # given Java's string hash as a parameter
    **dict.fromkeys(CARRIED, ()),
    "producer.errors": ("producer._response_codes", *CARRIED, "producer.errors"),
    # The public value types: below the core that encodes them, above the errors they carry.
    "producer._types": ("producer._response_codes", *CARRIED, "producer.errors", "producer._types"),
    CONSUMED: (*CORE, CONSUMED),
    "producer._transport": (*CORE, LIFECYCLE, "producer._transport"),
    "producer._client": (
        *CORE,
        LIFECYCLE,
        "producer._transport",
        "producer._client",
        "latency_fault",
    ),
    "producer._send": (
        *CORE,
        LIFECYCLE,
        "producer._transport",
        "producer._client",
        "producer._send",
        "latency_fault",
    ),
    "producer._transactions": (
        *CORE,
        CONSUMED,
        LIFECYCLE,
        "producer._transport",
        "producer._client",
        "producer._send",
        "producer._consume",
        "producer._producer",
        "producer._transactions",
    ),
    # Message trace: records from send hooks and listener calls, sent on the client's
    # connections; the consumer uses it, so it never reaches the producer facade.
    "producer._trace": (
        *CORE,
        CONSUMED,
        LIFECYCLE,
        "producer._transport",
        "producer._client",
        "producer._consume",
        "producer._trace",
    ),
    # Request-reply: the requester's table and sweeper, the replier's send (325); the
    # reply handed back is a consumer's ReceivedMessage.
    "producer._reply": (
        *CORE,
        CONSUMED,
        LIFECYCLE,
        "producer._transport",
        "producer._client",
        "producer._consume",
        "producer._reply",
        "latency_fault",  # Java's string hash, for the HashMap order of properties
    ),
    "producer.testing": (
        *CORE,
        LIFECYCLE,
        "producer._transport",
        "producer.testing",
        "latency_fault",
    ),
    # The consumer: a pure core (``_consume``) under an I/O shell that shares the
    # producer's client; it needs only the result type of the send layer, never the facade.
    "producer._consume": (*CORE, CONSUMED, "producer._consume"),
    "producer.consumer": (
        *CORE,
        CONSUMED,
        LIFECYCLE,
        "producer._transport",
        "producer._client",
        "producer._consume",
        "producer._trace",
        "producer.consumer",
        "latency_fault",  # Java's string hash, for tag codes
    ),
    "latency_fault": ("latency_fault",),
}
# Nothing below the CLI may import it, and nothing but the CLI (and Spark's report) rich.
NEVER_BELOW_CLI = ("producer.cli", "rich")
ON_TOP = ("producer.cli", "producer.__main__", "producer.spark")  # users of the public API

IMPURE = {"asyncio", "anyio", "trio", "sniffio", "socket", "time", "threading", "selectors"}
PURE_FILES = [
    SDK / "_response_codes.py",
    *sorted((SDK / "_types").rglob("*.py")),
    *sorted((SDK / "_remoting").glob("*.py")),
    SDK / "_send" / "plan.py",
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


def allowed(layer: str, name: str) -> bool:
    """A prefix of ``ALLOWED[layer]`` grants the layer it names (or is in), never a
    layer nested inside it: ``producer._types`` does not grant ``producer._types.consumer``."""
    target = layer_of(name)
    return any(
        name.startswith(prefix) and target in (None, layer_of(prefix)) for prefix in ALLOWED[layer]
    )


def violations(sources: dict[Path, str | None]) -> list[str]:
    found = []
    for path, source in sources.items():
        own = module_name(path)
        layer = layer_of(own)
        for line, name in imported(path, source):
            where = f"{path.relative_to(ROOT)}:{line} imports {name}"
            is_sdk = name.split(".")[0] in ("producer", "latency_fault")
            upward = layer is not None and is_sdk and not allowed(layer, name)
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
        ("_remoting/frame_decoder.py", "from producer._send.plan import SendPlan"),
        ("_remoting/frame_decoder.py", "from .._client import routes"),
        ("_transport/pool.py", "import producer._client.routes"),
        ("testing/_broker.py", "from producer._send.plan import SendPlan"),
        ("_types/message.py", "from producer._remoting.properties import UNIQ_KEY"),
        ("_types/message.py", "from producer._types.consumer.received import ReceivedMessage"),
        ("_remoting/reply.py", "from producer._types.consumer.received import ReceivedMessage"),
        ("_types/consumer/received.py", "from producer._transport import ConnectionPool"),
        ("_lifecycle.py", "from producer._types.message import Message"),
        ("_remoting/subscription.py", "from latency_fault import java_string_hash"),
        ("_remoting/reply.py", "from latency_fault._keyed import java_string_hash"),
        ("errors/_base.py", "from producer._remoting.frame_decoder import encode_frame"),
        ("errors/_broker.py", "from producer._remoting.request_codes import ResponseCode"),
        ("_response_codes.py", "from producer.errors import BrokerError"),
        ("_send/sender.py", "from producer.cli import main"),
        ("_producer.py", "import rich"),
        ("cli/send.py", "from producer._types.send_result import SendResult"),
        ("testing/_cluster.py", "from producer.cli.cluster import run_cluster_cli"),
        ("spark/_partition.py", "from producer._send.future import SendFuture"),
        ("_consume/decisions.py", "from producer._client.routes import RouteTable"),
        ("consumer/_dead_letters.py", "from producer._producer import Producer"),
        ("consumer/_broker_api.py", "from producer._send.sender import Sender"),
        ("_send/sender.py", "from producer.spark import publish"),
        ("_lifecycle.py", "from producer._remoting.frame_decoder import encode_frame"),
        ("_remoting/frame_decoder.py", "from producer._lifecycle import AsyncLifecycle"),
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


# -- cycles ----------------------------------------------------------------------------------

# Imported inside a function on purpose: the module needs an optional extra.
LAZY_FOR_AN_EXTRA = {
    ("producer/cli/__init__.py", "producer.cli.demo"),  # rich
    ("producer/testing/_cluster.py", "producer.testing._http"),  # aiohttp
}


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in (
        "TYPE_CHECKING",
        "typing.TYPE_CHECKING",
    )


def runtime_imports(path: Path, source: str | None = None) -> Iterator[tuple[int, str, bool]]:
    """The SDK modules ``path`` imports when it runs, with the line and whether the import
    is inside a function (``if TYPE_CHECKING`` blocks are not run)."""
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text() if source is None else source, filename=str(path))

    def visit(node: ast.AST, in_function: bool) -> Iterator[tuple[int, str, bool]]:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield child.lineno, alias.name, in_function
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.rsplit(".", child.level - 1)[0] if child.level > 1 else package
                    base = f"{up}.{base}" if base else up
                for alias in child.names:  # ``from pkg import module`` imports the module
                    yield child.lineno, f"{base}.{alias.name}", in_function
                yield child.lineno, base, in_function
            else:
                nested = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                yield from visit(child, in_function or nested)

    for line, name, in_function in visit(tree, False):
        if name.split(".")[0] in ("producer", "latency_fault"):
            yield line, name, in_function


def import_graph(sources: dict[Path, str | None]) -> dict[str, set[str]]:
    """Module -> the SDK modules it imports at its top level (of those in ``sources``)."""
    known = {module_name(path) for path in sources}
    graph: dict[str, set[str]] = {name: set() for name in known}
    for path, source in sources.items():
        own = module_name(path)
        for _, name, in_function in runtime_imports(path, source):
            if not in_function and name in known and name != own:
                graph[own].add(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def layer_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    layers: dict[str, set[str]] = {}
    for module, imports in graph.items():
        own = layer_of(module)
        if own is None:
            continue
        targets = {layer_of(name) for name in imports}
        layers.setdefault(own, set()).update(t for t in targets if t not in (None, own))
    return layers


def test_no_module_imports_itself_back() -> None:
    assert cycles(import_graph(dict.fromkeys(sdk_files()))) == []


def test_no_layer_imports_itself_back() -> None:
    assert cycles(layer_graph(import_graph(dict.fromkeys(sdk_files())))) == []


def test_no_sdk_module_is_imported_inside_a_function() -> None:
    """An import inside a function hides a cycle (or an upward arrow) from the checks."""
    hidden = []
    modules = {module_name(path) for path in sdk_files()}
    for path in sdk_files():
        where = str(path.relative_to(ROOT))
        for line, name, in_function in runtime_imports(path):
            lazy = in_function and name in modules
            if lazy and (where, name) not in LAZY_FOR_AN_EXTRA:
                hidden.append(f"{where}:{line} imports {name}")
    assert sorted(set(hidden)) == []


def test_the_cycle_checks_catch_a_cycle() -> None:
    command, frame = SDK / "_remoting" / "command.py", SDK / "_remoting" / "frame_decoder.py"
    lazy = "def f():\n    from producer._remoting.frame_decoder import decode_frame\n"
    assert [line for line, _, inside in runtime_imports(command, lazy) if inside] == [2, 2]
    back = "from producer._remoting.frame_decoder import decode_frame\n"
    graph = import_graph({command: back, frame: None})
    assert cycles(graph) == [["producer._remoting.command", "producer._remoting.frame_decoder"]]
    codes, errors = SDK / "_response_codes.py", SDK / "errors" / "__init__.py"
    up = "from producer.errors import BrokerError\n"
    down = "from producer._response_codes import ResponseCode\n"
    assert cycles(layer_graph(import_graph({codes: up, errors: down}))) == [
        ["producer._response_codes", "producer.errors"]
    ]


def reexported(path: Path, source: str | None = None) -> list[str]:
    """The names a module lists in ``__all__`` but does not define (it imports them)."""
    tree = ast.parse(path.read_text() if source is None else source)
    defined: set[str] = set()
    listed: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)]
            defined.update(name.id for name in names)
            if any(name.id == "__all__" for name in names) and node.value is not None:
                listed = [
                    ast.literal_eval(e) for e in ast.walk(node.value) if isinstance(e, ast.Constant)
                ]
    return [name for name in listed if name not in defined]


def test_each_name_has_one_home() -> None:
    """A private module lists in ``__all__`` only what it defines, so every name is
    imported from the one module that defines it; only a package's ``__init__`` (its
    face) hands on names defined elsewhere."""
    homes = [
        f"{module_name(path)}: {name}"
        for path in sdk_files()
        if path.name != "__init__.py"
        for name in reexported(path)
    ]
    assert homes == []


def test_the_home_check_catches_a_reexport() -> None:
    path = SDK / "_remoting" / "request_codes.py"
    source = (
        "from producer._response_codes import ResponseCode\n"
        "__all__ = ['ResponseCode', 'X']\nX = 1\n"
    )
    assert reexported(path, source) == ["ResponseCode"]
