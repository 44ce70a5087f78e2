"""Every exported value type has one home, ``producer/_types/`` (as aiokafka's
``structs.py``): a reader looking for what a name *is* opens one package.

A **value type** here is every class exported by ``producer.__all__`` or
``producer.consumer.__all__`` that is neither an error (a ``BaseException``) nor a client
(an ``async with`` object: a subclass of ``producer._lifecycle.AsyncContext``). That
takes in dataclasses, msgspec Structs, enums, NamedTuples and plain slotted classes such
as ``ReceivedMessage`` alike: whatever its make, a class a user gets or builds as data.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect

import msgspec
import pytest

import producer
import producer.consumer
from producer._lifecycle import AsyncContext

HOME = "producer._types"
FACADES = (producer, producer.consumer)

# Not a value type though it passes the definition below: ``SendFuture`` (producer._send.future)
# is the live handle of one send in flight, bound to the event loop it was made on (it
# holds waiters, callbacks and the loop, and the send layer completes it exactly once);
# a user never builds one or keeps it as data, so it stays beside the code that settles it.
NOT_VALUE_TYPES = {"SendFuture"}


def is_value_type(value: object) -> bool:
    return (
        inspect.isclass(value)
        and not issubclass(value, BaseException)
        and not issubclass(value, AsyncContext)
    )


def exported_value_types() -> dict[str, type]:
    found: dict[str, type] = {}
    for facade in FACADES:
        for name in facade.__all__:
            value = getattr(facade, name)
            if is_value_type(value):
                found[name] = value
    return found


def homeless(types: dict[str, type]) -> list[str]:
    """The value types, outside ``NOT_VALUE_TYPES``, defined outside ``producer/_types/``."""
    return sorted(
        f"{name} ({cls.__module__})"
        for name, cls in types.items()
        if not cls.__module__.startswith(HOME + ".") and name not in NOT_VALUE_TYPES
    )


def test_every_exported_value_type_lives_in_producer_types() -> None:
    assert homeless(exported_value_types()) == []


def test_the_allow_list_names_only_types_still_outside() -> None:
    """The list names only exported classes still outside, so it never hides a type."""
    types = exported_value_types()
    stale = [n for n in NOT_VALUE_TYPES if n not in types or types[n].__module__.startswith(HOME)]
    assert stale == []


def test_the_definition_takes_every_make_of_value_type_and_no_client_or_error() -> None:
    types = exported_value_types()
    makes = {
        "dataclass": dataclasses.is_dataclass,
        "msgspec.Struct": lambda cls: issubclass(cls, msgspec.Struct),
        "enum": lambda cls: issubclass(cls, enum.Enum),
    }
    for make, test in makes.items():
        assert any(test(cls) for cls in types.values()), make
    assert types["ReceivedMessage"] is producer.consumer.ReceivedMessage  # a plain class
    for client in (producer.Producer, producer.consumer.PushConsumer, producer.ProducerError):
        assert not is_value_type(client)


@pytest.mark.parametrize(
    "module", ["producer.consumer._dead_letters", "producer._remoting.trace", "producer._lifecycle"]
)
def test_the_check_catches_a_type_defined_outside(module: str) -> None:
    class Stray:
        pass

    Stray.__module__ = module
    assert homeless({"Stray": Stray}) == [f"Stray ({module})"]
