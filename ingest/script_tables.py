"""Tables a script renames or drops after writing them.

A script that builds `stage`, reads it and then drops it leaves no `stage`
behind: the task's lineage goes through it, as through a temporary view.
A script that builds `t_tmp` and renames it to `t` leaves `t`: everything the
script said about `t_tmp` is said about `t`. `StatementExtractor` records these
events (only for tables the script itself wrote, in statement order) and
`apply_table_events` rewrites the statements' lineage once the script is read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from watershed.graph import ids
from watershed.graph.lineage import (
    KIND_STRENGTH,
    ColumnLineage,
    SourceColumn,
    StatementLineage,
    TableEdge,
    WeakReference,
)


@dataclass(frozen=True, slots=True)
class Renamed:
    """`ALTER TABLE old RENAME TO new` at statement `index`, `old` written earlier in the script."""

    index: int
    old: str
    new: str


@dataclass(frozen=True, slots=True)
class Dropped:
    """`DROP TABLE table` at statement `index`, `table` written earlier in the script."""

    index: int
    table: str


TableEvent = Renamed | Dropped


def apply_table_events(
    statements: list[StatementLineage], events: Iterable[TableEvent]
) -> list[StatementLineage]:
    """The statements with each rename and drop applied, in script order."""
    for event in events:
        if isinstance(event, Renamed):
            statements = _rename(statements, event)
        else:
            statements = _fold(statements, event)
    return statements


def _lifetime_start(statements: list[StatementLineage], table: str, end: int) -> int | None:
    """Index of the first statement up to `end` that writes `table` (its current incarnation:
    earlier ones were dropped, and their writes are gone by now). `end` itself is included: the
    statements of one block may share an index, and the DROP/RENAME writes nothing it folds."""
    for statement in statements:
        if statement.index > end:
            break
        if table in statement.writes:
            return statement.index
    return None


# ------------------------------------------------------------------ renames


def _rename(statements: list[StatementLineage], event: Renamed) -> list[StatementLineage]:
    start = _lifetime_start(statements, event.old, event.index)
    if start is None:
        return statements
    old, new = event.old, event.new

    def table(name: str) -> str:
        return new if name == old else name

    def column(column_id: str) -> str:
        parent, last = ids.split_last(column_id)
        return ids.child(new, last) if parent == old else column_id

    out = []
    for statement in statements:
        if not start <= statement.index <= event.index or not _mentions(statement, old):
            out.append(statement)
            continue
        reads = [read if read.table != old else replace(read, table=new) for read in statement.reads]
        out.append(
            statement.model_copy(
                update={
                    "reads": reads,
                    "writes": [table(t) for t in statement.writes],
                    "columns": [
                        ColumnLineage(
                            target=column(c.target),
                            sources=[replace(s, column=column(s.column)) for s in c.sources],
                        )
                        for c in statement.columns
                    ],
                    "weak_references": [
                        WeakReference(
                            column=column(w.column), role=w.role, target_table=table(w.target_table)
                        )
                        for w in statement.weak_references
                    ],
                    "table_edges": [
                        TableEdge(source=table(e.source), target=table(e.target))
                        for e in statement.table_edges
                    ],
                }
            )
        )
    return out


def _mentions(statement: StatementLineage, table: str) -> bool:
    return table in statement.writes or any(read.table == table for read in statement.reads)


# -------------------------------------------------------------------- drops


def _fold(statements: list[StatementLineage], event: Dropped) -> list[StatementLineage]:
    """Lineage through the dropped table: its writers' sources reach its readers' targets."""
    dropped = event.table
    start = _lifetime_start(statements, dropped, event.index)
    if start is None:
        return statements
    resolved: dict[str, list[SourceColumn]] = {}  # dropped column -> its (already folded) sources
    upstream: dict[str, None] = {}  # tables that flowed into the dropped one
    pending_weak: dict[tuple[str, str], None] = {}  # (column, role) that decided its rows
    written = False
    out = []
    for statement in statements:
        if not start <= statement.index <= event.index:
            out.append(statement)
            continue
        writes_it = dropped in statement.writes
        reads_it = written and any(read.table == dropped for read in statement.reads)
        if not writes_it and not reads_it:
            out.append(statement)
            continue
        unresolved = list(statement.unresolved)

        columns = []
        for column in statement.columns:
            sources = (
                _substitute(column.sources, dropped, resolved, unresolved) if written else column.sources
            )
            if ids.parent(column.target) == dropped:
                resolved[column.target] = _unique(resolved.get(column.target, []) + sources)
            else:
                columns.append(ColumnLineage(target=column.target, sources=sources))
        readers: dict[str, None] = {}
        edges: dict[tuple[str, str], None] = {}
        for edge in statement.table_edges:
            if edge.target == dropped:
                if edge.source != dropped:
                    upstream[edge.source] = None
            elif edge.source == dropped and written:
                readers[edge.target] = None
                for source in upstream:
                    edges[(source, edge.target)] = None
            else:
                edges[(edge.source, edge.target)] = None
        weak: dict[tuple[str, str, str], None] = {}
        for ref in statement.weak_references:
            if written and ids.parent(ref.column) == dropped:
                names = [s.column for s in resolved.get(ref.column, [])]
            else:
                names = [ref.column]
            for name in names:
                if ref.target_table == dropped:
                    pending_weak[(name, ref.role)] = None
                else:
                    weak[(name, ref.role, ref.target_table)] = None
        for reader in readers:
            for name, role in pending_weak:
                weak[(name, role, reader)] = None
        out.append(
            statement.model_copy(
                update={
                    "reads": [read for read in statement.reads if not (written and read.table == dropped)],
                    "writes": [table for table in statement.writes if table != dropped],
                    "columns": columns,
                    "weak_references": [
                        WeakReference(column=c, role=r, target_table=t)  # type: ignore[arg-type]
                        for c, r, t in weak
                    ],
                    "table_edges": [TableEdge(source=s, target=t) for s, t in edges],
                    "unresolved": unresolved,
                }
            )
        )
        written = written or writes_it
    return out


def _substitute(
    sources: list[SourceColumn], dropped: str, resolved: dict[str, list[SourceColumn]], unresolved: list[str]
) -> list[SourceColumn]:
    """`sources` with each column of the dropped table replaced by that column's own sources."""
    result: list[SourceColumn] = []
    for source in sources:
        if ids.parent(source.column) != dropped:
            result.append(source)
            continue
        inner_sources = resolved.get(source.column)
        if inner_sources is None:
            unresolved.append(f"{source.column}: a column of dropped table {dropped} with unknown sources")
            continue
        result.extend(_compose(inner, source) for inner in inner_sources)
    return _unique(result)


def _compose(inner: SourceColumn, outer: SourceColumn) -> SourceColumn:
    """`inner` reached the dropped column, which reached the target through `outer`."""
    kind = inner.kind if KIND_STRENGTH[inner.kind] >= KIND_STRENGTH[outer.kind] else outer.kind
    key = inner.key if outer.key is None else (outer.key if inner.key is None else inner.key + outer.key[1:])
    return SourceColumn(column=inner.column, key=key, kind=kind, functions=inner.functions + outer.functions)


def _unique(sources: list[SourceColumn]) -> list[SourceColumn]:
    seen: dict[tuple, SourceColumn] = {}
    for source in sources:
        seen.setdefault((source.column, source.key, source.kind, tuple(source.functions)), source)
    return list(seen.values())
