"""Each client's options are written once, in its options class (issue 33 item 3): the
constructor's keywords are checked against them (names, types, defaults), a misspelt
keyword names the nearest one, and the options object is built from what was given.

No network: every case ends in the constructor.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import pytest

import producer
import producer.consumer
from producer._client.keywords import Keyword, option_drift, takes_options
from producer._lifecycle import AsyncLifecycle
from producer.errors import InvalidOptionError

NAMESRV = "127.0.0.1:1"  # never contacted


def _clients() -> list[type]:
    """Every public client: the classes started and closed of producer(.consumer)."""
    found = {
        getattr(module, name) for module in (producer, producer.consumer) for name in module.__all__
    }
    chosen = [c for c in found if inspect.isclass(c) and issubclass(c, AsyncLifecycle)]
    return sorted(chosen, key=lambda c: c.__name__)


CLIENTS = [c for c in _clients() if hasattr(c.__init__, "__options__")]


def _declared(cls: type) -> tuple[Any, tuple[str, ...]]:
    options, wiring = cls.__init__.__options__  # type: ignore[misc]
    return options, wiring


def test_the_clients_declare_their_options() -> None:
    assert [c.__name__ for c in CLIENTS] == [c.__name__ for c in _clients()]


@pytest.mark.parametrize("cls", CLIENTS, ids=lambda c: c.__name__)
def test_the_signature_is_the_options(cls: type) -> None:
    options, wiring = _declared(cls)
    init = inspect.unwrap(cls.__init__)
    assert option_drift(init, options.keywords(), wiring) == []
    signature = inspect.signature(cls.__init__).parameters  # what help() and IDEs show
    assert set(options.keywords()) <= set(signature)
    assert inspect.Parameter.VAR_KEYWORD not in {p.kind for p in signature.values()}


def _with(init: Callable[..., object], change: Callable[[list[inspect.Parameter]], None]) -> Any:
    """A stand-in for ``init`` whose signature is changed by ``change``."""
    signature = inspect.signature(init)
    parameters = list(signature.parameters.values())
    change(parameters)

    def fake(*args: object, **kwargs: object) -> None: ...

    fake.__qualname__ = init.__qualname__
    fake.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return fake


def _added(parameters: list[inspect.Parameter]) -> None:
    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters.append(inspect.Parameter("linger_ms", keyword, default=5, annotation="int"))


def _dropped(name: str) -> Callable[[list[inspect.Parameter]], None]:
    def change(parameters: list[inspect.Parameter]) -> None:
        parameters[:] = [p for p in parameters if p.name != name]

    return change


def _replaced(name: str, **fields: object) -> Callable[[list[inspect.Parameter]], None]:
    def change(parameters: list[inspect.Parameter]) -> None:
        parameters[:] = [p.replace(**fields) if p.name == name else p for p in parameters]  # type: ignore[arg-type]

    return change


@pytest.mark.parametrize("cls", CLIENTS, ids=lambda c: c.__name__)
def test_a_keyword_added_to_the_constructor_alone_is_named(cls: type) -> None:
    options, wiring = _declared(cls)
    fake = _with(inspect.unwrap(cls.__init__), _added)
    assert option_drift(fake, options.keywords(), wiring) == [
        f"{cls.__name__}() takes 'linger_ms', which is no option: add it to the options class"
    ]


@pytest.mark.parametrize("cls", CLIENTS, ids=lambda c: c.__name__)
def test_an_option_missing_from_the_constructor_is_named(cls: type) -> None:
    options, wiring = _declared(cls)
    name = next(iter(options.keywords()))
    fake = _with(inspect.unwrap(cls.__init__), _dropped(name))
    assert option_drift(fake, options.keywords(), wiring) == [
        f"option {name!r} is not a keyword of {cls.__name__}(): add it there"
    ]


@pytest.mark.parametrize("cls", CLIENTS, ids=lambda c: c.__name__)
def test_a_default_or_a_type_written_twice_differently_is_named(cls: type) -> None:
    options, wiring = _declared(cls)
    name, keyword = next(iter(options.keywords().items()))
    init = inspect.unwrap(cls.__init__)
    other_default = _with(init, _replaced(name, default=object()))
    (line,) = option_drift(other_default, options.keywords(), wiring)
    assert line.startswith(f"{cls.__name__}({name}=") and repr(keyword.default) in line
    other_type = _with(init, _replaced(name, annotation="bytes"))
    assert option_drift(other_type, options.keywords(), wiring) == [
        f"{cls.__name__}({name}: bytes): the option is a {keyword.annotation}"
    ]


class _Options:
    """A two-option class, for the decorator's own checks."""

    def __init__(self, **given: object) -> None:
        self.given = given

    @classmethod
    def keywords(cls) -> Mapping[str, Keyword]:
        return {"size": Keyword(1, "int"), "name": Keyword("a", "str")}

    @classmethod
    def from_keywords(cls, given: Mapping[str, object]) -> _Options:
        if given.get("size", 1) == 0:
            raise InvalidOptionError("size=0: must be >= 1")
        return cls(**given)


def test_a_drifted_constructor_fails_where_it_is_defined() -> None:
    with pytest.raises(TypeError, match=r"takes 'extra', which is no option.*'name' is not"):

        @takes_options(_Options)
        def init(self: Any, *, size: int = 1, extra: int = 0) -> None: ...


def test_the_options_are_built_from_what_was_given_before_the_body() -> None:
    seen: list[object] = []

    class Client:
        options: _Options

        @takes_options(_Options, wiring=("clock",))
        def __init__(self, *, size: int = 1, name: str = "a", clock: object = None) -> None:
            seen.append(self.options.given)

    Client(size=3, clock=1)
    assert seen == [{"size": 3}]  # the rest take the options' defaults
    with pytest.raises(InvalidOptionError, match="size=0"):
        Client(size=0)
    with pytest.raises(InvalidOptionError, match=r"unknown option 'nme': did you mean 'name'"):
        Client(nme="b")  # type: ignore[call-arg]


@pytest.mark.parametrize("cls", CLIENTS, ids=lambda c: c.__name__)
def test_every_client_names_the_nearest_option(cls: type) -> None:
    options, _ = _declared(cls)
    name = max(options.keywords(), key=len)
    with pytest.raises(InvalidOptionError, match=rf"did you mean {name!r}\?$"):
        cls("g", NAMESRV, **{name[:-1]: 1})
