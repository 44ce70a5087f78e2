"""The properties string: exact encoding, Java's lenient decoding, round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from producer._remoting.properties import (
    RESERVED_PROPERTY_NAMES,
    decode_properties,
    encode_properties,
    join_keys,
    split_keys,
)

from .support import deterministic

_name = st.text(st.characters(blacklist_characters="\x01\x02"), min_size=1, max_size=10)


def test_encoding_matches_the_golden_string() -> None:
    properties = {
        "KEYS": "golden-key-1 golden-key-2",
        "goldenProp": "golden-value-1",
        "UNIQ_KEY": "C000020259775FFD2B27696D66FF0000",
        "WAIT": "true",
        "TAGS": "TagA",
    }
    text = (
        "KEYS\x01golden-key-1 golden-key-2\x02goldenProp\x01golden-value-1\x02"
        "UNIQ_KEY\x01C000020259775FFD2B27696D66FF0000\x02WAIT\x01true\x02TAGS\x01TagA"
    )
    assert encode_properties(properties) == text
    assert encode_properties(list(properties.items())) == text
    assert decode_properties(text) == properties
    assert list(decode_properties(text)) == list(properties)  # order kept


def test_empty() -> None:
    assert encode_properties({}) == ""
    assert decode_properties("") == {}


@deterministic
@given(st.dictionaries(_name, _name, max_size=8))
def test_round_trip(properties: dict[str, str]) -> None:
    text = encode_properties(properties)
    assert not text.endswith("\x02")
    assert decode_properties(text) == properties


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\x01b\x02", {"a": "b"}),  # trailing separator
        ("a\x01b\x02\x02c\x01d", {"a": "b", "c": "d"}),  # empty pair
        ("noval\x02a\x01b", {"a": "b"}),  # pair without \x01
        ("\x01v\x02a\x01b", {"a": "b"}),  # empty name
        ("k\x01\x02a\x01b", {"a": "b"}),  # empty value
        ("a\x01b\x01c", {"a": "b\x01c"}),  # value keeps later \x01
        ("a\x011\x02a\x012", {"a": "2"}),  # later duplicate wins
    ],
)
def test_malformed_pairs_are_skipped_like_java(text: str, expected: dict[str, str]) -> None:
    assert decode_properties(text) == expected


@deterministic
@given(st.text(max_size=40))
def test_decoding_never_raises(text: str) -> None:
    for name, value in decode_properties(text).items():
        assert name
        assert value
        assert "\x02" not in name + value
        assert "\x01" not in name


def test_reserved_names_are_java_4_9_4_string_hash_set() -> None:
    assert len(RESERVED_PROPERTY_NAMES) == 31
    assert {"KEYS", "TAGS", "WAIT", "DELAY", "UNIQ_KEY", "TRACE_ON", "MSG_REGION"} <= (
        RESERVED_PROPERTY_NAMES
    )
    assert "INNER_MULTI_DISPATCH" not in RESERVED_PROPERTY_NAMES  # 4.9.4 leaves it out


def test_keys_join_with_one_space() -> None:
    assert join_keys(["a", "b"]) == "a b"
    assert split_keys("a  b ") == ["a", "b"]
