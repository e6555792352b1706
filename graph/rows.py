"""Flattening a task's lineage into the parameter rows the load queries UNWIND."""

from __future__ import annotations

from dataclasses import dataclass, field

from ingest.catalog import Catalog
from ingest.model import SqlTask, TaskLineage


@dataclass
class LoadRows:
    tasks: list[dict] = field(default_factory=list)
    tables: dict[str, dict] = field(default_factory=dict)
    columns: dict[str, dict] = field(default_factory=dict)
    column_edges: list[dict] = field(default_factory=list)
    weak_edges: list[dict] = field(default_factory=list)
    table_edges: list[dict] = field(default_factory=list)
    reads: list[dict] = field(default_factory=list)
    writes: list[dict] = field(default_factory=list)

    def add_table(self, table_id: str, catalog: Catalog | None) -> None:
        if table_id in self.tables:
            return
        db, _, name = table_id.partition(".")
        row = {
            "id": table_id,
            "db": db,
            "name": name,
            "format": None,
            "location": None,
            "owner": None,
            "layer": None,
            "ttl_days": None,
            "partitioned_by": None,
        }
        entry = catalog.get(table_id) if catalog is not None else None
        if entry is not None:
            row.update(
                format=entry.format,
                location=entry.location,
                owner=entry.owner,
                layer=entry.layer,
                ttl_days=entry.ttl_days,
                partitioned_by=entry.partition_column_names,
            )
        self.tables[table_id] = row

    def add_column(self, column_id: str, catalog: Catalog | None) -> None:
        if column_id in self.columns:
            return
        table_id, _, name = column_id.rpartition(".")
        self.add_table(table_id, catalog)
        column_type = None
        entry = catalog.get(table_id) if catalog is not None else None
        if entry is not None:
            for column in [*entry.columns, *entry.partitioned_by]:
                if column.name == name:
                    column_type = column.type
                    break
        self.columns[column_id] = {"id": column_id, "table": table_id, "name": name, "type": column_type}

    def add(self, task: SqlTask, lineage: TaskLineage, catalog: Catalog | None) -> None:
        task_id = task.task_id
        self.tasks.append(
            {
                "id": task_id,
                "version": task.effective_version,
                "sql_hash": task.sql_hash,
                "owner": task.owner,
                "schedule": task.schedule,
                "dialect": task.dialect,
                "errors": len(lineage.errors),
            }
        )
        for table in lineage.writes:
            self.add_table(table, catalog)
            self.writes.append({"task": task_id, "table": table})
        for read in lineage.reads:
            self.add_table(read.table, catalog)
            self.reads.append(
                {
                    "task": task_id,
                    "table": read.table,
                    "predicates": [p.text for p in read.predicates],
                    "window": read.partition_window_days,
                    "unparsed": list(read.unparsed_partition_predicates),
                }
            )
        for column in lineage.columns:
            self.add_column(column.target, catalog)
            for source in column.sources:
                self.add_column(source.column, catalog)
                self.column_edges.append(
                    {
                        "s": source.column,
                        "t": column.target,
                        "task": task_id,
                        "kind": source.kind,
                        "functions": list(source.functions),
                        "key": source.key,
                    }
                )
        for ref in lineage.weak_references:
            self.add_column(ref.column, catalog)
            self.add_table(ref.target_table, catalog)
            self.weak_edges.append(
                {"s": ref.column, "t": ref.target_table, "task": task_id, "role": ref.role}
            )
        for edge in lineage.table_edges:
            self.add_table(edge.source, catalog)
            self.add_table(edge.target, catalog)
            self.table_edges.append({"s": edge.source, "t": edge.target, "task": task_id})
