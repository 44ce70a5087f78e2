"""The transactional producer asks its producer through the producer's internal sending
interface (``ProducerPort``), never through the producer's private members."""

from __future__ import annotations

import ast
from pathlib import Path

import producer._transactions

PACKAGE = Path(producer._transactions.__file__).parent


def private_reach_ins(source: str) -> list[str]:
    """Every ``a.b._c`` in ``source``: a private member of something not our own."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__") or isinstance(node.value, ast.Name):
            continue  # a dunder, or self._x / module._x
        found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_of_the_transactions_reaches_into_another_objects_privates() -> None:
    reach_ins = {
        path.name: found
        for path in sorted(PACKAGE.glob("*.py"))
        if (found := private_reach_ins(path.read_text()))
    }
    assert reach_ins == {}


def test_the_check_sees_a_reach_in() -> None:
    assert private_reach_ins("running = self.producer._open()") == ["line 1: self.producer._open"]
