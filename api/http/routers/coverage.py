"""GET /coverage (the newest stored snapshot, the last nightly, the trend), GET /coverage/columns (a
page of one of the snapshot's lists) and POST /coverage/refresh (compute one now):
watershed.api.service.coverage. The reads only read stored snapshots; a database-limited caller
sees their databases only."""

from __future__ import annotations

from datetime import date

from fastapi import APIRouter, Depends, Query

from watershed.api.http.deps import Service, service, steward, viewer
from watershed.api.http.problems import ApiProblem
from watershed.api.service import coverage
from watershed.api.service.accounts.rights import Me

router = APIRouter(tags=["coverage"])


@router.get("/coverage", response_model=coverage.Coverage)
def coverage_now(
    top: int = Query(
        coverage.DEFAULT_TOP,
        ge=0,
        le=coverage.MAX_TOP,
        description="Databases and owners listed (the most unprotected first).",
    ),
    trend: int = Query(coverage.DEFAULT_TREND, ge=0, le=10_000, description="Snapshots in the trend."),
    downstream: int = Query(
        coverage.DEFAULT_TOP, ge=0, le=coverage.SUMMARY_DOWNSTREAM, description="Downstream columns listed."
    ),
    me: Me = Depends(viewer),
    svc: Service = Depends(service),
):
    """The newest coverage snapshot with its `top` owners, the last nightly's status and the totals of
    the last `trend` snapshots, oldest first."""
    return coverage.coverage(svc.graph, databases=me.databases, top=top, trend=trend, downstream=downstream)


@router.get("/coverage/columns", response_model=coverage.ColumnPage)
def coverage_columns(
    which: coverage.Listed = Query(
        "unprotected", alias="list", description="unprotected, uncovered or downstream."
    ),
    database: str | None = Query(None),
    owner: str | None = Query(None, description=f"An owner, or {coverage.NO_OWNER!r}."),
    snapshot: str | None = Query(None, description="A snapshot's date (default: the newest)."),
    offset: int = Query(0, ge=0),
    limit: int = Query(coverage.DEFAULT_LIMIT, ge=1, le=coverage.MAX_LIMIT),
    me: Me = Depends(viewer),
    svc: Service = Depends(service),
):
    """A page of the snapshot's unprotected, uncovered or downstream columns, in column order."""
    page = coverage.listed_columns(
        svc.graph,
        which,
        snapshot=snapshot,
        database=database,
        owner=owner,
        databases=me.databases,
        offset=offset,
        limit=limit,
    )
    if page is None:
        raise ApiProblem(404, f"no coverage snapshot {snapshot}" if snapshot else "no coverage snapshot yet")
    return page


@router.post("/coverage/refresh", response_model=coverage.Coverage)
def coverage_refresh(
    # a `date` type puts format: date in the schema, so a non-calendar day is the framework's 422
    day: date | None = Query(
        None,
        alias="date",
        description="The date (YYYY-MM-DD) the snapshot is kept under (default today, UTC).",
    ),
    me: Me = Depends(steward),
    svc: Service = Depends(service),
):
    """Compute a snapshot now (replacing the date's; audited) and answer as GET /coverage does."""
    coverage.refresh(svc.graph, svc.policy, day.isoformat() if day else None, actor=me.name)
    return coverage.coverage(svc.graph, databases=me.databases)
