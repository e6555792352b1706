"""GET /impact/{id}: what lies downstream of a table or column (watershed.api.service.impact), as JSON or CSV."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Query, Request, Response

from watershed.api.http.deps import Service, service, viewer
from watershed.api.http.nodes import NodeId, missing, parse
from watershed.api.service.accounts.rights import ForbiddenError, Me
from watershed.api.service.impact import DEFAULT_LIMIT, MAX_LIMIT, Impact, impact, impact_csv

router = APIRouter(tags=["impact"])


@router.get(
    "/impact/{node_id:path}",
    response_model=Impact,
    responses={200: {"content": {"text/csv": {}}, "description": "The impact, as JSON or CSV."}},
)
def impact_of(
    request: Request,
    node_id: NodeId,
    limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT),
    format: Literal["json", "csv"] | None = Query(None, description="csv, or json (the default)."),
    me: Me = Depends(viewer),
    svc: Service = Depends(service),
):
    """Every downstream table and column, grouped by owner; `?format=csv` or `Accept: text/csv` for CSV."""
    node, label, db = parse(node_id)
    # a database-limited caller sees only their databases: the node itself, and what the list holds
    if not me.covers(db):
        raise ForbiddenError(f"viewer right on database {db} needed")
    found = impact(svc.graph, node, "column" if label == "Column" else "table", limit, me.databases)
    if found is None:
        raise missing(label, node)
    wants_csv = format == "csv" or (
        format is None and "text/csv" in request.headers.get("accept", "").lower()
    )
    if not wants_csv:
        return found
    name = node.replace("`", "").replace('"', "")
    return Response(
        impact_csv(found),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="impact-{name}.csv"'},
    )
