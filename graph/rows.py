"""Flattening a task's lineage into the parameter rows the load queries UNWIND.

Rows are lists, not maps: a map repeats its keys in every row, and on
FalkorDB both serialising and parsing the parameters of a batch cost more
than loading it. The layouts (the order the queries in `graph.queries`
index them by):

- table:       [id, db, name, format, location, owner, layer, ttl_days, partitioned_by,
                column_order, view_sql, view_dialect, external_readers, description]

  `column_order` is the catalog's column names, data then partition columns (the order of
  `SELECT *`); `view_sql` / `view_dialect` a view's query, from the catalog or from the task
  that creates the view. None where unknown: the load keeps what the graph already has.
- column:      [id, table, name, type, description]
- task:        [id, version, sql_hash, owner, schedule, dialect, errors, sql]
- column edge: [source, target, task, kind, functions, key, description]
- weak edge:   [column, table, task, role]
- table edge:  [source, target, task]
- read:        [task, table, predicates, partition_window, unparsed_partition_predicates, filters]

`filters` is the read's predicates as JSON, `[[column, op, [values]], ...]`: what
propagation narrows business values by (graph properties cannot nest lists).
- write:       [task, table]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from watershed.graph import ids
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask, TaskLineage

Row = list[Any]


@dataclass
class LoadRows:
    tasks: list[Row] = field(default_factory=list)
    tables: dict[str, Row] = field(default_factory=dict)
    columns: dict[str, Row] = field(default_factory=dict)
    column_edges: list[Row] = field(default_factory=list)
    weak_edges: list[Row] = field(default_factory=list)
    table_edges: list[Row] = field(default_factory=list)
    reads: list[Row] = field(default_factory=list)
    writes: list[Row] = field(default_factory=list)

    def add_table(self, table_id: str, catalog: Catalog | None) -> None:
        if table_id in self.tables:
            return
        db, name = ids.split_last(table_id)
        entry = catalog.get(table_id) if catalog is not None else None
        if entry is None:
            self.tables[table_id] = [table_id, db, name, *[None] * 11]
        else:
            self.tables[table_id] = [
                table_id,
                db,
                name,
                entry.format,
                entry.location,
                entry.owner,
                entry.layer,
                entry.ttl_days,
                entry.partition_column_names,
                entry.all_columns or None,
                entry.view_sql,
                entry.view_dialect if entry.view_sql else None,
                entry.external_readers,
                entry.description,
            ]

    def add_view(self, view_id: str, view_sql: str, dialect: str, catalog: Catalog | None) -> None:
        """A view's definition from the task that creates it (newer than any catalog's)."""
        self.add_table(view_id, catalog)
        self.tables[view_id][10:12] = [view_sql, dialect]

    def add_column(self, column_id: str, catalog: Catalog | None) -> None:
        if column_id in self.columns:
            return
        table_id, name = ids.split_last(column_id)
        self.add_table(table_id, catalog)
        column_type = description = None
        entry = catalog.get(table_id) if catalog is not None else None
        if entry is not None:
            for column in [*entry.columns, *entry.partitioned_by]:
                if column.name == name:
                    column_type, description = column.type, column.description
                    break
        self.columns[column_id] = [column_id, table_id, name, column_type, description]

    def add(self, task: SqlTask, lineage: TaskLineage, catalog: Catalog | None) -> None:
        task_id = task.task_id
        self.tasks.append(
            [
                task_id,
                task.effective_version,
                task.sql_hash,
                task.owner,
                task.schedule,
                task.dialect,
                len(lineage.errors),
                # the text too: a steward clicking a lineage edge reads the SQL behind it
                task.sql,
                task.source,
            ]
        )
        for table in lineage.writes:
            self.add_table(table, catalog)
            self.writes.append([task_id, table])
        for statement in lineage.statements:
            if statement.kind == "create-view" and statement.view_sql and len(statement.writes) == 1:
                self.add_view(statement.writes[0], statement.view_sql, task.dialect, catalog)
        for read in lineage.reads:
            self.add_table(read.table, catalog)
            self.reads.append(
                [
                    task_id,
                    read.table,
                    [p.text for p in read.predicates],
                    read.partition_window_days,
                    list(read.unparsed_partition_predicates),
                    json.dumps([[p.column, p.op, list(p.values)] for p in read.predicates]),
                ]
            )
        for column in lineage.columns:
            self.add_column(column.target, catalog)
            for source in column.sources:
                self.add_column(source.column, catalog)
                self.column_edges.append(
                    [
                        source.column,
                        column.target,
                        task_id,
                        source.kind,
                        list(source.functions),
                        source.key,
                        source.description,
                    ]
                )
        for ref in lineage.weak_references:
            self.add_column(ref.column, catalog)
            self.add_table(ref.target_table, catalog)
            self.weak_edges.append([ref.column, ref.target_table, task_id, ref.role])
        for edge in lineage.table_edges:
            self.add_table(edge.source, catalog)
            self.add_table(edge.target, catalog)
            self.table_edges.append([edge.source, edge.target, task_id])
