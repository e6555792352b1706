"""What one statement writes, as the extractor assembles it before `_finish` merges it."""

from __future__ import annotations

from dataclasses import dataclass, field
from sys import intern

from sqlglot import exp

from watershed.graph.lineage import ColumnLineage, SourceColumn
from watershed.ingest.resolve import KINDS, ReadContext


@dataclass(slots=True)
class Write:
    """One INSERT branch: the table written, its columns, and what it read."""

    table: str
    columns: list[ColumnLineage]
    ctx: ReadContext
    extra_reads: list[str] = field(default_factory=list)


def sources_of(contribs: list) -> list[SourceColumn]:
    # Column ids are interned: the same source recurs in statement after
    # statement, and a large script's results are mostly these strings.
    seen: dict[tuple, None] = {}
    for column_id, key, kind, funcs, _occurrence in contribs:
        seen[(column_id, key, kind, funcs)] = None
    return [
        SourceColumn(column=intern(column_id), key=key, kind=KINDS[kind], functions=list(funcs))
        for column_id, key, kind, funcs in seen
    ]


def is_default(node: exp.Expression) -> bool:
    """`DEFAULT` as an assigned or inserted value (sqlglot reads it as a column or a variable)."""
    if isinstance(node, exp.Column) and node.table == "" and not node.this.quoted:
        return node.name.upper() == "DEFAULT"
    return isinstance(node, exp.Var) and node.name.upper() == "DEFAULT"
