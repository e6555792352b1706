"""Where, in a task's SQL text, a target column's expression is written: the select item (with its
alias) that the statement writing the column's table puts at the column's place: an INSERT fills
its column list, else the table's columns in order less the partitions it writes statically, by
position; where those are not known (a CREATE ... AS SELECT, a table without a known column
order), the item named after the column.

The lineage records no text positions (a task's lineage is rows of columns, not of text), so this
reads the SQL again when a steward asks which part of a task made a column. sqlglot keeps the
character offsets of the tokens it parsed; a select item's span runs from the token after the
comma (or SELECT) before it to the token before the comma (or clause) after it, at its own depth
of parentheses. A `*`, a select list of another length than the columns it fills, or SQL that does
not parse gives no span (an empty list), never a wrong one.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token, TokenType

from watershed.graph import ids

#: tokens that end a select item at its own depth (a clause after the select list, the next item)
_ITEM_END = {
    TokenType.COMMA,
    TokenType.SEMICOLON,
    TokenType.FROM,
    TokenType.WHERE,
    TokenType.GROUP_BY,
    TokenType.ORDER_BY,
    TokenType.HAVING,
    TokenType.LIMIT,
    TokenType.UNION,
    TokenType.INTERSECT,
    TokenType.EXCEPT,
    TokenType.WINDOW,
    TokenType.CLUSTER_BY,
    TokenType.DISTRIBUTE_BY,
    TokenType.SORT_BY,
    TokenType.INTO,
}
#: tokens that open a select list: an item starts after them (or after a comma)
_ITEM_START = {TokenType.SELECT, TokenType.DISTINCT, TokenType.ALL, TokenType.COMMA}


def expression_spans(
    sql: str, dialect: str, column_id: str, order: list[str] | None = None
) -> list[tuple[int, int]]:
    """[start, end) offsets in `sql` of each select item that writes `column_id` (several for a
    UNION); the statements are those writing the column's table. `order`: the table's column
    names in the order an INSERT without a column list fills them (data, then partition columns)."""
    *table_parts, column = ids.split(column_id.lower())
    try:
        statements = sqlglot.parse(sql, read=dialect)
        tokens = sqlglot.tokenize(sql, read=dialect)
    except (SqlglotError, ValueError):  # ValueError: a dialect sqlglot does not know
        return []
    spans = []
    for statement in statements:
        if statement is None or not _writes(statement, table_parts):
            continue
        filled = _filled(statement, order)
        for select in _output_selects(statement.expression):
            item = _item_of(select, column, filled)
            span = None if item is None else _item_span(item, tokens)
            if span is not None:
                spans.append(span)
    return sorted(set(spans))


def _filled(statement: exp.Expression, order: list[str] | None) -> list[str] | None:
    """The columns an INSERT's select items fill, in order, when known (a CREATE ... AS SELECT
    names its columns after its items)."""
    target = statement.this
    if isinstance(target, exp.Schema):
        return [column.name.lower() for column in target.expressions]
    if order is None or not isinstance(statement, exp.Insert):
        return None
    partition = target.args.get("partition") if isinstance(target, exp.Table) else None
    written = partition.expressions if partition else []
    static = {eq.this.name.lower() for eq in written if isinstance(eq, exp.EQ)}
    return [name.lower() for name in order if name.lower() not in static]


def _item_of(select: exp.Select, column: str, filled: list[str] | None) -> exp.Expression | None:
    """The item that writes `column`: the one at its place when the places are known (an INSERT
    fills columns by position, whatever its items are named), else the one named after it."""
    items = select.expressions
    if any(isinstance(item, exp.Star) for item in items):
        return None
    if filled is not None and len(items) == len(filled):
        return items[filled.index(column)] if column in filled else None
    return next((item for item in items if item.alias_or_name.lower() == column), None)


def _writes(statement: exp.Expression, table_parts: list[str]) -> bool:
    if not isinstance(statement, (exp.Insert, exp.Create)):
        return False
    table = statement.this.find(exp.Table) if statement.this is not None else None
    if table is None or table.name.lower() != table_parts[-1]:
        return False
    # a table named without its database is the task's default database: its name is enough
    return not table.db or table.db.lower() == table_parts[0]


def _output_selects(query: exp.Expression | None) -> list[exp.Select]:
    """The SELECTs whose items are the statement's output columns (each side of a set operation)."""
    if isinstance(query, exp.Select):
        return [query]
    if isinstance(query, exp.SetOperation):
        return _output_selects(query.left) + _output_selects(query.right)
    if isinstance(query, exp.Subquery):
        return _output_selects(query.this)
    return []


def _item_span(item: exp.Expression, tokens: list[Token]) -> tuple[int, int] | None:
    starts = [node.meta["start"] for node in item.walk() if "start" in node.meta]
    if not starts:
        return None
    at = next((i for i, token in enumerate(tokens) if token.start >= min(starts)), None)
    if at is None:
        return None
    first = at
    depth = 0
    while first > 0:
        before = tokens[first - 1]
        if before.token_type == TokenType.R_PAREN:
            depth += 1
        elif before.token_type == TokenType.L_PAREN:
            # unmatched before the item's separator is reached: the item opens with it
            depth = max(0, depth - 1)
        elif depth == 0 and before.token_type in _ITEM_START:
            break
        first -= 1
    last = first
    depth = 0
    while last < len(tokens):
        token = tokens[last]
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and token.token_type in _ITEM_END:
            break
        last += 1
    if last == first:
        return None
    return tokens[first].start, tokens[last - 1].end + 1
