"""Every public name has a docstring: each name a public module exports (``__all__``), and
every public method and property its classes define (enums' too), as the API reference
(``python docs/api_reference.py``, README "API reference") shows them. A method that overrides a
documented one (a ``Router`` protocol method, a PySpark ``DataSource`` hook) inherits its
docstring, as pdoc shows it.
"""

from __future__ import annotations

import ast
import enum
import importlib
import importlib.util
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _public_modules() -> tuple[str, ...]:
    """docs/api_reference.py's list: the modules the reference is built from."""
    spec = importlib.util.spec_from_file_location(
        "api_reference", ROOT / "docs" / "api_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(module.PUBLIC_MODULES)


def _documented(value: Any) -> bool:
    target = value.fget if isinstance(value, property) else value
    if isinstance(target, (classmethod, staticmethod)):
        target = target.__func__
    return bool((getattr(target, "__doc__", None) or "").strip())


def _is_api(value: Any) -> bool:
    return isinstance(value, (property, classmethod, staticmethod)) or inspect.isfunction(value)


def _undocumented_members(cls: type) -> Iterator[str]:
    """Public methods and properties without a docstring, enums' included (their members
    are values, not API, and are skipped as such)."""
    for name, value in vars(cls).items():
        if name.startswith("_") or not _is_api(value) or _documented(value):
            continue
        inherited = (vars(base).get(name) for base in cls.__mro__[1:])
        if not any(v is not None and _documented(v) for v in inherited):
            yield f"{cls.__module__}.{cls.__qualname__}.{name}"


def _own_doc(obj: Any) -> bool:
    doc = (obj.__doc__ or "").strip()
    if inspect.isclass(obj):  # a class without one shows its base's
        return bool(doc) and any(doc != (b.__doc__ or "").strip() for b in obj.__mro__[1:2])
    return bool(doc)


def _pdoc_documented_values(module: Any) -> set[str]:
    """Module-level names pdoc shows a docstring for, read from the module's own source as
    pdoc reads it: an assignment (or a bare annotation) with ``#:`` comment lines right
    above it or on its line, or a string right after it. A name imported from elsewhere
    has none there (pdoc does not follow it to its home)."""
    source = inspect.getsource(module)
    lines = source.splitlines()
    body = ast.parse(source).body
    found: set[str] = set()
    for i, node in enumerate(body):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if not names:
            continue
        after = body[i + 1] if i + 1 < len(body) else None
        docstring = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
        above = lines[node.lineno - 2].lstrip() if node.lineno > 1 else ""
        if docstring or above.startswith("#:") or "#:" in lines[node.lineno - 1]:
            found.update(names)
    return found


def _is_value(name: str, obj: Any) -> bool:
    """A constant or an alias: what pdoc shows as a variable (a class under another name too)."""
    if inspect.ismodule(obj) or inspect.isfunction(obj):
        return False
    return not inspect.isclass(obj) or obj.__name__ != name


def undocumented() -> list[str]:
    """Every public name of the reference's modules without a docstring."""
    missing: set[str] = set()
    for module_name in _public_modules():
        module = importlib.import_module(module_name)
        if not (module.__doc__ or "").strip():
            missing.add(module_name)
        values = _pdoc_documented_values(module)
        for name in module.__all__:
            obj = getattr(module, name)
            if _is_value(name, obj) and name not in values:
                missing.add(f"{module_name}.{name}")
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and not _own_doc(obj):
                missing.add(f"{module_name}.{name}")
            if inspect.isclass(obj):
                missing.update(_undocumented_members(obj))
    return sorted(missing)


def test_every_public_name_has_a_docstring() -> None:
    missing = undocumented()
    assert not missing, f"{len(missing)} public names lack a docstring:\n" + "\n".join(missing)


def test_the_check_sees_a_missing_docstring() -> None:
    class Documented:
        """A class."""

        def method(self) -> None:
            """A method."""

        @property
        def value(self) -> int:
            """A property."""
            return 1

    class Bare(Documented):
        """A subclass."""

        def method(self) -> None:  # inherits its docstring
            pass

        def other(self) -> None:
            pass

        @property
        def size(self) -> int:
            return 0

    class Colour(enum.Enum):
        """An enum."""

        RED = "red"  # a member: a value, not API

        @property
        def warm(self) -> bool:
            return self is Colour.RED

    assert list(_undocumented_members(Documented)) == []
    assert sorted(n.rsplit(".", 1)[1] for n in _undocumented_members(Bare)) == ["other", "size"]
    assert [n.rsplit(".", 1)[1] for n in _undocumented_members(Colour)] == ["warm"]
