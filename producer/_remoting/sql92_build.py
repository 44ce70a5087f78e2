"""The expression builders of the SQL92 parser: ``ComparisonExpression.create*``,
``ConstantExpression.createFromDecimal``/``createFloat`` and ``asBooleanExpression`` of
rocketmq-all-4.9.4, each with the check it makes while parsing and the exact text of the
``RuntimeException`` or ``ParseException`` it throws (a broker's 23 remark)."""

from __future__ import annotations

from producer._remoting.sql92_nodes import (
    DOUBLE,
    INT,
    LONG,
    BooleanCast,
    Compare,
    Constant,
    In,
    JavaNumber,
    Logic,
    Node,
    Property,
    SqlEvaluationError,
    compare_values,
    java_double_text,
    value_text,
)

__all__ = [
    "DECIMAL",
    "FALSE",
    "GE",
    "GT",
    "ID",
    "LE",
    "LT",
    "NULL",
    "STRING",
    "TRUE",
    "PARSE_EXCEPTION",
    "SqlParseError",
    "as_boolean",
    "between",
    "create_equal",
    "in_list",
    "is_null",
    "literal",
    "ordering",
]

PARSE_EXCEPTION = "org.apache.rocketmq.filter.parser.ParseException: "
_RUNTIME = "java.lang.RuntimeException: "
# Token kinds the builders meet (SelectorParserConstants).
TRUE, FALSE, NULL, DECIMAL, STRING, ID = 13, 14, 15, 17, 20, 21
GT, GE, LT, LE = 24, 25, 26, 27
_SYMBOL = {GT: ">", GE: ">=", LT: "<", LE: "<="}


class SqlParseError(ValueError):
    """The expression does not compile; ``reason`` is the broker's exact remark."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _runtime(message: str) -> SqlParseError:
    return SqlParseError(_RUNTIME + message)


def literal(kind: int, image: str) -> Node:
    if kind == ID:
        return Property(image)
    if kind == STRING:
        return Constant(image[1:-1].replace("''", "'"))
    if kind in (TRUE, FALSE, NULL):
        return Constant({TRUE: True, FALSE: False, NULL: None}[kind], boolean=True)
    if kind == DECIMAL:
        digits = image.rstrip("lL")
        if int(digits) > 2**63 - 1:
            raise SqlParseError(f'java.lang.NumberFormatException: For input string: "{digits}"')
        return Constant(JavaNumber(INT if int(digits) < 2**31 else LONG, int(digits)))
    value = float(image.rstrip("dDfF"))
    if value > 1.7976931348623157e308:
        raise _runtime(f"{image} is greater than {java_double_text(1.7976931348623157e308)}")
    if value < 5e-324:
        raise _runtime(f"{image} is less than 4.9E-324")
    return Constant(JavaNumber(DOUBLE, value))


def as_boolean(node: Node) -> Node:
    if node.is_boolean:
        return node
    if isinstance(node, Property):
        return BooleanCast(node)
    raise SqlParseError(
        f"{PARSE_EXCEPTION}Expression will not result in a boolean value: {node.text}"
    )


def _check_ordered(node: Node) -> None:
    if isinstance(node, Constant):
        if isinstance(node.value, JavaNumber):
            return
        raise _runtime(f"Value '{node.text}' cannot be compared.")
    if node.is_boolean:
        raise _runtime(f"Value '{node.text}' cannot be compared.")


def ordering(kind: int, left: Node, right: Node) -> Node:
    _check_ordered(left)
    _check_ordered(right)
    return Compare(_SYMBOL[kind], left, right)


def create_equal(left: Node, right: Node) -> Node:
    for side in (left, right):
        if isinstance(side, Constant) and side.value is None:
            raise _runtime(f"'{side.text}' cannot be compared.")
    both_constant = isinstance(left, Constant) and isinstance(right, Constant)
    if both_constant and left.is_boolean and not right.is_boolean:
        raise _runtime(f"'{left.text}' cannot be compared with '{right.text}'")
    return Compare("==", left, right)


def is_null(left: Node) -> Node:
    return Compare("==", left, Constant(None, boolean=True))


def between(value: Node, low: Node, high: Node, *, negated: bool) -> Node:
    if negated:
        return Logic("||", ordering(LT, value, low), ordering(GT, value, high))
    if isinstance(low, Constant) and isinstance(high, Constant):
        lv, rv = low.value, high.value
        if lv is None or rv is None:
            raise _runtime("Illegal values of between, values can not be null!")
        try:
            order = compare_values(rv, lv)
        except SqlEvaluationError as exc:
            text = str(exc)  # a NumberFormatException is wrapped, a ClassCastException not
            raise SqlParseError(text if "ClassCast" in text else _RUNTIME + text) from None
        if order < 0:
            raise _runtime(
                f"Illegal values of between, left value({value_text(lv)}) must less than or "
                f"equal to right value({value_text(rv)})"
            )
    return Logic("&&", ordering(GE, value, low), ordering(LE, value, high))


def in_list(left: Node, items: list[str], *, negated: bool) -> Node:
    if not isinstance(left, Property):
        raise _runtime(f"Expected a property for In expression, got: {left.text}")
    return In(left, items, negated)
