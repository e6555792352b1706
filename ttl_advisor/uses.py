"""First-level downstream uses of every column.

A use is a task that reads the column as a value source (a FLOWS_TO edge out
of it) or as a weak reference (an INFLUENCES edge), together with the
partition window that task reads the column's table over (its READS edge).
`UsageIndex` is built here from extracted lineage; the graph store builds the
same index from its edges.
"""

from __future__ import annotations

from collections.abc import Iterable

from watershed.graph import ids
from watershed.graph.lineage import TableRead, TaskLineage
from watershed.ttl_advisor.model import ColumnUse


class UsageIndex:
    """Uses by column id (`db.table.column`), each task once per column."""

    def __init__(self) -> None:
        self._uses: dict[str, dict[str, ColumnUse]] = {}
        self.columns_seen: dict[str, None] = {}

    def add(
        self,
        column: str,
        task_id: str,
        role: str,
        target: str | None,
        read: TableRead | None,
    ) -> None:
        by_task = self._uses.setdefault(column, {})
        use = by_task.get(task_id)
        if use is None:
            predicates: list[str] = []
            unparsed: list[str] = []
            window = None
            if read is not None:
                window = read.partition_window_days
                partition = set(read.partition_columns)
                predicates = [p.text for p in read.predicates if p.column in partition]
                unparsed = list(read.unparsed_partition_predicates)
            use = by_task[task_id] = ColumnUse(
                task_id=task_id,
                window_days=window,
                predicates=predicates,
                unparsed_predicates=unparsed,
            )
        if role not in use.roles:
            use.roles.append(role)
        if target and target not in use.targets:
            use.targets.append(target)

    def note_column(self, column: str) -> None:
        self.columns_seen[column] = None

    def uses(self, column: str) -> list[ColumnUse]:
        return list(self._uses.get(column, {}).values())

    def used_columns(self) -> list[str]:
        return list(self._uses)


def index_lineage(lineages: Iterable[TaskLineage]) -> UsageIndex:
    index = UsageIndex()
    for lineage in lineages:
        reads = {read.table: read for read in lineage.reads}
        for column in lineage.columns:
            index.note_column(column.target)
            target_table = ids.parent(column.target)
            for source in column.sources:
                index.add(
                    source.column,
                    lineage.task_id,
                    f"value:{source.kind}",
                    target_table,
                    reads.get(ids.parent(source.column)),
                )
        for ref in lineage.weak_references:
            index.add(
                ref.column,
                lineage.task_id,
                ref.role,
                ref.target_table,
                reads.get(ids.parent(ref.column)),
            )
    return index
