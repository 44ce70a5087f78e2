"""Constructor keywords checked against the signature: a misspelt option is refused with
the nearest name the constructor takes, as an :class:`InvalidOptionError`."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Concatenate, ParamSpec, TypeVar

from producer.errors import InvalidOptionError

P = ParamSpec("P")
R = TypeVar("R")


def unknown_option(owner: str, name: str, known: Iterable[str]) -> InvalidOptionError:
    """The error for an option ``owner`` does not take, naming the closest one it does."""
    return InvalidOptionError.unknown(f"{owner}()", name, known)


def known_keywords(init: Callable[P, R]) -> Callable[P, R]:
    """Wraps an ``__init__`` whose options are all spelt out: an unknown keyword raises
    :func:`unknown_option` (Python's own error names neither the class nor a fix). The
    signature IDEs and ``help()`` show is the wrapped one's."""
    parameters = inspect.signature(init).parameters
    owner = init.__qualname__.split(".")[0]

    @functools.wraps(init)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        _check(owner, kwargs, parameters)
        return init(*args, **kwargs)

    return checked


def same_parameters(
    source: Callable[Concatenate[Any, P], object],
) -> Callable[[Callable[..., None]], Callable[Concatenate[Any, P], None]]:
    """Gives a facade's ``__init__``, which passes its options through, the parameters of
    ``source`` (another ``__init__``): for the type checker, ``help()`` and IDEs, and
    checked as :func:`known_keywords` checks them. Each option is written once."""
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
