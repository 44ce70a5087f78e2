"""Each client's options written once, in its options class, and its constructor's
keywords checked against them.

An options class (``ProducerOptions``, ``ConsumerOptions``, ...) is the one home of a
client's settings: their names, types, defaults and validation. The constructor still
spells every keyword out (the type checker, ``help()`` and IDEs see the real parameters),
but :func:`takes_options` checks, when the class is defined, that those keywords are
exactly the options' - same names, same types as written, same defaults - apart from the
*wiring* it names (clocks, credentials, callbacks: objects, not settings). A keyword added
to one and not the other fails the import. At each call it refuses an unknown keyword
with the nearest name (:func:`unknown_option`), builds the options object from the
keywords given - validating them - and sets it as ``self.options`` before the
constructor's body runs, which reads its settings from there.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from producer.errors import InvalidOptionError

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Keyword:
    """One constructor keyword of a client: its default and its type, as written."""

    default: object
    annotation: str


class Options(Protocol):
    """An options class: the keywords its client takes, and how they become options."""

    @classmethod
    def keywords(cls) -> Mapping[str, Keyword]:
        """Every keyword the client's constructor takes for these options."""
        ...

    @classmethod
    def from_keywords(cls, given: Mapping[str, object]) -> object:
        """The options from the keywords given (the others take their defaults),
        validated: a bad value raises :class:`InvalidOptionError`."""
        ...


def dataclass_keywords(cls: type, *, leave_out: Iterable[str] = ()) -> dict[str, Keyword]:
    """The keywords of a dataclass's fields, one each with its default (every field has
    one) and type; ``leave_out`` names fields no constructor takes."""
    assert is_dataclass(cls)
    skipped = set(leave_out)
    found: dict[str, Keyword] = {}
    for field in fields(cls):
        if field.name in skipped:
            continue
        if field.default is not MISSING:
            default: object = field.default
        else:
            assert field.default_factory is not MISSING, f"{cls.__name__}.{field.name}"
            default = field.default_factory()
        found[field.name] = Keyword(default, str(field.type))
    return found


def unknown_option(owner: str, name: str, known: Iterable[str]) -> InvalidOptionError:
    """The error for an option ``owner`` does not take, naming the closest one it does."""
    return InvalidOptionError.unknown(f"{owner}()", name, known)


def option_drift(
    init: Callable[..., object], keywords: Mapping[str, Keyword], wiring: Iterable[str]
) -> list[str]:
    """How a constructor's keyword-only parameters differ from its options' keywords
    (plus ``wiring``): one line per difference, naming where to fix it; ``[]`` if none."""
    owner = init.__qualname__.split(".")[0]
    taken = {
        p.name: p
        for p in inspect.signature(init).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    wired = set(wiring)
    drift = [
        f"{owner}() takes {name!r}, which is no option: add it to the options class"
        for name in taken
        if name not in keywords and name not in wired
    ]
    for name, keyword in keywords.items():
        parameter = taken.get(name)
        if parameter is None:
            drift.append(f"option {name!r} is not a keyword of {owner}(): add it there")
            continue
        if str(parameter.annotation) != keyword.annotation:
            drift.append(
                f"{owner}({name}: {parameter.annotation}): the option is a {keyword.annotation}"
            )
        if not _same(parameter.default, keyword.default):
            drift.append(
                f"{owner}({name}={parameter.default!r}): the default is {keyword.default!r}"
            )
    drift += [
        f"{name!r} is both wiring and an option of {owner}()" for name in wired & set(keywords)
    ]
    drift += [f"{owner}() has no keyword {name!r} (wiring)" for name in wired - set(taken)]
    return drift


def _same(a: object, b: object) -> bool:
    return a is b or (type(a) is type(b) and a == b)


def takes_options(
    options: type[Options], *, wiring: Iterable[str] = ()
) -> Callable[[Callable[Concatenate[Any, P], None]], Callable[Concatenate[Any, P], None]]:
    """Decorates a client's ``__init__`` whose keywords are ``options``' (and the
    ``wiring``): checked now (a difference raises ``TypeError``, naming it); at each call
    an unknown keyword is refused with the nearest name, and ``self.options`` is built
    from the keywords given before the body runs."""
    wired = tuple(wiring)

    def adopt(init: Callable[Concatenate[Any, P], None]) -> Callable[Concatenate[Any, P], None]:
        keywords = options.keywords()
        drift = option_drift(init, keywords, wired)
        if drift:
            raise TypeError("; ".join(drift))
        parameters = inspect.signature(init).parameters
        owner = init.__qualname__.split(".")[0]

        def built(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> None:
            _check(owner, kwargs, parameters)
            given = {name: value for name, value in kwargs.items() if name in keywords}
            self.options = options.from_keywords(given)
            init(self, *args, **kwargs)

        functools.update_wrapper(built, init)  # help() and IDEs show init's signature
        built.__options__ = (options, wired)  # type: ignore[attr-defined]
        return built

    return adopt


def same_parameters(
    source: Callable[Concatenate[Any, P], object],
) -> Callable[[Callable[..., None]], Callable[Concatenate[Any, P], None]]:
    """Gives a facade's ``__init__``, which passes its options through, the parameters of
    ``source`` (another ``__init__``): for the type checker, ``help()`` and IDEs, and
    checked as :func:`takes_options` checks them. Each option is written once."""
    parameters = inspect.signature(source).parameters
    owner = source.__qualname__.split(".")[0]

    def adopt(init: Callable[..., None]) -> Callable[Concatenate[Any, P], None]:
        @functools.wraps(init)
        def checked(*args: Any, **kwargs: Any) -> None:
            _check(owner, kwargs, parameters)
            init(*args, **kwargs)

        # inspect.signature follows __wrapped__: the signature shown is source's
        functools.update_wrapper(checked, source, assigned=(), updated=())
        return checked

    return adopt


def _check(owner: str, given: Mapping[str, object], parameters: Mapping[str, object]) -> None:
    for name in given:
        if name not in parameters:
            raise unknown_option(owner, name, parameters)
