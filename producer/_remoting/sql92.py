"""SQL92 message filters: RocketMQ's selector grammar, parsed as a 4.9.4 broker parses it.

``compile_sql92("a > 5 AND b = 'x'")`` returns the expression tree
(:mod:`producer._remoting.sql92_nodes`) or raises :class:`SqlParseError` whose ``reason``
is the text a broker answers 23 SUBSCRIPTION_PARSE_FAILED with (docs/consuming.md 7).
The grammar is ``SelectorParser.jj`` of rocketmq-all-4.9.4: comparisons (``= <> > >= <
<=``), ``[NOT] BETWEEN x AND y``, ``[NOT] IN ('a', ...)``, ``IS [NOT] NULL``,
``AND``/``OR``/``NOT``, unary ``-``, string, integer and decimal literals, ``TRUE``,
``FALSE`` and ``NULL``; keywords in any case; ``--`` and ``/* */`` comments.

Its quirks are kept, because the broker has them: the parser stops at the first token
that cannot continue the expression and ignores the rest (``"a > 5 b"`` is ``a > 5``),
and tokens are read one at a time, so a character no token starts with is an error only
when the parser reaches it. Error texts are JavaCC's ``ParseException`` and
``TokenMgrError`` messages, and the ``RuntimeException``s of the expression builders.
"""

from __future__ import annotations

import re

from producer._remoting.sql92_build import (
    DECIMAL,
    FALSE,
    GE,
    GT,
    ID,
    LE,
    LT,
    NULL,
    PARSE_EXCEPTION,
    STRING,
    TRUE,
    SqlParseError,
    as_boolean,
    between,
    create_equal,
    in_list,
    is_null,
    literal,
    ordering,
)
from producer._remoting.sql92_nodes import Logic, Negate, Node, Not

__all__ = ["compile_sql92"]

_LEXICAL = "org.apache.rocketmq.filter.parser.TokenMgrError: "

# Token kinds of SelectorParserConstants (those the builders meet are theirs), and their
# images for error messages.
EOF, NOT, AND, OR, BETWEEN, IN, IS, FLOAT = 0, 8, 9, 10, 11, 12, 16, 18
EQ, NE, LPAREN, COMMA, RPAREN, PLUS, MINUS = 22, 23, 28, 29, 30, 31, 32
_IMAGES = {EOF: "<EOF>", DECIMAL: "<DECIMAL_LITERAL>", FLOAT: "<FLOATING_POINT_LITERAL>"}
_IMAGES |= {STRING: "<STRING_LITERAL>", ID: "<ID>"}
_KEYWORDS = {"NOT": NOT, "AND": AND, "OR": OR, "BETWEEN": BETWEEN, "IN": IN, "TRUE": TRUE}
_KEYWORDS |= {"FALSE": FALSE, "NULL": NULL, "IS": IS}
_SYMBOLS = {"=": EQ, "<>": NE, ">": GT, ">=": GE, "<": LT, "<=": LE, "(": LPAREN, ",": COMMA}
_SYMBOLS |= {")": RPAREN, "+": PLUS, "-": MINUS}
for _word, _word_kind in (_KEYWORDS | _SYMBOLS).items():
    _IMAGES[_word_kind] = f'"{_word}"'

_TOKEN = re.compile(
    r"(?P<skip>[ \t\n\r\f]+|--[^\n\r]*(?:\r\n|\n|\r)|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/)"
    r"|(?P<float>[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?"
    r"|[0-9]+[eE][+-]?[0-9]+)"
    r"|(?P<decimal>(?:0|[1-9][0-9]*[lL]?))"
    r"|(?P<string>'(?:''|[^'])*')"
    r"|(?P<id>[a-zA-Z_$][a-zA-Z0-9_$]*)"
    r"|(?P<symbol><>|>=|<=|[=<>(),+-])"
)
# First sets the parser checks: an operand (unaryExpr/primaryExpr), and the loops that
# may continue an expression after an operand.
_OPERAND = (NOT, TRUE, FALSE, NULL, DECIMAL, FLOAT, STRING, ID, LPAREN, MINUS)
_COMPARISON = (NOT, BETWEEN, IN, GT, GE, LT, LE)


class _Token:
    __slots__ = ("column", "image", "kind", "line")

    def __init__(self, kind: int, image: str, line: int, column: int) -> None:
        self.kind, self.image, self.line, self.column = kind, image, line, column


class _Lexer:
    """``SelectorParserTokenManager``: longest match, keywords before identifiers; lines
    and columns as ``SimpleCharStream`` counts them (a tab to the next multiple of 8)."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line, self.column = text, 0, 1, 0
        self._cr = self._lf = False

    def _advance(self, chunk: str) -> None:
        for char in chunk:
            self.column += 1
            if self._lf:
                self._lf, self.line, self.column = False, self.line + 1, 1
            elif self._cr:
                self._cr = False
                if char == "\n":
                    self._lf = True
                else:
                    self.line, self.column = self.line + 1, 1
            if char == "\r":
                self._cr = True
            elif char == "\n":
                self._lf = True
            elif char == "\t":
                self.column = self.column - 1 + (8 - (self.column - 1) % 8)

    def next(self) -> _Token:
        while True:
            if self.pos >= len(self.text):  # at the last character read (none: 0, 0)
                return _Token(EOF, "", self.line if self.pos else 0, self.column)
            match = _TOKEN.match(self.text, self.pos)
            if match is None:
                raise self._error()
            image = match.group()
            self.pos = match.end()
            start_line, start_column = self.line, self.column + 1
            self._advance(image)
            if match.lastgroup != "skip":
                return _Token(_kind(match.lastgroup, image), image, start_line, start_column)

    def _error(self) -> SqlParseError:
        """``TokenMgrError``: the token manager read the longest prefix that could still
        become a token (``.``, an unclosed ``'...`` or ``/*...``), then failed on the
        character after it, or on the end of the text."""
        rest = self.text[self.pos :]
        prefix = _viable_prefix(rest)
        if prefix == len(rest) or prefix == len(rest) - 1:  # the end was read: <EOF>
            seen = rest[: prefix + 1]
            self._advance(seen)
            after = seen if len(seen) > 1 else ""
            line, column = self.line, self.column + 1
            if seen[-1] in "\r\n":
                line, column = line + 1, 0
            return SqlParseError(
                f"{_LEXICAL}Lexical error at line {line}, column {column}.  "
                f'Encountered: <EOF> after : "{_escape(after)}"'
            )
        self._advance(rest[: prefix + 1])
        char = rest[prefix]
        return SqlParseError(
            f"{_LEXICAL}Lexical error at line {self.line}, column {self.column}.  "
            f'Encountered: "{_escape(char)}" ({ord(char)}), after : "{_escape(rest[:prefix])}"'
        )


def _viable_prefix(rest: str) -> int:
    """How many characters of ``rest`` the token manager reads before it cannot go on."""
    if rest.startswith("'") or rest.startswith("/*"):
        return len(rest)  # an unclosed string or comment: every character may belong
    return 1 if rest[:1] in (".", "/") else 0


def _kind(group: str | None, image: str) -> int:
    if group == "id":
        return _KEYWORDS.get(image.upper(), ID)
    if group == "symbol":
        return _SYMBOLS[image]
    return {"float": FLOAT, "decimal": DECIMAL, "string": STRING}[group or ""]


def _escape(text: str) -> str:
    """JavaCC's ``add_escapes``."""
    out = []
    for char in text:
        named = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}.get(char)
        if char == "\0":
            continue
        if named:
            out.append(named)
        elif char in "\"'\\":
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) > 0x7E:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def compile_sql92(text: str) -> Node:
    """The expression tree of ``text``, or :class:`SqlParseError` with the broker's remark."""
    return _Parser(text).selector()


class _Parser:
    """``SelectorParser``: recursive descent over lazily read tokens. As JavaCC does, it
    notes at each token position the kinds it looked for and did not find; a syntax
    error lists them ("Was expecting one of: ...")."""

    def __init__(self, text: str) -> None:
        self._lexer = _Lexer(text)
        self._ahead: list[_Token] = []
        self._previous = _Token(EOF, "", 1, 0)
        self._expected: set[int] = set()

    # -- tokens --------------------------------------------------------------------------

    def _peek(self, depth: int = 0) -> _Token:
        while len(self._ahead) <= depth:
            if self._ahead and self._ahead[-1].kind == EOF:
                return self._ahead[-1]
            self._ahead.append(self._lexer.next())
        return self._ahead[depth]

    def _next_is(self, *kinds: int) -> int | None:
        """The next token's kind if it is one of ``kinds``; else note them as expected."""
        kind = self._peek().kind
        if kind in kinds:
            return kind
        self._expected.update(kinds)
        return None

    def _consume(self, kind: int) -> _Token:
        token = self._peek()
        if token.kind != kind:
            self._expected.add(kind)
            raise self._syntax_error()
        self._previous = self._ahead.pop(0)
        self._expected = set()
        return token

    def _syntax_error(self) -> SqlParseError:
        first = self._peek()
        if first.kind == EOF:
            shown = _IMAGES[EOF]
        else:
            shown = f' {_IMAGES[first.kind]} "{_escape(first.image)} "'
        lines = "".join(f"{_IMAGES[kind]} ...\n    " for kind in sorted(self._expected))
        heading = "Was expecting:" if len(self._expected) == 1 else "Was expecting one of:"
        return SqlParseError(
            f'{PARSE_EXCEPTION}Encountered "{shown}" at line {first.line}, column {first.column}.\n'
            f"{heading}\n    {lines}"
        )

    # -- grammar -------------------------------------------------------------------------

    def selector(self) -> Node:
        return as_boolean(self._or())

    def _or(self) -> Node:
        left = self._and()
        while self._next_is(OR):
            self._consume(OR)
            right = self._and()  # Java parses the right side before either cast
            left = Logic("||", as_boolean(left), as_boolean(right))
        return left

    def _and(self) -> Node:
        left = self._equality()
        while self._next_is(AND):
            self._consume(AND)
            right = self._equality()
            left = Logic("&&", as_boolean(left), as_boolean(right))
        return left

    def _equality(self) -> Node:
        left = self._comparison()
        while kind := self._next_is(IS, EQ, NE):
            if kind != IS:
                self._consume(kind)
                equal = create_equal(left, self._comparison())
                left = equal if kind == EQ else Not(equal)
                continue
            self._expected.update((EQ, NE))
            self._consume(IS)
            if self._peek().kind == NULL:
                self._consume(NULL)
                left = is_null(left)
            else:
                self._consume(NOT)
                self._consume(NULL)
                left = Not(is_null(left))
        return left

    def _comparison(self) -> Node:
        left = self._unary()
        while kind := self._next_is(*_COMPARISON):
            if kind == NOT:
                kind = self._not_what()
            if kind in (GT, GE, LT, LE):
                self._consume(kind)
                left = ordering(kind, left, self._unary())
            elif kind == BETWEEN:
                self._consume(BETWEEN)
                low = self._unary()
                self._consume(AND)
                left = between(left, low, self._unary(), negated=bool(self._negated))
            else:
                self._consume(IN)
                left = in_list(left, self._string_list(), negated=bool(self._negated))
            self._negated = False
        return left

    _negated = False

    def _not_what(self) -> int:
        """``NOT BETWEEN`` or ``NOT IN`` (JavaCC's LOOKAHEAD(2)); else a syntax error."""
        self._expected.update((BETWEEN, IN, GT, GE, LT, LE))
        follower = self._peek(1).kind
        if follower not in (BETWEEN, IN):
            raise self._syntax_error()
        self._consume(NOT)
        self._negated = True
        return follower

    def _string_list(self) -> list[str]:
        self._consume(LPAREN)
        items = [self._string()]
        while self._next_is(COMMA):
            self._consume(COMMA)
            items.append(self._string())
        self._consume(RPAREN)
        return items

    def _string(self) -> str:
        return self._consume(STRING).image[1:-1].replace("''", "'")

    def _unary(self) -> Node:
        kind = self._peek().kind
        if kind == PLUS and self._peek(1).kind in (*_OPERAND, PLUS):
            self._consume(PLUS)
            return self._unary()
        if kind == MINUS:
            self._consume(MINUS)
            return Negate(self._unary())
        if kind == NOT:
            self._consume(NOT)
            return Not(as_boolean(self._unary()))
        return self._primary()

    def _primary(self) -> Node:
        token = self._peek()
        if token.kind == LPAREN:
            self._consume(LPAREN)
            inner = self._or()
            self._consume(RPAREN)
            return inner
        if token.kind not in _OPERAND or token.kind in (NOT, MINUS):
            self._expected.update(_OPERAND)
            raise self._syntax_error()
        self._consume(token.kind)
        return literal(token.kind, token.image)
