"""The expression tree of a SQL92 message filter and its evaluation, as a 4.9.4 broker does it.

Mirrors ``org.apache.rocketmq.filter.expression`` (rocketmq-all-4.9.4): each node answers
``True``, ``False`` or ``None`` (SQL's unknown) for a message's properties, and ``text``
is the node's Java ``toString()`` (the parser's error messages quote it).

Java's types matter, so values are typed as the broker's are: a property value is always a
``str``; a literal is an :class:`JavaNumber` (``Integer``, ``Long`` or ``Double``), a
``str``, a ``bool`` or ``None``. ``compare_values`` is ``ComparisonExpression.__compare``
with string conversion on: a property compared with a number is parsed as that number's
type (``Integer.valueOf("5.5")`` fails), and a failure raises :class:`SqlEvaluationError`,
which the broker logs and counts as "no match".
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import ClassVar

__all__ = [
    "INT",
    "LONG",
    "DOUBLE",
    "JavaNumber",
    "Node",
    "SqlEvaluationError",
    "compare_values",
    "java_double_text",
    "value_text",
]

INT, LONG, DOUBLE = "Integer", "Long", "Double"
_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)"
)

Properties = Mapping[str, str]


class SqlEvaluationError(Exception):
    """Evaluating the filter failed (the broker's ``Message Filter error``): no match."""


@dataclass(frozen=True, slots=True)
class JavaNumber:
    """A Java ``Integer``, ``Long`` or ``Double``: the type decides how others convert."""

    kind: str
    value: float | int

    def __str__(self) -> str:
        return java_double_text(float(self.value)) if self.kind == DOUBLE else str(self.value)


def java_double_text(number: float) -> str:
    """``Double.toString``: plain between 1e-3 and 1e7, else ``d.dddE-n``."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "-0.0" if math.copysign(1.0, number) < 0 else "0.0"
    sign = "-" if number < 0 else ""
    digits, exponent = _shortest_digits(abs(number))
    if 1e-3 <= abs(number) < 1e7:
        point = exponent + 1
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole, frac = digits[:point].ljust(point, "0"), digits[point:]
        return f"{sign}{whole}.{frac or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _shortest_digits(number: float) -> tuple[str, int]:
    """The shortest digits that read back as ``number``, and the decimal exponent of
    the first one (``1.5e-05`` -> ``("15", -5)``)."""
    _, digits, exponent = Decimal(repr(number)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    return text, len(digits) + int(exponent) - 1


def value_text(value: object) -> str:
    """``String.valueOf`` of a value (the BETWEEN message prints values this way)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _parse_int(text: str, kind: str) -> JavaNumber:
    low, high = _INT_RANGE if kind == INT else _LONG_RANGE
    if _JAVA_INT.fullmatch(text) and low <= int(text) <= high:
        return JavaNumber(kind, int(text))
    raise SqlEvaluationError(f'java.lang.NumberFormatException: For input string: "{text}"')


def _parse_double(text: str) -> JavaNumber:
    trimmed = text.strip("".join(map(chr, range(33))))
    if not _JAVA_DOUBLE.fullmatch(trimmed):
        raise SqlEvaluationError(f'java.lang.NumberFormatException: For input string: "{text}"')
    core = (
        trimmed.rstrip("fFdD") if trimmed[-1:] in "fFdD" and "Infinity" not in trimmed else trimmed
    )
    return JavaNumber(DOUBLE, float(core.replace("Infinity", "inf")))


def _from_string(text: str, kind: str) -> JavaNumber:
    return _parse_double(text) if kind == DOUBLE else _parse_int(text, kind)


def _widen(number: JavaNumber, kind: str) -> JavaNumber:
    return JavaNumber(kind, float(number.value) if kind == DOUBLE else int(number.value))


_RANK = {INT: 0, LONG: 1, DOUBLE: 2}


def _sign(a: object, b: object) -> int:
    if isinstance(a, float) and isinstance(b, float) and (math.isnan(a) or math.isnan(b)):
        return (math.isnan(a) - math.isnan(b)) if math.isnan(a) != math.isnan(b) else 0
    return int(a > b) - int(a < b)  # type: ignore[operator]


def compare_values(left: object, right: object) -> int:
    """``__compare(lv, rv, true)``: a negative, zero or positive int; types that do not
    meet compare as -1; a string that does not parse as the other side's number raises."""
    if isinstance(left, JavaNumber) and isinstance(right, JavaNumber):
        if left.kind != right.kind:
            wide = max(left.kind, right.kind, key=_RANK.__getitem__)
            left, right = _widen(left, wide), _widen(right, wide)
        return _sign(left.value, right.value)
    if isinstance(left, JavaNumber) and isinstance(right, str):
        return compare_values(left, _from_string(right, left.kind))
    if isinstance(left, str) and isinstance(right, JavaNumber):
        return compare_values(_from_string(left, right.kind), right)
    if isinstance(left, str) and isinstance(right, bool):
        return _sign(left.lower() == "true", right)
    if isinstance(left, bool) and isinstance(right, str):
        raise SqlEvaluationError(
            "java.lang.ClassCastException: java.lang.Boolean cannot be cast to java.lang.String"
        )
    if type(left) is type(right):
        return _sign(
            _utf16(left) if isinstance(left, str) else left,
            right if not isinstance(right, str) else _utf16(right),
        )
    return -1


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


# -- the tree ---------------------------------------------------------------------------


class Node:
    """An expression; ``is_boolean`` is Java's ``instanceof BooleanExpression``."""

    is_boolean = False
    text = ""

    def evaluate(self, props: Properties) -> object:
        raise NotImplementedError

    def matches(self, props: Properties) -> bool:
        """The broker's verdict: ``True`` only for TRUE; unknown or an error is no match."""
        try:
            return self.evaluate(props) is True
        except SqlEvaluationError:
            return False


class Constant(Node):
    """A literal. TRUE, FALSE and NULL are ``BooleanConstantExpression``s."""

    def __init__(self, value: object, *, boolean: bool = False) -> None:
        self.value, self.is_boolean = value, boolean
        if value is None:
            self.text = "NULL"
        elif isinstance(value, bool):
            self.text = "TRUE" if value else "FALSE"
        elif isinstance(value, str):
            self.text = "'" + value.replace("'", "''") + "'"
        else:
            self.text = str(value)

    def evaluate(self, props: Properties) -> object:
        return self.value


class Property(Node):
    def __init__(self, name: str) -> None:
        self.name = self.text = name

    def evaluate(self, props: Properties) -> object:
        return props.get(self.name)


class Negate(Node):
    def __init__(self, operand: Node) -> None:
        self.operand, self.text = operand, f"(- {operand.text})"

    def evaluate(self, props: Properties) -> object:
        value = self.operand.evaluate(props)
        if not isinstance(value, JavaNumber):
            return None
        if value.kind == DOUBLE:
            return JavaNumber(DOUBLE, -value.value)
        low, high = _INT_RANGE if value.kind == INT else _LONG_RANGE
        negated = -int(value.value)
        return JavaNumber(value.kind, low if negated > high else negated)  # Java wraps


class Not(Node):
    is_boolean = True

    def __init__(self, operand: Node) -> None:
        self.operand, self.text = operand, f"(NOT {operand.text})"

    def evaluate(self, props: Properties) -> object:
        value = self.operand.evaluate(props)
        return None if value is None else not value


class BooleanCast(Node):
    """A bare property used as a condition: TRUE only for a ``Boolean`` (never, for a
    property's string value), unknown when the property is absent."""

    is_boolean = True

    def __init__(self, operand: Node) -> None:
        self.operand, self.text = operand, operand.text

    def evaluate(self, props: Properties) -> object:
        value = self.operand.evaluate(props)
        return None if value is None else value is True


class In(Node):
    is_boolean = True

    def __init__(self, operand: Property, items: list[str], negated: bool) -> None:
        self.operand, self.items, self.negated = operand, frozenset(items), negated
        symbol = "NOT IN" if negated else "IN"
        self.text = f"{operand.text} {symbol} ( {', '.join(items)} )"

    def evaluate(self, props: Properties) -> object:
        value = self.operand.evaluate(props)
        if not isinstance(value, str):
            return None
        return (value in self.items) != self.negated


class Compare(Node):
    """``=`` (shown ``==``), ``>``, ``>=``, ``<`` and ``<=``."""

    is_boolean = True
    _VERDICT: ClassVar[dict[str, Callable[[int], bool]]] = {
        "==": lambda c: c == 0,
        ">": lambda c: c > 0,
        ">=": lambda c: c >= 0,
        "<": lambda c: c < 0,
        "<=": lambda c: c <= 0,
    }

    def __init__(self, symbol: str, left: Node, right: Node) -> None:
        self.symbol, self.left, self.right = symbol, left, right
        self.text = f"({left.text} {symbol} {right.text})"

    def evaluate(self, props: Properties) -> object:
        if self.symbol == "==":
            return self._equal(props)
        lv = self.left.evaluate(props)
        if lv is None:
            return None
        rv = self.right.evaluate(props)
        if rv is None:
            return None
        if isinstance(lv, str) and isinstance(rv, str):
            try:
                lv, rv = _parse_double(lv), _parse_double(rv)
            except SqlEvaluationError as exc:
                raise SqlEvaluationError(
                    f"It's illegal to compare string by '>=', '>', '<', '<='. lv={lv}, rv={rv}"
                ) from exc
        return self._VERDICT[self.symbol](compare_values(lv, rv))

    def _equal(self, props: Properties) -> object:
        lv, rv = self.left.evaluate(props), self.right.evaluate(props)
        if (lv is None) != (rv is None):
            return None if lv is None else False
        if lv == rv and type(lv) is type(rv):
            return True
        return compare_values(lv, rv) == 0


class Logic(Node):
    """AND (shown ``&&``) and OR (``||``) with SQL's three-valued logic."""

    is_boolean = True

    def __init__(self, symbol: str, left: Node, right: Node) -> None:
        self.symbol, self.left, self.right = symbol, left, right
        self.text = f"({left.text} {symbol} {right.text})"

    def evaluate(self, props: Properties) -> object:
        decisive = self.symbol == "||"  # OR stops at TRUE, AND at FALSE
        lv = self.left.evaluate(props)
        if lv is decisive:
            return decisive
        rv = self.right.evaluate(props)
        if rv is decisive:
            return decisive
        if lv is None or rv is None:
            return None
        return not decisive
