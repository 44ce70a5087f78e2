"""Constructor keywords checked against the signature: a misspelt option is refused with
the nearest name the constructor takes, as an :class:`InvalidOptionError`."""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Iterable
from typing import ParamSpec, TypeVar

from producer.errors import InvalidOptionError

P = ParamSpec("P")
R = TypeVar("R")


def unknown_option(owner: str, name: str, known: Iterable[str]) -> InvalidOptionError:
    """The error for an option ``owner`` does not take, naming the closest one it does."""
    nearest = difflib.get_close_matches(name, list(known), n=1)
    hint = f": did you mean {nearest[0]!r}?" if nearest else ""
    return InvalidOptionError(f"{owner}() got an unknown option {name!r}{hint}")


def known_keywords(init: Callable[P, R]) -> Callable[P, R]:
    """Wraps an ``__init__`` whose options are all spelt out: an unknown keyword raises
    :func:`unknown_option` (Python's own error names neither the class nor a fix). The
    signature IDEs and ``help()`` show is the wrapped one's."""
    parameters = inspect.signature(init).parameters
    owner = init.__qualname__.split(".")[0]

    @functools.wraps(init)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        for name in kwargs:
            if name not in parameters:
                raise unknown_option(owner, name, parameters)
        return init(*args, **kwargs)

    return checked
