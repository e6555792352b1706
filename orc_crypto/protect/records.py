"""The protection records in the graph, read and written through GraphStore.read/write_all only.

Model (every statement is in the subset FalkorDB and Neo4j 5 both accept):

    (:ProtectedFile {path, table, columns, size, mtime_ns, sha256, at, run})-[:PART_OF]->(:Table)
    (:TableProtection {table, columns, ddl, at, run})-[:PROTECTS]->(:Table)
    (:ProtectionRun {id, started_at, status, record})

`columns` is the JSON of {file column: ColumnKey}, `ddl` the JSON list of statements, and a run's
`record` the JSON of the whole ProtectionRun (its nested skipped/errors lists); the run's id,
start and status are properties of their own so runs can be listed in order. Every write MERGEs
by path / table / run id, so writing the same record twice leaves one node. The edge to the Table
is made only when the catalog has that table (a record never creates a catalog node).
"""

from __future__ import annotations

import json
from typing import Any

from watershed.graph.protection import ColumnKey, ProtectedFile, ProtectionRun, TableProtection
from watershed.graph.store import GraphStore

#: rows per UNWIND statement: bounded parameters however many files an apply wrote
BATCH = 500

SAVE_FILES = (
    "UNWIND $rows AS r MERGE (f:ProtectedFile {path: r[0]}) "
    "SET f.table = r[1], f.columns = r[2], f.size = r[3], f.mtime_ns = r[4], f.sha256 = r[5], "
    "f.at = r[6], f.run = r[7] "
    "WITH f, r MATCH (t:Table {id: r[1]}) MERGE (f)-[:PART_OF]->(t)"
)
FILES_OF = (
    "UNWIND $tables AS name MATCH (f:ProtectedFile {table: name}) "
    "RETURN f.path, f.table, f.columns, f.size, f.mtime_ns, f.sha256, f.at, f.run"
)
SAVE_TABLE = (
    "MERGE (p:TableProtection {table: $table}) "
    # changed_at (the graph's clock): an incremental plan re-plans the tables recorded since its last
    "SET p.columns = $columns, p.ddl = $ddl, p.at = $at, p.run = $run, p.changed_at = timestamp() "
    "WITH p MATCH (t:Table {id: $table}) MERGE (p)-[:PROTECTS]->(t)"
)
TABLE_PROTECTION = "MATCH (p:TableProtection {table: $table}) RETURN p.table, p.columns, p.ddl, p.at, p.run"
#: one read per batch of tables (the planner's), by the index on TableProtection.table
TABLE_PROTECTIONS = (
    "MATCH (p:TableProtection) WHERE p.table IN $tables RETURN p.table, p.columns, p.ddl, p.at, p.run"
)
SAVE_RUN = (
    "MERGE (r:ProtectionRun {id: $id}) SET r.started_at = $started_at, r.status = $status, r.record = $record"
)
RUNS = "MATCH (r:ProtectionRun) RETURN r.record ORDER BY r.started_at DESC, r.id DESC LIMIT $limit"
RUN = "MATCH (r:ProtectionRun {id: $id}) RETURN r.record"

#: the property names these statements write (graph/falkordb_store.py REGISTERED_PROPERTIES)
PROPERTIES = ("path", "table", "columns", "size", "mtime_ns", "sha256", "at", "run", "ddl", "id",
              "started_at", "status", "record", "changed_at")  # fmt: skip


def _columns_json(columns: dict[str, ColumnKey]) -> str:
    return json.dumps(
        {name: key.model_dump(mode="json") for name, key in sorted(columns.items())},
        sort_keys=True,
        separators=(",", ":"),
    )


def _columns(text: str | None) -> dict[str, ColumnKey]:
    return {name: ColumnKey.model_validate(value) for name, value in json.loads(text or "{}").items()}


def save_files(store: GraphStore, files: list[ProtectedFile]) -> None:
    """Record rewritten files (one transaction per batch; re-saving a path overwrites its record)."""
    rows: list[list[Any]] = [
        [f.path, f.table, _columns_json(f.columns), f.size, f.mtime_ns, f.sha256, f.at, f.run] for f in files
    ]
    for start in range(0, len(rows), BATCH):
        store.write_all([(SAVE_FILES, {"rows": rows[start : start + BATCH]})])


def files_of(store: GraphStore, tables: list[str]) -> dict[str, ProtectedFile]:
    """The file records of these tables, by path."""
    found: dict[str, ProtectedFile] = {}
    for start in range(0, len(tables), BATCH):
        for path, table, columns, size, mtime_ns, sha256, at, run in store.read(
            FILES_OF, {"tables": tables[start : start + BATCH]}
        ):
            found[path] = ProtectedFile(
                path=path,
                table=table,
                columns=_columns(columns),
                size=size,
                mtime_ns=mtime_ns,
                sha256=sha256,
                at=at,
                run=run,
            )
    return found


def save_table(store: GraphStore, record: TableProtection) -> None:
    store.write_all(
        [
            (
                SAVE_TABLE,
                {
                    "table": record.table,
                    "columns": _columns_json(record.columns),
                    "ddl": json.dumps(record.ddl),
                    "at": record.at,
                    "run": record.run,
                },
            )
        ]
    )


def _table_record(name: str, columns: str | None, ddl: str | None, at: str, run: str) -> TableProtection:
    return TableProtection(table=name, columns=_columns(columns), ddl=json.loads(ddl or "[]"), at=at, run=run)


def table_protection(store: GraphStore, table: str) -> TableProtection | None:
    rows = store.read(TABLE_PROTECTION, {"table": table})
    return _table_record(*rows[0]) if rows else None


def table_protections(store: GraphStore, tables: list[str]) -> dict[str, TableProtection]:
    """The records of these tables, by table (a table without one is left out), in one query: the
    planner asks for a batch of tables at a time (its batch size bounds the list), not one per table."""
    found: dict[str, TableProtection] = {}
    for row in store.read(TABLE_PROTECTIONS, {"tables": tables}):
        if row[0] not in found:  # as table_protection: the first record the graph returns
            found[row[0]] = _table_record(*row)
    return found


def save_run(store: GraphStore, run: ProtectionRun) -> None:
    """Create or update the run's record (an apply saves it when it starts, as it goes, and at the end)."""
    store.write_all(
        [
            (
                SAVE_RUN,
                {
                    "id": run.id,
                    "started_at": run.started_at,
                    "status": run.status,
                    "record": run.model_dump_json(),
                },
            )
        ]
    )


def runs(store: GraphStore, limit: int = 20) -> list[ProtectionRun]:
    """The latest runs first."""
    return [ProtectionRun.model_validate_json(r[0]) for r in store.read(RUNS, {"limit": limit})]


def run(store: GraphStore, run_id: str) -> ProtectionRun | None:
    rows = store.read(RUN, {"id": run_id})
    return ProtectionRun.model_validate_json(rows[0][0]) if rows else None
