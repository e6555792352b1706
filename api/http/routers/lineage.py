"""Bounded lineage around a node, the detail behind an edge, and lineage of an ad-hoc SQL script."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Query

from watershed.api.http.deps import Service, service, steward, viewer
from watershed.api.http.models import EdgeDetail, SqlLineageRequest, TaskInfo, TextSpan
from watershed.api.http.nodes import NODE_ID, NodeId, missing, parse
from watershed.api.http.problems import ApiProblem
from watershed.api.service.accounts.rights import Me
from watershed.graph import ids
from watershed.graph.lineage import SqlTask, TaskLineage
from watershed.graph.model import LineageView
from watershed.ingest.expression_spans import expression_spans
from watershed.ingest.limits import analysis_limits

router = APIRouter(tags=["lineage"])

EDGES = {
    "Column": (
        "MATCH (a:Column {id: $source})-[r:FLOWS_TO]->(b:Column {id: $target}) "
        "OPTIONAL MATCH (k:Task {id: r.task}) RETURN r.kind, r.functions, r.task, k.dialect, k.owner, k.sql"
    ),
    "Table": (
        "MATCH (a:Table {id: $source})-[r:FLOWS_TO]->(b:Table {id: $target}) "
        "OPTIONAL MATCH (k:Task {id: r.task}) RETURN null AS kind, null AS functions, r.task, k.dialect, k.owner, k.sql"
    ),
}


@router.get("/lineage/{node_id:path}", response_model=LineageView)
def lineage(
    node_id: NodeId,
    direction: Literal["upstream", "downstream", "both"] = "both",
    depth: int = Query(3, ge=1, le=10),
    limit: int = Query(500, ge=1, le=5000),
    level: Literal["column", "table"] = "column",
    kinds: str | None = Query(None, description="Comma-separated transform kinds to keep (column level)."),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
) -> LineageView:
    node, label, _db = parse(node_id)
    if level == "table" and label == "Column":
        node, label = ids.parent(node), "Table"
    if level == "column" and label == "Table":
        raise ApiProblem(400, f"{node} is a table: ask with level=table, or give a column")
    kind_list = [k.strip() for k in kinds.split(",") if k.strip()] if kinds else None
    view = svc.graph.bounded_lineage(node, direction, depth=depth, limit=limit, level=level, kinds=kind_list)
    if view is None:
        raise missing(label, node)
    return view


@router.get("/edges", response_model=list[EdgeDetail])
def edges(
    source: str = Query(..., max_length=1000, pattern=NODE_ID, description="A table or column id."),
    target: str = Query(..., max_length=1000, pattern=NODE_ID, description="A table or column id."),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
) -> list[EdgeDetail]:
    """The lineage edges from `source` to `target`, with the task behind each."""
    source_id, label, _ = parse(source)
    target_id, target_label, _ = parse(target)
    if label != target_label:
        raise ApiProblem(400, "source and target must both be columns or both tables")
    rows = svc.graph.read(EDGES[label], {"source": source_id, "target": target_id})
    order = _insert_order(svc, target_id) if label == "Column" and any(row[5] for row in rows) else None
    return [
        EdgeDetail(
            source=source_id,
            target=target_id,
            type="FLOWS_TO",
            kind=kind,
            functions=list(functions or []),
            task=TaskInfo(id=task, sql=sql, dialect=dialect, owner=owner) if task else None,
            expressions=[
                TextSpan(start=start, end=end)
                for start, end in (
                    expression_spans(sql, dialect or "hive", target_id, order)
                    if sql and label == "Column"
                    else []
                )
            ],
        )
        for kind, functions, task, dialect, owner, sql in rows
    ]


def _insert_order(svc: Service, column_id: str) -> list[str] | None:
    """The column's table's columns in the order an INSERT without a column list fills them."""
    table = svc.graph.catalog_entries([ids.parent(column_id)]).get(ids.parent(column_id))
    return table.all_columns if table is not None and table.columns_ordered else None


@router.post("/lineage/sql", response_model=TaskLineage)
def sql_lineage(body: SqlLineageRequest, _: Me = Depends(steward)) -> TaskLineage:
    """The extractor's result for one script (what `watershed lineage --format json` prints); body capped at 1 MiB."""
    from watershed.ingest.extract import UnknownDialectError, check_dialect, extract_lineage

    try:
        check_dialect(body.dialect)
    except UnknownDialectError as exc:
        raise ApiProblem(400, f"dialect: {exc}") from None
    task = SqlTask(task_id="adhoc", sql=body.sql, dialect=body.dialect, vars=body.vars)
    # the script's statements each within the limits, the whole within a request's deadline
    with analysis_limits(deadline="analysis_seconds"):
        return extract_lineage(task, None)
