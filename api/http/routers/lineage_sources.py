"""The graph's lineage sources and the stale tasks of OpenLineage sources (api/service/lineage_sources.py).

Listed in ROUTERS before the lineage router, whose /lineage/{node_id:path} would take these paths.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query

from watershed.api.http.deps import Service, service, viewer
from watershed.api.http.paging import Page, PageRequest, page_request
from watershed.api.http.problems import ApiProblem
from watershed.api.service import lineage_sources
from watershed.api.service.accounts.rights import Me
from watershed.api.service.lineage_sources import LineageSource, StaleTask

router = APIRouter(tags=["lineage"])

STALE_DAYS = Query(
    None,
    gt=0,
    le=36500,
    description="Days unseen after which a task is stale (default: openlineage_stale_days).",
)


def _after(page: PageRequest) -> str | None:
    after = page.position().get("after")
    if after is not None and not isinstance(after, str):
        raise ApiProblem(400, "cursor: not a cursor this API handed out")
    return after


@router.get("/lineage/sources", response_model=Page[LineageSource])
def sources(
    stale_days: float | None = STALE_DAYS,
    page: PageRequest = Depends(page_request),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
) -> Page[LineageSource]:
    """Every source of the graph's tasks (harvest corpora, OpenLineage namespaces, and the tasks
    loaded before sources existed) with its task count, last seen time and stale count."""
    days = stale_days or svc.settings.openlineage_stale_days
    return lineage_sources.sources(svc.graph, stale_days=days, after=_after(page), limit=page.limit)


@router.get("/lineage/sources/stale", response_model=Page[StaleTask])
def stale(
    source: str | None = Query(
        None,
        max_length=600,
        pattern="^openlineage:",
        description="One OpenLineage source (openlineage:<namespace>); default all. Harvest sources never go stale.",
    ),
    stale_days: float | None = STALE_DAYS,
    page: PageRequest = Depends(page_request),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
) -> Page[StaleTask]:
    """Tasks of OpenLineage sources not seen for the stale time, in id order: reported, never deleted."""
    days = stale_days or svc.settings.openlineage_stale_days
    try:
        return lineage_sources.stale_tasks(
            svc.graph, stale_days=days, source=source, after=_after(page) or "", limit=page.limit
        )
    except lineage_sources.LineageSourceError as exc:
        raise ApiProblem(400, str(exc)) from None
