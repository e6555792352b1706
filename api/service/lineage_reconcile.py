"""SQL lineage against runtime lineage: where a job sent both a SQL facet and a columnLineage
facet, the task's edges are the SQL's (Watershed's extractor) and the facet's are kept on its Task
(`runtime_lineage`, api/service/lineage_intake.py). `reconcile` compares them per task:

- a column edge is (source column, target column): one found by one side only is listed there with
  its kind; one both found with different kinds is listed under `kind_differs`;
- a weak reference is (column, written table, role), compared whole (`weak:<role>` as its kind).

It measures the extractor against what the engine did on real jobs (docs/openlineage.md,
"Reconcile"). Called by `watershed lineage reconcile` and GET /api/v1/tasks/{id}/reconcile.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from watershed.graph.errors import WatershedError
from watershed.graph.lineage import KIND_STRENGTH
from watershed.graph.store import GraphStore

RUNTIME_OF = (
    "MATCH (k:Task) WHERE k.runtime_lineage IS NOT NULL AND ($id IS NULL OR k.id = $id) "
    "RETURN k.id, k.runtime_lineage ORDER BY k.id"
)
TASK_EXISTS = "MATCH (k:Task {id: $id}) RETURN k.id"
# a task's edges end at the tables it WRITES (graph.queries' deletes find them the same way)
SQL_COLUMN_EDGES = (
    "MATCH (k:Task {id: $id})-[:WRITES]->(:Table)-[:HAS_COLUMN]->(c:Column)<-[r:FLOWS_TO]-(s:Column) "
    "WHERE r.task = $id RETURN s.id, c.id, r.kind"
)
SQL_WEAK_EDGES = (
    "MATCH (k:Task {id: $id})-[:WRITES]->(t:Table)<-[r:INFLUENCES]-(c:Column) WHERE r.task = $id "
    "RETURN c.id, t.id, r.role"
)


class NothingToReconcileError(WatershedError, LookupError):
    """A task that does not exist, or has no runtime lineage beside its SQL."""


class Edge(BaseModel):
    source: str
    target: str
    #: a column edge's kind, or `weak:<role>` for a weak reference
    kind: str


class KindDiffers(BaseModel):
    source: str
    target: str
    sql: str
    runtime: str


class TaskReconcile(BaseModel):
    task: str
    #: edges both sides found with the same kind
    agreed: int = 0
    sql_only: list[Edge] = Field(default_factory=list)
    runtime_only: list[Edge] = Field(default_factory=list)
    kind_differs: list[KindDiffers] = Field(default_factory=list)


class ReconcileReport(BaseModel):
    """The comparison of every task compared, in task id order."""

    tasks: list[TaskReconcile] = Field(default_factory=list)


def _split(rows) -> tuple[dict[tuple[str, str], str], set[tuple[str, str, str]]]:
    columns: dict[tuple[str, str], str] = {}
    weak: set[tuple[str, str, str]] = set()
    for source, target, kind in rows:
        if kind.startswith("weak:"):
            weak.add((source, target, kind))
        else:
            # the strongest kind when a source reaches a target twice (two keys of one column)
            known = columns.get((source, target))
            if known is None or KIND_STRENGTH.get(kind, 0) > KIND_STRENGTH.get(known, 0):
                columns[(source, target)] = kind
    return columns, weak


def compare(task: str, sql_rows, runtime_rows) -> TaskReconcile:
    """The comparison of one task's SQL edges and runtime edges (rows `[source, target, kind]`)."""
    sql_columns, sql_weak = _split(sql_rows)
    runtime_columns, runtime_weak = _split(runtime_rows)
    result = TaskReconcile(task=task)
    for pair in sorted(sql_columns.keys() | runtime_columns.keys()):
        sql, runtime = sql_columns.get(pair), runtime_columns.get(pair)
        if sql is None:
            result.runtime_only.append(Edge(source=pair[0], target=pair[1], kind=runtime))
        elif runtime is None:
            result.sql_only.append(Edge(source=pair[0], target=pair[1], kind=sql))
        elif sql != runtime:
            result.kind_differs.append(KindDiffers(source=pair[0], target=pair[1], sql=sql, runtime=runtime))
        else:
            result.agreed += 1
    result.agreed += len(sql_weak & runtime_weak)
    result.sql_only += [Edge(source=s, target=t, kind=k) for s, t, k in sorted(sql_weak - runtime_weak)]
    result.runtime_only += [Edge(source=s, target=t, kind=k) for s, t, k in sorted(runtime_weak - sql_weak)]
    return result


def reconcile(graph: GraphStore, task: str | None = None) -> ReconcileReport:
    """Every task with both lineages compared, in id order; with `task`, that one only
    (`NothingToReconcileError` when it does not exist or has nothing to compare)."""
    rows = graph.read(RUNTIME_OF, {"id": task})
    if task is not None and not rows:
        if graph.read(TASK_EXISTS, {"id": task}):
            raise NothingToReconcileError(
                f"task {task} has no runtime lineage beside its SQL (no SQL facet, or no columnLineage facet)"
            )
        raise NothingToReconcileError(f"task {task} not found")
    results = ReconcileReport()
    for task_id, runtime in rows:
        sql_rows = graph.read(SQL_COLUMN_EDGES, {"id": task_id})
        sql_rows += [[c, t, f"weak:{role}"] for c, t, role in graph.read(SQL_WEAK_EDGES, {"id": task_id})]
        results.tasks.append(compare(task_id, sql_rows, json.loads(runtime)))
    return results
