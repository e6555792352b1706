"""Row conditions of grants, and when a query's row conditions imply them.

A row-scoped grant (`app = 'douyin'`, `dt >= '2024-01-01'`) covers a cell only if every row
the cell reads satisfies the grant's condition, i.e. the cell's conditions (a conjunction,
`ingest.points`) imply it. How that is decided:

- A grant condition is a conjunction (AND) of comparisons of one column of the grant's table
  with constants: `=`, `<>`/`!=`, `<`, `<=`, `>`, `>=`, `IN (...)`, `NOT IN (...)`,
  `BETWEEN a AND b` (the constant may stand on either side). Anything else (OR, functions,
  two columns, LIKE, IS NULL, subqueries) is refused when the grant is made, naming the text.
  Every part of the grant's conjunction must be implied.
- For one grant part on column `c`, only the query's conditions on `c` count (a condition on
  another column never implies anything about `c`). Of those, `=`/`IN` give a finite set of
  values (intersected when there are several) and `<`, `<=`, `>`, `>=`, `BETWEEN` give an
  interval (intersected); every other operator of the query (`<>`, `NOT IN`, LIKE, IS NOT
  NULL, ...) is ignored, which can only make the query's rows look wider.
- With a finite set, the grant part is implied when every value of the set (that lies in the
  interval) satisfies it; an empty set (a contradiction) reads no row and implies anything.
  Without a set, an interval implies a range part when it lies inside the part's range, an
  `=`/`IN` part only when it is a single point of the part's values, a `<>`/`NOT IN` part
  when none of the part's values lies in it. No set and no interval (unbounded): not implied.
- The column's type is not consulted, and Spark compares a string column as text (`'10' < '2'`,
  `'01' <> '1'`) and a numeric one as numbers. So two numbers are ordered only where both
  readings agree (`2023` < `2024`; `10` and `2` are not ordered), are surely equal only when
  written alike and surely different only when different as numbers too (`01` may equal `1`);
  ISO dates (`YYYY-MM-DD`) and timestamps (`YYYY-MM-DD HH:MM:SS[.f]`) order as written; any
  other text compares only for equality, exactly (case-sensitive, as Spark does).

Conservative (answers "not implied" where a finer analysis could say yes): an order
comparison between text values, or between a date and a timestamp, is never decided (no
range on free text); a query's OR, `<>`, NOT IN, LIKE or a function of the column gives
nothing; a half-open query range never implies an `=`/`IN` grant; numbers whose text and
numeric orders differ are not ordered. Implication is per grant: two grants whose
conditions together cover a query (`app = 'a'` and `app = 'b'` for `app IN ('a', 'b')`) do
not combine; ask for one grant with `app IN ('a', 'b')`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from watershed.api.service.authz.errors import AuthzError
from watershed.graph.authz import RowCondition

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d+)?$")
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "<>": "<>"}
_OPS = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_RANGE = ("<", "<=", ">", ">=", "between")


# ------------------------------------------------------------------ parsing a grant's condition


def _constant(node: exp.Expression, text: str) -> str:
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return "-" + node.this.name
    if isinstance(node, exp.Literal):
        return node.name
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
        # DATE '2024-01-01', CAST('2024-01-01' AS DATE)
        return node.this.name
    raise AuthzError(f"condition {text!r}: {node.sql('spark')!r} is not a constant")


def _column(node: exp.Expression) -> str | None:
    return node.name.lower() if isinstance(node, exp.Column) and node.name else None


def _part(node: exp.Expression, text: str) -> RowCondition:
    written = node.sql("spark")
    negated = isinstance(node, exp.Not)
    inner = node.this if negated else node
    if isinstance(inner, exp.Paren):
        return _part(inner.this, text) if not negated else _part(exp.Not(this=inner.this), text)
    if isinstance(inner, exp.In) and _column(inner.this) and not inner.args.get("query"):
        values = [_constant(v, text) for v in inner.expressions]
        if not values:
            raise AuthzError(f"condition {text!r}: IN needs at least one value")
        return RowCondition(
            column=_column(inner.this), op="not in" if negated else "in", values=values, text=written
        )
    if isinstance(inner, exp.Between) and _column(inner.this) and not negated:
        low, high = _constant(inner.args["low"], text), _constant(inner.args["high"], text)
        return RowCondition(column=_column(inner.this), op="between", values=[low, high], text=written)
    op = _OPS.get(type(inner))
    if op is not None and not negated:
        left, right = inner.this, inner.expression
        if _column(left) and not _column(right):
            return RowCondition(column=_column(left), op=op, values=[_constant(right, text)], text=written)
        if _column(right) and not _column(left):
            return RowCondition(
                column=_column(right), op=_FLIP[op], values=[_constant(left, text)], text=written
            )
    raise AuthzError(
        f"condition {text!r}: {written!r} is not a column compared with constants "
        "(=, <>, <, <=, >, >=, IN, NOT IN, BETWEEN; parts joined by AND)"
    )


def parse_condition(text: str, columns: Iterable[str] | None = None) -> list[RowCondition]:
    """The conjunction a grant's condition text stands for; AuthzError naming the text when it is
    not one. `columns` (the table's column names), when given, must hold every column it names."""
    if not text or not text.strip():
        raise AuthzError("condition: empty")
    try:
        tree = sqlglot.parse_one(text, read="spark", into=exp.Condition)
    except (SqlglotError, ValueError) as exc:
        raise AuthzError(f"condition {text!r}: cannot parse it: {str(exc).splitlines()[0]}") from None
    parts: list[RowCondition] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.Paren) and isinstance(node.this, exp.And):
            node = node.this
        if isinstance(node, exp.And):
            stack.extend([node.expression, node.this])
            continue
        parts.append(_part(node, text))
    if columns is not None:
        known = {c.lower() for c in columns}
        for part in parts:
            if part.column not in known:
                raise AuthzError(f"condition {text!r}: the table has no column {part.column!r}")
    return parts


# ------------------------------------------------------------------ comparing values


def _number(value: str) -> Decimal | None:
    try:
        number = Decimal(value.strip())
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def _kind(value: str) -> str:
    if _number(value) is not None:
        return "number"
    if _DATE.match(value):
        return "date"
    if _TIMESTAMP.match(value):
        return "timestamp"
    return "text"


def _compare(a: str, b: str) -> int | None:
    """-1, 0 or 1; None when the two values cannot be ordered (see the module docstring)."""
    kind_a, kind_b = _kind(a), _kind(b)
    if kind_a != kind_b or kind_a == "text":
        return None
    if kind_a == "number":
        # A string column compares as text ('10' < '2', '01' <> '1') and a numeric one as numbers;
        # the column's and the literal's types are not known here, so only an order both agree on holds.
        x, y = _number(a), _number(b)
        numeric = (x > y) - (x < y)
        return numeric if numeric == (a > b) - (a < b) else None
    if kind_a == "timestamp":
        a, b = a.replace("T", " "), b.replace("T", " ")
    return (a > b) - (a < b)


def _equal(a: str, b: str) -> bool:
    """Equal however the column is typed (as text and, for numbers, as numbers)."""
    order = _compare(a, b)
    return a == b if order is None else order == 0


def _may_equal(a: str, b: str) -> bool:
    """Equal under some typing of the column: `'01'` and `'1'` may be one number."""
    if a == b:
        return True
    x, y = _number(a), _number(b)
    if x is not None and y is not None:
        return x == y
    return _kind(a) == _kind(b) == "timestamp" and a.replace("T", " ") == b.replace("T", " ")


class _Bound:
    """One end of an interval: a value and whether it is included (None value: unbounded)."""

    __slots__ = ("closed", "value")

    def __init__(self, value: str | None = None, closed: bool = True) -> None:
        self.value, self.closed = value, closed


def _tighter_low(current: _Bound, value: str, closed: bool) -> _Bound | None:
    if current.value is None:
        return _Bound(value, closed)
    order = _compare(value, current.value)
    if order is None:
        return None
    if order > 0 or (order == 0 and not closed):
        return _Bound(value, closed)
    return current


def _tighter_high(current: _Bound, value: str, closed: bool) -> _Bound | None:
    if current.value is None:
        return _Bound(value, closed)
    order = _compare(value, current.value)
    if order is None:
        return None
    if order < 0 or (order == 0 and not closed):
        return _Bound(value, closed)
    return current


def _bounds(condition: RowCondition) -> list[tuple[str, str, bool]]:
    """A range condition as ("low"|"high", value, closed) bounds."""
    op, values = condition.op, condition.values
    if op == "between" and len(values) == 2:
        return [("low", values[0], True), ("high", values[1], True)]
    if op in ("<", "<=") and values:
        return [("high", values[0], op == "<=")]
    if op in (">", ">=") and values:
        return [("low", values[0], op == ">=")]
    return []


def _satisfies(value: str, part: RowCondition) -> bool | None:
    """Whether one value satisfies a grant part; None when it cannot be decided."""
    if part.op in ("=", "in"):
        return any(_equal(value, v) for v in part.values)
    if part.op in ("<>", "not in"):
        return not any(_may_equal(value, v) for v in part.values)
    for side, bound, closed in _bounds(part):
        order = _compare(value, bound)
        if order is None:
            return None
        if side == "low" and (order < 0 or (order == 0 and not closed)):
            return False
        if side == "high" and (order > 0 or (order == 0 and not closed)):
            return False
    return True


def _inside(low: _Bound, high: _Bound, part: RowCondition) -> bool:
    """Whether the interval [low, high] lies inside a grant part's range."""
    for side, bound, closed in _bounds(part):
        edge = low if side == "low" else high
        if edge.value is None:
            return False
        order = _compare(edge.value, bound)
        if order is None:
            return False
        if side == "low" and (order < 0 or (order == 0 and closed is False and edge.closed)):
            return False
        if side == "high" and (order > 0 or (order == 0 and closed is False and edge.closed)):
            return False
    return True


def _in_interval(value: str, low: _Bound, high: _Bound) -> bool | None:
    for side, edge in (("low", low), ("high", high)):
        if edge.value is None:
            continue
        order = _compare(value, edge.value)
        if order is None:
            return None
        if side == "low" and (order < 0 or (order == 0 and not edge.closed)):
            return False
        if side == "high" and (order > 0 or (order == 0 and not edge.closed)):
            return False
    return True


def _implies_part(query: list[RowCondition], part: RowCondition) -> bool:
    on_column = [c for c in query if c.column.lower() == part.column.lower()]
    values: list[str] | None = None
    low, high = _Bound(), _Bound()
    for condition in on_column:
        if condition.op in ("=", "in"):
            found = list(condition.values)
            # a value is dropped only when it cannot equal any of `found`, however the column is typed
            values = found if values is None else [v for v in values if any(_may_equal(v, w) for w in found)]
        elif condition.op in _RANGE:
            for side, bound, closed in _bounds(condition):
                tighter = (_tighter_low if side == "low" else _tighter_high)(
                    low if side == "low" else high, bound, closed
                )
                if tighter is None:
                    continue  # an incomparable bound is ignored: the rows look wider
                if side == "low":
                    low = tighter
                else:
                    high = tighter
    if values is not None:
        kept = []
        for value in values:
            inside = _in_interval(value, low, high)
            if inside is not False:  # undecidable: kept, the rows look wider
                kept.append(value)
        return all(_satisfies(v, part) is True for v in kept)
    if low.value is None and high.value is None:
        return False
    if part.op in _RANGE:
        return _inside(low, high, part)
    if part.op in ("=", "in"):
        if low.value is None or high.value is None or not (low.closed and high.closed):
            return False
        return _equal(low.value, high.value) and _satisfies(low.value, part) is True
    if part.op in ("<>", "not in"):
        return all(_in_interval(v, low, high) is False for v in part.values)
    return False


def implies(query: list[RowCondition], grant: list[RowCondition]) -> bool:
    """Whether every row satisfying the conjunction `query` satisfies the conjunction `grant`
    (see the module docstring for how, and where it answers no although yes would be right)."""
    return all(_implies_part(query, part) for part in grant)
