"""Post-compute masking: wrap a query's outermost projection in masks, nothing else.

The original query runs untouched as a subquery; an outer SELECT picks its columns by
position and masks some of them:

    SELECT _ws_q._ws_c0 AS id, UPPER(SHA2(CAST(_ws_q._ws_c1 AS STRING), 256)) AS email
    FROM (<original query>) AS _ws_q(_ws_c0, _ws_c1)

So WHERE, JOIN, GROUP BY, ORDER BY, windows and aggregates all run on raw values, and
the results differ from the raw query's only in the masked values. The subquery's column
alias list renames its outputs by position, which is what makes duplicate names
(`a.id, b.id`), unaliased expressions (`upper(name)`) and star expansions addressable
without touching the original query (its ORDER BY / GROUP BY alias references stay
valid). ORDER BY and LIMIT stay inside: Spark keeps a sort's order through a projection.
A top-level WITH moves to the outer query (Spark reads it from there as well); INSERT …
SELECT and CREATE TABLE … AS SELECT have their query part wrapped.

The masks are the ORC column masks (`orc_crypto/masking`) written as Spark SQL. redact and
sha256 return strings (ORC keeps an integer column's type under redact; a projection
cannot, without knowing the type); nullify keeps the column's type.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.generator import Generator

from watershed.graph.authz import OutputColumn
from watershed.graph.errors import WatershedError
from watershed.ingest.dialects import dialect_generator
from watershed.ingest.points import QueryError, parse_query

MASKS = ("nullify", "sha256", "redact")

_ALIAS = "_ws_q"
_COLUMN = "_ws_c{}"


class RewriteError(WatershedError, ValueError):
    """A query cannot be rewritten with masks: unknown mask, outputs that do not describe it, a
    statement without a query. The message names the bad input (never the SQL text)."""


def mask_expression(mask: str, value_sql: str) -> str:
    """Spark SQL computing `mask` over the expression `value_sql`, as ORC's mask of that name would."""
    if mask == "sha256":
        # ORC: uppercase hex SHA-256 of the string's UTF-8 bytes; NULL stays NULL
        return f"upper(sha2(CAST({value_sql} AS STRING), 256))"
    if mask == "redact":
        # ORC's redact,Xx9_______: upper-case letters X, lower-case x, decimal digits 9, the rest
        # kept (ORC's default also replaces symbols, punctuation, other letters and numbers)
        # (Spark's mask: NULL as a replacement keeps that class of characters)
        return f"mask(CAST({value_sql} AS STRING), 'X', 'x', '9', NULL)"
    if mask == "nullify":
        # NULL of the value's own type (NULLIF cannot compare maps; a bare NULL is of type void)
        return f"IF(FALSE, {value_sql}, NULL)"
    raise RewriteError(f"unknown mask {mask!r}: expected one of {', '.join(MASKS)}")


def _query_part(statement: exp.Expression) -> tuple[exp.Expression, exp.Expression | None]:
    """The query a statement returns or writes, and the statement holding it (None: it is the query)."""
    if isinstance(statement, exp.Query):
        return statement, None
    if isinstance(statement, (exp.Insert, exp.Create)) and isinstance(
        statement.args.get("expression"), exp.Query
    ):
        return statement.args["expression"], statement
    raise RewriteError(
        f"cannot mask a {statement.key.upper()} statement: only a query, INSERT … SELECT or CREATE … AS "
        "SELECT returns or writes masked values"
    )


def _check(outputs: list[OutputColumn], masks: dict[int, str]) -> list[OutputColumn]:
    ordered = sorted(outputs, key=lambda o: o.position)
    positions = [o.position for o in ordered]
    if len(set(positions)) != len(positions):
        raise RewriteError(f"output positions repeat: {positions}")
    unknown = sorted(set(masks) - set(positions))
    if unknown:
        raise RewriteError(f"masks name output positions {unknown} the outputs do not have ({positions})")
    for position, mask in sorted(masks.items()):
        if mask not in MASKS:
            raise RewriteError(
                f"unknown mask {mask!r} for output {position}: expected one of {', '.join(MASKS)}"
            )
    return ordered


def _first_projection(query: exp.Expression) -> list[exp.Expression] | None:
    """The outermost projection as written (the first branch of a set operation names the columns)."""
    while isinstance(query, (exp.SetOperation, exp.Subquery)):
        query = query.this
    return query.expressions if isinstance(query, exp.Select) else None


def _names(query: exp.Expression, ordered: list[OutputColumn]) -> list[str]:
    """Output names as Spark gives them: an alias or a column as written (Spark keeps its case,
    `SELECT ID` returns `ID`) where the outputs name it the same up to case, else the outputs' name."""
    names = [o.name for o in ordered]
    items = _first_projection(query)
    if items is None or len(items) != len(names) or any(i.is_star for i in items):
        return names
    for i, item in enumerate(items):
        written = (
            item.alias if isinstance(item, exp.Alias) else item.name if isinstance(item, exp.Column) else None
        )
        if written and written.lower() == names[i].lower():
            names[i] = written
    return names


def masked_query(
    sql: str,
    outputs: list[OutputColumn],
    masks: dict[int, str],
    *,
    dialect: str = "spark",
    statement: exp.Expression | None = None,
) -> str:
    """`sql` with the outputs at the positions in `masks` masked after everything else is computed.

    `outputs` is the query's outermost projection, all of it, in the engine's names
    (`QueryPoints.columns`); an alias or column written in another case keeps the case it is
    written in, as Spark does. Empty `masks` → `sql` unchanged. `statement` is `sql` already
    parsed (`ingest.points.parse_query`), so the query on every check is parsed once; it is not
    changed.

    A query is wrapped as text: the user's SQL runs exactly as written, never as sqlglot renders
    it again (and nothing is generated but the outer projection). INSERT … SELECT and CREATE …
    AS SELECT are rendered from the tree, with their query part wrapped.
    """
    if not masks:
        return sql
    ordered = _check(outputs, masks)
    if statement is None:
        statement = _parse(sql, dialect)
    query, holder = _query_part(statement)
    names = [_COLUMN.format(i) for i in range(len(ordered))]
    generator = dialect_generator(dialect.strip().lower())
    items = ", ".join(
        _item(name, output_name, masks.get(output.position), generator)
        for name, output, output_name in zip(names, ordered, _names(query, ordered), strict=True)
    )
    alias = f"{_ALIAS}({', '.join(names)})"
    if holder is None:
        # the newline ends a trailing `--` comment of the user's text
        return f"SELECT {items} FROM (\n{_without_terminator(sql)}\n) AS {alias}"
    inner = query.copy()
    with_ = inner.args.get("with_")
    if with_ is not None:
        # a WITH on the query part of an INSERT belongs to the outer query (Spark reads it there)
        inner.set("with_", None)
    outer = sqlglot.parse_one(f"SELECT {items} FROM (SELECT 1) AS {alias}", read=dialect)
    outer.args["from_"].this.set("this", inner)
    if with_ is not None:
        outer.set("with_", with_)
    holder = holder.copy()
    holder.set("expression", outer)
    try:
        return holder.sql(dialect)
    except RecursionError:
        # sqlglot's generator recurses once per level of a left-deep operator chain: a statement
        # the analysis took can still be too deep to render; refused, never sent unmasked
        raise RewriteError("the statement is nested too deeply to render its masked form") from None


def _parse(sql: str, dialect: str) -> exp.Expression:
    try:
        return parse_query(sql, dialect=dialect)
    except QueryError as exc:
        raise RewriteError(str(exc)) from None


def _item(name: str, output_name: str, mask: str | None, generator: Generator) -> str:
    reference = f"{_ALIAS}.{name}"
    value = reference if mask is None else mask_expression(mask, reference)
    return f"{value} AS {generator.generate(exp.to_identifier(output_name, quoted=True), copy=False)}"


def _without_terminator(sql: str) -> str:
    text = sql.rstrip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    return text
