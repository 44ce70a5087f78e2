"""Topic route data (GET_ROUTEINFO_BY_TOPIC's body) and the publish queues derived from it.

A 4.9.4 name server has two encodings (golden finding 6): standard JSON for requests at
version >= 401 or with ``acceptStandardJsonOnly=true`` (fastjson ``BrowserCompatible`` +
``MapSortField``: ``"brokerAddrs":{"0":"host:port"}``), and otherwise fastjson's legacy
output with **unquoted integer map keys** (``{0:"host:port"}``), which is not JSON.
:func:`parse_route_data` tries standard JSON first and, only if that is malformed, quotes
bare integer keys with a scanner that skips over string literals, so braces, commas,
colons, digits or escaped quotes inside a value never look like a key.

:func:`encode_route_data` writes what the name server writes, byte for byte: fields in
alphabetical order, ``filterServerTable`` always present, ``orderTopicConf`` only when set,
lists in their given order (the server does not sort brokers), broker ids in numeric
order. Strings are escaped as fastjson escapes them in each mode.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import msgspec

from producer._types.message import MessageQueue
from producer.errors import RemoteProtocolError

PERM_READ = 0x1 << 2
PERM_WRITE = 0x1 << 1
PERM_INHERIT = 0x1
MASTER_ID = 0
#: How often a client re-reads its routes while a broker looks down (a master dead, maybe
#: replaced: a promoted slave's new address shows in the route). Java polls every 30 s.
DEGRADED_ROUTE_POLL_MS = 2_000.0


def is_writeable(perm: int) -> bool:
    return bool(perm & PERM_WRITE)


def is_readable(perm: int) -> bool:
    return bool(perm & PERM_READ)


class QueueData(msgspec.Struct, rename="camel", frozen=True):
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0


class BrokerData(msgspec.Struct, rename="camel", frozen=True):
    """One broker group: ``broker_addrs`` maps broker id (0 = master) to ``host:port``."""

    cluster: str
    broker_name: str
    broker_addrs: dict[int, str]


class TopicRouteData(msgspec.Struct, rename="camel", frozen=True):
    """A topic's route. Fields newer servers add (5.x) are ignored when decoding."""

    queue_datas: list[QueueData] = msgspec.field(default_factory=list)
    broker_datas: list[BrokerData] = msgspec.field(default_factory=list)
    filter_server_table: dict[str, list[str]] = msgspec.field(default_factory=dict)
    order_topic_conf: str | None = None


_route_decoder = msgspec.json.Decoder(TopicRouteData)

# A string literal (skipped as a whole) or a bare integer in key position.
_LEGACY_TOKEN = re.compile(rb'"(?:[^"\\]|\\[\s\S])*"|([{,]\s*)(-?[0-9]+)(\s*:)')


def parse_route_data(body: bytes | bytearray | memoryview) -> TopicRouteData:
    """Decode a route body in either encoding; anything else raises RemoteProtocolError."""
    try:
        return _route_decoder.decode(body)
    except msgspec.ValidationError as exc:
        raise RemoteProtocolError(f"route data has the wrong shape: {exc}") from None
    except msgspec.DecodeError as exc:
        first_error = exc
    quoted = quote_legacy_keys(bytes(body))
    try:
        return _route_decoder.decode(quoted)
    except msgspec.DecodeError as exc:
        raise RemoteProtocolError(
            f"route data is neither JSON ({first_error}) nor legacy fastjson ({exc})"
        ) from None


def quote_legacy_keys(body: bytes) -> bytes:
    """Legacy fastjson (bare integer map keys) made JSON: ``{0:"a"}`` -> ``{"0":"a"}``."""

    def quote(match: re.Match[bytes]) -> bytes:
        if match.group(2) is None:  # a string literal: leave it alone
            return match.group(0)
        return match.group(1) + b'"' + match.group(2) + b'"' + match.group(3)

    return _LEGACY_TOKEN.sub(quote, body)


# -- encoding (what a name server sends) ----------------------------------------------------


def encode_route_data(route: TopicRouteData, *, legacy: bool) -> bytes:
    """The body a 4.9.4 name server sends: legacy fastjson, or standard JSON."""
    text = quote_legacy if legacy else _quote_browser_compatible
    key = "{}" if legacy else '"{}"'  # legacy fastjson leaves integer keys bare
    brokers = ",".join(
        '{"brokerAddrs":{'
        + ",".join(f"{key.format(i)}:{text(addr)}" for i, addr in sorted(b.broker_addrs.items()))
        + f'}},"brokerName":{text(b.broker_name)},"cluster":{text(b.cluster)}}}'
        for b in route.broker_datas
    )
    filters = ",".join(
        f"{text(addr)}:[{','.join(text(s) for s in servers)}]"
        for addr, servers in sorted(route.filter_server_table.items())
    )
    queues = ",".join(
        f'{{"brokerName":{text(q.broker_name)},"perm":{q.perm},'
        f'"readQueueNums":{q.read_queue_nums},"topicSysFlag":{q.topic_sys_flag},'
        f'"writeQueueNums":{q.write_queue_nums}}}'
        for q in route.queue_datas
    )
    order = (
        ""
        if route.order_topic_conf is None
        else f',"orderTopicConf":{text(route.order_topic_conf)}'
    )
    return (
        f'{{"brokerDatas":[{brokers}],"filterServerTable":{{{filters}}}{order},'
        f'"queueDatas":[{queues}]}}'
    ).encode()


_PLAIN = re.compile(r"[ !#-.0-\[\]-~]*")  # printable ASCII that no mode escapes
_SHORT_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"'}
_SHORT_ESCAPES["\\"] = "\\\\"


_BROWSER_ESCAPES = {**_SHORT_ESCAPES, "/": "\\/"}


def _quote_browser_compatible(value: str) -> str:
    """fastjson ``BrowserCompatible``: also ``/``, and every char >= 127 as ``\\uXXXX``."""
    return _quote(value, _BROWSER_ESCAPES, lambda code: code < 32 or code >= 127)


def quote_legacy(value: str) -> str:
    """fastjson's default: control chars, DEL..0x9F and U+2028/9 escaped, the rest raw."""
    return _quote(
        value, _SHORT_ESCAPES, lambda code: code < 32 or 127 <= code < 160 or code in _LINE_SEPS
    )


_LINE_SEPS = (0x2028, 0x2029)


def _quote(value: str, short: dict[str, str], as_unicode: Callable[[int], bool]) -> str:
    """A JSON string as one fastjson mode writes it: ``short`` escapes first, then the
    characters ``as_unicode`` picks as ``\\uXXXX`` (UTF-16), the rest as they are."""
    if _PLAIN.fullmatch(value):
        return f'"{value}"'
    out = []
    for ch in value:
        code = ord(ch)
        if ch in short:
            out.append(short[ch])
        elif as_unicode(code):
            out.append(_utf16_escape(code))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _utf16_escape(code: int) -> str:
    # Java strings are UTF-16: a character outside the BMP is escaped as its surrogates.
    if code < 0x10000:
        return f"\\u{code:04X}"
    code -= 0x10000
    return f"\\u{0xD800 | (code >> 10):04X}\\u{0xDC00 | (code & 0x3FF):04X}"


# -- publish info ---------------------------------------------------------------------------


def default_topic_route(default: TopicRouteData, queue_nums: int) -> TopicRouteData:
    """A route for a topic no name server knows, from the ``TBW102`` route: each broker's
    queue counts capped at ``queue_nums`` (Java's ``getDefaultTopicRouteInfoFromNameServer``
    with ``defaultTopicQueueNums``). A broker with ``autoCreateTopicEnable`` creates the
    topic on the first send through it."""
    capped = [
        msgspec.structs.replace(
            q,
            read_queue_nums=min(queue_nums, q.read_queue_nums),
            write_queue_nums=min(queue_nums, q.write_queue_nums),
        )
        for q in default.queue_datas
    ]
    return msgspec.structs.replace(default, queue_datas=capped)


def build_publish_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    """``topicRouteData2TopicPublishInfo``: the queues a producer may write to.

    With ``orderTopicConf`` (``"brokerA:4;brokerB:4"``) those queues, in that order.
    Otherwise queue data sorted by broker name; of each writable one whose broker has a
    master, queue ids ``0..writeQueueNums-1``.
    """
    if route.order_topic_conf:
        return _ordered_queues(topic, route.order_topic_conf)
    masters = master_addresses(route)
    return [
        MessageQueue(topic, q.broker_name, queue_id)
        for q in sorted(route.queue_datas, key=_broker_name)  # stable, like Collections.sort
        if is_writeable(q.perm) and q.broker_name in masters
        for queue_id in range(q.write_queue_nums)
    ]


def build_subscribe_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    """``topicRouteData2TopicSubscribeInfo``: the queues a consumer may pull from
    (readable queue data, ids ``0..readQueueNums-1``)."""
    return [
        MessageQueue(topic, q.broker_name, queue_id)
        for q in sorted(route.queue_datas, key=_broker_name)
        if is_readable(q.perm)
        for queue_id in range(q.read_queue_nums)
    ]


def _broker_name(queue: QueueData) -> str:
    return queue.broker_name


def _ordered_queues(topic: str, conf: str) -> list[MessageQueue]:
    queues: list[MessageQueue] = []
    for entry in conf.split(";"):
        name, _, count = entry.partition(":")
        if not name or not count.isdigit():
            raise RemoteProtocolError(f"malformed orderTopicConf entry {entry!r}")
        queues += (MessageQueue(topic, name, i) for i in range(int(count)))
    return queues


def replica_addresses(route: TopicRouteData) -> dict[str, dict[int, str]]:
    """Broker name -> {broker id: address}: the master (0) and its slaves (1, 2, ...).

    Like Java, only the first broker data of a name counts (a later duplicate is ignored
    even when it has a master).
    """
    first: dict[str, BrokerData] = {}
    for broker in route.broker_datas:
        first.setdefault(broker.broker_name, broker)
    return {name: dict(sorted(broker.broker_addrs.items())) for name, broker in first.items()}


def master_addresses(route: TopicRouteData) -> dict[str, str]:
    """Broker name -> master address, for the brokers that have a master (producers
    write to masters only)."""
    return {
        name: replicas[MASTER_ID]
        for name, replicas in replica_addresses(route).items()
        if MASTER_ID in replicas
    }


def broker_names(route: TopicRouteData) -> Iterable[str]:
    """Every broker name the route mentions, in order, without repeats."""
    return dict.fromkeys(b.broker_name for b in route.broker_datas).keys()
