"""The SQL92 selector (``producer._remoting.sql92``) against the real 4.9.4 filter code,
the recorded broker's remark, and a small reference model (docs/consuming.md 7)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from producer._remoting.consumer_requests import (
    ConsumeFromWhere,
    ConsumerData,
    MessageModel,
    PullParams,
    check_client_config_request,
    pull_request,
)
from producer._remoting.frame_decoder import decode_frame
from producer._remoting.sql92 import compile_sql92
from producer._remoting.sql92_build import SqlParseError
from producer._remoting.sql92_nodes import SqlEvaluationError
from producer._remoting.subscription import sql_subscription
from producer._types.message import MessageQueue
from tests.protocol.golden import golden_dir

REFERENCE = golden_dir() / "sql92" / "selector_4_9_4.jsonl"
SESSION = golden_dir() / "sessions" / "features_4_9_4" / "d_sql92"
_LETTER = {True: "T", False: "F", None: "N"}


@cache
def reference() -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    header, *rows = map(json.loads, REFERENCE.read_text().splitlines())
    return header["contexts"], rows


def answer(expression: str, contexts: list[dict[str, str]]) -> dict[str, str]:
    try:
        node = compile_sql92(expression)
    except SqlParseError as exc:
        return {"remark": exc.reason}
    letters = []
    for props in contexts:
        try:
            letters.append(_LETTER[node.evaluate(props)])  # type: ignore[index]
        except SqlEvaluationError:
            letters.append("X")
    return {"results": " ".join(letters)}


def test_every_reference_answer_of_the_4_9_4_filter_code_is_ours() -> None:
    contexts, rows = reference()
    assert len(rows) > 500
    wrong = []
    for row in rows:
        expected = {k: v for k, v in row.items() if k != "expression"}
        if answer(row["expression"], contexts) != expected:
            wrong.append(row["expression"])
    assert wrong == []


def test_the_recorded_broker_refuses_the_invalid_expression_with_our_remark() -> None:
    frame = (SESSION / "raw" / "000088-broker-b-c8-s2c.bin").read_bytes()
    refusal = decode_frame(frame)
    assert refusal.code == 23
    with pytest.raises(SqlParseError) as caught:
        compile_sql92("a > AND b = 'x'")
    assert caught.value.reason == refusal.remark


@pytest.mark.parametrize(
    ("props", "delivered"),
    [  # the seven messages of the recorded session, and what its broker delivered
        ({"a": "10", "b": "x"}, True),
        ({"a": "3", "b": "x"}, False),
        ({"a": "10", "b": "y"}, False),
        ({"b": "x"}, False),
        ({"a": "6", "b": "x"}, True),
        ({"a": "abc", "b": "x"}, False),
        ({"a": "5.5", "b": "x"}, False),  # Integer.valueOf("5.5") fails: an error, no match
    ],
)
def test_the_recorded_filter_delivers_what_the_broker_delivered(
    props: dict[str, str], delivered: bool
) -> None:
    assert compile_sql92("a > 5 AND b = 'x'").matches(props) is delivered


# -- a reference model: integers, strings, three-valued logic ----------------------------

NAMES = ("a", "b")
_ints = st.integers(-20, 20)
_strings = st.sampled_from(["x", "y", "it's"])


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@st.composite
def conditions(draw: st.DrawFn, depth: int = 0) -> tuple[str, Any]:
    """(SQL text, model) pairs; the model is a function of the properties giving
    True / False / None (unknown), written from the SQL standard, not from the SDK."""
    name = draw(st.sampled_from(NAMES))
    kind = draw(
        st.sampled_from(["cmp", "eq", "between", "in", "null"] + ["and", "or", "not"] * (depth < 2))
    )
    if kind == "cmp":
        op, n = draw(st.sampled_from([">", ">=", "<", "<="])), draw(_ints)
        ops = {">": int.__gt__, ">=": int.__ge__, "<": int.__lt__, "<=": int.__le__}
        return f"{name} {op} {n}", lambda p: _num(p, name, lambda v: ops[op](v, n))
    if kind == "eq":
        text, negate = draw(_strings), draw(st.booleans())
        sql = f"{name} {'<>' if negate else '='} {_quote(text)}"
        return sql, lambda p: None if name not in p else (p[name] == text) != negate
    if kind == "between":
        low = draw(_ints)
        high = low + draw(st.integers(0, 10))
        return f"{name} BETWEEN {low} AND {high}", lambda p: _num(
            p, name, lambda v: low <= v <= high
        )
    if kind == "in":
        items = draw(st.lists(_strings, min_size=1, max_size=3))
        sql = f"{name} IN ({', '.join(map(_quote, items))})"
        return sql, lambda p: None if name not in p else p[name] in items
    if kind == "null":
        negate = draw(st.booleans())
        return f"{name} IS {'NOT ' if negate else ''}NULL", lambda p: (name in p) == negate
    if kind == "not":
        sql, model = draw(conditions(depth + 1))
        return f"NOT ({sql})", lambda p: _not(model(p))
    (left, lm), (right, rm) = draw(conditions(depth + 1)), draw(conditions(depth + 1))
    word = kind.upper()
    return f"({left}) {word} ({right})", lambda p: _logic(kind, lm, rm, p)


def _num(props: dict[str, str], name: str, test: Any) -> bool | None:
    if name not in props:
        return None
    try:
        return bool(test(int(props[name])))
    except ValueError:
        return "error"  # type: ignore[return-value]


def _not(value: Any) -> Any:
    return value if value in (None, "error") else not value


def _logic(kind: str, left: Any, right: Any, props: dict[str, str]) -> Any:
    """Left to right; AND stops at FALSE and OR at TRUE, so an error on the right of a
    decided left is never met; an error met ends the evaluation."""
    decisive = kind == "or"
    lv = left(props)
    if lv == "error" or lv is decisive:
        return lv
    rv = right(props)
    if rv == "error" or rv is decisive:
        return rv
    return None if None in (lv, rv) else not decisive


_values = st.one_of(_ints.map(str), _strings)
_props = st.dictionaries(st.sampled_from(NAMES), _values)


@settings(max_examples=300, deadline=None)
@given(conditions(), _props)
def test_the_evaluator_agrees_with_a_reference_model(
    condition: tuple[str, Any], props: dict[str, str]
) -> None:
    sql, model = condition
    expected = model(props)
    node = compile_sql92(sql)
    if expected == "error":  # a string compared with a number: Java's parse fails
        assert node.matches(props) is False
        return
    assert node.evaluate(props) is expected
    assert node.matches(props) is (expected is True)


@pytest.mark.parametrize("bad", ["", "a >", "a > 5 AND", "a & b", "a IN ()", "'x'", "5"])
def test_an_expression_that_does_not_parse_raises_with_the_brokers_reason(bad: str) -> None:
    with pytest.raises(SqlParseError) as caught:
        compile_sql92(bad)
    assert caught.value.reason.startswith(("org.apache.rocketmq.filter.parser.", "java."))


# -- the client's frames against the recorded Java client's --------------------------------


def _golden(seq: int) -> Any:
    return decode_frame((SESSION / "raw" / _RAW[seq]).read_bytes())


_RAW = {
    11: "000011-broker-a-c2-c2s.bin",
    13: "000013-broker-b-c3-c2s.bin",
    51: "000051-broker-a-c2-c2s.bin",
}


def test_check_client_config_is_the_recorded_request_byte_for_byte_in_its_body() -> None:
    sub = sql_subscription("SqlTopic", "a > 5 AND b = 'x'")
    ours = check_client_config_request(
        "192.0.2.2@sqlconsumer", "SqlConsumerGroup", sub, 1795788494232
    )
    real = _golden(11)
    assert (ours.code, ours.ext_fields, ours.body) == (real.code, real.ext_fields, real.body)


def test_the_heartbeat_subscription_and_the_pull_are_the_recorded_ones() -> None:
    sub = sql_subscription("SqlTopic", "a > 5 AND b = 'x'")
    data = ConsumerData(
        "SqlConsumerGroup",
        MessageModel.CLUSTERING,
        ConsumeFromWhere.FIRST_OFFSET,
        (sub,),
        {"SqlTopic": 1795788494232},
    )
    real_sets = json.loads(_golden(13).body)["consumerDataSet"][0]["subscriptionDataSet"]
    assert data.to_json()["subscriptionDataSet"] == [
        s for s in real_sets if s["topic"] == "SqlTopic"
    ]
    real_pull = _golden(51)
    params = PullParams(
        group="SqlConsumerGroup",
        queue=MessageQueue("SqlTopic", "broker-a", 0),
        offset=0,
        max_messages=32,
        commit_offset=0,
        suspend_timeout_ms=15000,
        sub_version=1795788495074,
        expression_type=sub.expression_type,
    )
    assert pull_request(params).ext_fields == real_pull.ext_fields
