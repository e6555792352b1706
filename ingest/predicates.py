"""Column-versus-literal filters in a normalised form.

`normalise` turns one conjunct of a WHERE or ON condition into a
`RawPredicate` (the column node still unresolved, the operator, the value
nodes), flipping `'x' = col` into `col = 'x'` and rewriting
`datediff(A, dt) < n` into `dt > date_sub(A, n)`. The resolver then maps the
column to the table occurrence it filters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from watershed.ingest.dates import DatePoint, DayRange, date_point, int_value

_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "=",
    exp.NEQ: "<>",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
}
_FLIPPED = {"=": "=", "<>": "<>", ">": "<", ">=": "<=", "<": ">", "<=": ">="}


@dataclass(slots=True)
class RawPredicate:
    column: exp.Column
    op: str
    values: list[exp.Expression]
    #: values already evaluated to dates (datediff rewrites produce these)
    points: list[DatePoint] | None = None


def conjuncts(condition: exp.Expression) -> list[exp.Expression]:
    out: list[exp.Expression] = []
    stack = [condition]
    while stack:
        node = stack.pop()
        cls = type(node)
        if cls is exp.And:
            stack.append(node.expression)
            stack.append(node.this)
        elif cls is exp.Paren:
            stack.append(node.this)
        else:
            out.append(node)
    return out


def disjuncts(condition: exp.Expression) -> list[exp.Expression]:
    out: list[exp.Expression] = []
    stack = [condition]
    while stack:
        node = stack.pop()
        cls = type(node)
        if cls is exp.Or:
            stack.append(node.expression)
            stack.append(node.this)
        elif cls is exp.Paren:
            stack.append(node.this)
        else:
            out.append(node)
    return out


_CONSTANTS = frozenset({exp.Literal, exp.Null, exp.Boolean})
#: `exp.Column` and its subclasses (`Pseudocolumn`)
_COLUMNS = frozenset({exp.Column, *exp.Column.__subclasses__()})


def _literalish(node: exp.Expression) -> bool:
    cls = type(node)
    if cls in _CONSTANTS:
        return True
    return cls not in _COLUMNS and node.find(exp.Column, exp.Select) is None


def _bare_column(node: exp.Expression) -> exp.Column | None:
    cls = type(node)
    while cls is exp.Paren:
        node = node.this
        cls = type(node)
    return cast(exp.Column, node) if cls in _COLUMNS and type(node.this) is not exp.Star else None


def normalise(node: exp.Expression) -> RawPredicate | None:
    """The column-versus-literal predicate `node` is, or None."""
    negated = False
    cls = type(node)
    while cls is exp.Not or cls is exp.Paren:
        if cls is exp.Not:
            negated = not negated
        node = node.this
        cls = type(node)
    op = _COMPARISONS.get(cls)
    if op is not None:
        if negated:
            return None
        left, right = node.this, node.expression
        left_column = _bare_column(left)
        right_column = _bare_column(right)
        if left_column is not None:
            if right_column is not None:
                # `a.k = b.k`: a join key, never a filter (the common case in a WHERE)
                return None
            if _literalish(right):
                return RawPredicate(left_column, op, [right])
        if right_column is not None and _literalish(left):
            return RawPredicate(right_column, _FLIPPED[op], [left])
        return _datediff(left, op, right) or _datediff(right, _FLIPPED[op], left)
    if cls is exp.In:
        column = _bare_column(node.this)
        values = node.expressions
        if column is None or not values or node.args.get("query") is not None:
            return None
        if not all(_literalish(v) for v in values):
            return None
        return RawPredicate(column, "not in" if negated else "in", list(values))
    if cls is exp.Between:
        column = _bare_column(node.this)
        low, high = node.args.get("low"), node.args.get("high")
        if column is None or low is None or high is None or negated:
            return None
        if not (_literalish(low) and _literalish(high)):
            return None
        return RawPredicate(column, "between", [low, high])
    if cls in (exp.Like, exp.ILike, exp.RegexpLike):
        column = _bare_column(node.this)
        if column is None or not _literalish(node.expression):
            return None
        name = {exp.Like: "like", exp.ILike: "ilike", exp.RegexpLike: "rlike"}[cls]
        if node.args.get("negate"):
            negated = not negated
        return RawPredicate(column, f"not {name}" if negated else name, [node.expression])
    if cls is exp.Is and isinstance(node.expression, exp.Null):
        column = _bare_column(node.this)
        if column is None:
            return None
        return RawPredicate(column, "is not null" if negated else "is null", [])
    return None


def _datediff(side: exp.Expression, op: str, other: exp.Expression) -> RawPredicate | None:
    """`datediff(end, start) op n` with the column on one side, as a bound on the column."""
    if not isinstance(side, exp.DateDiff):
        return None
    unit = side.args.get("unit")
    if unit is not None and unit.name.upper() not in ("DAY", "DAYS"):
        return None
    days = int_value(other)
    if days is None:
        return None
    end, start = _unwrap_date(side.this), _unwrap_date(side.expression)
    start_column, end_column = _bare_column(start), _bare_column(end)
    if start_column is not None:
        # end - col op n  <=>  col op' end - n
        anchor = date_point(end)
        if anchor is None:
            return None
        return RawPredicate(start_column, _FLIPPED[op], [], [anchor.shift(-days)])
    if end_column is not None:
        # col - start op n  <=>  col op start + n
        anchor = date_point(start)
        if anchor is None:
            return None
        return RawPredicate(end_column, op, [], [anchor.shift(days)])
    return None


def _unwrap_date(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.TsOrDsToDate | exp.Cast | exp.Paren):
        node = node.this
    return node


def day_range(raw: RawPredicate) -> DayRange | None:
    """The day bounds a predicate puts on a date partition column."""
    if raw.points is not None:
        points = raw.points
    else:
        maybe_points = [date_point(v) for v in raw.values]
        points = [p for p in maybe_points if p is not None]
        if len(points) != len(maybe_points):
            return None
    if not points:
        return None
    op = raw.op
    if op == "=":
        return DayRange(points[0], points[0])
    if op == ">=":
        return DayRange(points[0], None)
    if op == ">":
        return DayRange(points[0].shift(1), None)
    if op == "<=":
        return DayRange(None, points[0])
    if op == "<":
        return DayRange(None, points[0].shift(-1))
    if op == "between":
        return DayRange(points[0], points[1])
    if op == "in":
        anchors = {p.anchor for p in points}
        if len(anchors) != 1:
            return None
        return DayRange(min(points, key=lambda p: p.offset), max(points, key=lambda p: p.offset))
    return None


def render_value(node: exp.Expression, dialect: str) -> tuple[str, str]:
    """(raw value, SQL text) of a literal-like value; dates are evaluated when possible."""
    if isinstance(node, exp.Literal):
        if node.is_string:
            text = node.this
            return text, "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return str(node.this), str(node.this)
    if isinstance(node, exp.Null):
        return "NULL", "NULL"
    point = date_point(node)
    if point is not None:
        return point.value(), point.render()
    sql = _arithmetic_text(node)
    if sql is None:
        sql = _dialect(dialect).generate(node)
    return sql, sql


_ARITHMETIC: dict[type[exp.Expression], str] = {exp.Add: " + ", exp.Sub: " - ", exp.Mul: " * "}


def _arithmetic_text(node: exp.Expression) -> str | None:
    """The text every dialect writes for `2001 + 1` or `-6` (TPC-DS's filters are full of them),
    without the generator's copy of the tree; None for anything else."""
    cls = type(node)
    if cls is exp.Neg:
        inner = node.this
        if type(inner) is exp.Literal and not inner.is_string and str(inner.this).isdigit():
            return f"-{inner.this}"
        return None
    operator = _ARITHMETIC.get(cls)
    if operator is None:
        return None
    left, right = node.this, node.expression
    if (
        type(left) is exp.Literal
        and type(right) is exp.Literal
        and not left.is_string
        and not right.is_string
        and str(left.this).isdigit()
        and str(right.this).isdigit()
        and not node.comments
        and not left.comments
        and not right.comments
    ):
        return f"{left.this}{operator}{right.this}"
    return None


_DIALECTS: dict[str, Dialect] = {}


def _dialect(name: str) -> Dialect:
    # `node.sql(dialect=name)` builds a Dialect on every call; one per name does.
    found = _DIALECTS.get(name)
    if found is None:
        found = _DIALECTS[name] = Dialect.get_or_raise(name)
    return found
