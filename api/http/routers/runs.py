"""Propagation runs (start, list, status per layer, cancel) and harvest runs with their error records."""

from __future__ import annotations

import json

from fastapi import APIRouter, Depends

from watershed.api.http.deps import Service, service, steward, viewer
from watershed.api.http.models import RunStart
from watershed.api.http.paging import Page, PageRequest, keyed_page, page_request
from watershed.api.http.params import RunId
from watershed.api.http.problems import CONFLICT_RESPONSES, ApiProblem
from watershed.api.service import harvest_runs as harvest
from watershed.api.service.accounts.rights import Me
from watershed.api.service.audit import record
from watershed.api.service.harvest_runs import HarvestProblem
from watershed.graph.model import HarvestRun
from watershed.propagation.run_state import LayerRecord, RunRecord

router = APIRouter(tags=["runs"])

# the cursor compared as a plain string (`toString`): FalkorDB answered an indexed `r.id < $after`
# with the runs at and above it too, so every page after the first was the first page again
PROPAGATION_RUNS = (
    "MATCH (r:PropagationRun) WHERE toString(r.id) < $after "
    "RETURN r.id, r.mode, r.status, r.started_at, r.finished_at, r.cone, r.resumed, r.layer_records "
    "ORDER BY r.id DESC LIMIT $n"
)
PROPAGATION_RUN = (
    "MATCH (r:PropagationRun {id: $id}) "
    "RETURN r.id, r.mode, r.status, r.started_at, r.finished_at, r.cone, r.resumed, r.layer_records"
)


def _from_graph(row, current: RunRecord | None) -> RunRecord:
    run_id, mode, status, started_at, finished_at, cone, resumed, layer_records = row
    if current is not None and current.run_id == run_id:
        return current.model_copy(update={"frontier": []})
    # The graph keeps a summary of past runs; token and graph clock live only in the current record.
    return RunRecord(
        run_id=run_id,
        token=0,
        mode=mode,
        status=status,
        graph_started_at=0,
        started_at=started_at,
        finished_at=finished_at,
        cone=cone or 0,
        resumed=resumed or 0,
        # runs recorded before the layers were kept have none
        layers=[LayerRecord.model_validate(layer) for layer in json.loads(layer_records or "[]")],
    )


def _launcher(svc: Service):
    return svc.runs


def _current_or_none(svc: Service) -> RunRecord | None:
    """The live record when the Celery Redis answers; the graph's summaries are listed either way."""
    try:
        return _launcher(svc).current()
    except ApiProblem:
        return None


@router.post("/propagation/runs", response_model=RunRecord, status_code=202, responses=CONFLICT_RESPONSES)
def start_run(body: RunStart, me: Me = Depends(steward), svc: Service = Depends(service)) -> RunRecord:
    """Start a full or incremental run (an interrupted run is resumed); its batches go to the Celery workers."""
    started = _launcher(svc).start(body.full)
    record(
        svc.graph,
        me.name,
        "propagation.start",
        f"run:{started.run_id}",
        None,
        {"full": body.full, "mode": started.mode},
    )
    return started.model_copy(update={"frontier": []})


@router.get("/propagation/runs", response_model=Page[RunRecord])
def list_runs(
    page: PageRequest = Depends(page_request), _: Me = Depends(viewer), svc: Service = Depends(service)
) -> Page[RunRecord]:
    after = str(page.position().get("after", "~"))
    rows = svc.graph.read(PROPAGATION_RUNS, {"after": after, "n": page.limit + 1})
    current = _current_or_none(svc) if rows else None
    return keyed_page([_from_graph(r, current) for r in rows], page.limit, lambda r: r.run_id)


@router.get("/propagation/runs/{run_id}", response_model=RunRecord)
def get_run(run_id: RunId, _: Me = Depends(viewer), svc: Service = Depends(service)) -> RunRecord:
    current = _launcher(svc).current()
    if current is not None and current.run_id == run_id:
        return current.model_copy(update={"frontier": []})
    rows = svc.graph.read(PROPAGATION_RUN, {"id": run_id})
    if not rows:
        raise ApiProblem(404, f"propagation run {run_id} not found")
    return _from_graph(rows[0], None)


@router.post(
    "/propagation/runs/{run_id}/cancel",
    response_model=RunRecord,
    status_code=202,
    responses=CONFLICT_RESPONSES,
)
def cancel_run(run_id: RunId, me: Me = Depends(steward), svc: Service = Depends(service)) -> RunRecord:
    """Stop the run after its current layer (it is marked failed, `cancelled by NAME`)."""
    cancelled = _launcher(svc).cancel(run_id, me.name)
    record(svc.graph, me.name, "propagation.cancel", f"run:{run_id}", {"status": cancelled.status}, None)
    return cancelled.model_copy(update={"frontier": []})


@router.get("/harvest/runs", response_model=Page[HarvestRun])
def harvest_runs(
    page: PageRequest = Depends(page_request), _: Me = Depends(viewer), svc: Service = Depends(service)
) -> Page[HarvestRun]:
    return harvest.listing(
        svc.graph, after=str(page.position().get("after", harvest.FIRST)), limit=page.limit
    )


@router.get("/harvest/runs/{run_id}", response_model=HarvestRun)
def harvest_run(run_id: RunId, _: Me = Depends(viewer), svc: Service = Depends(service)) -> HarvestRun:
    try:
        return harvest.one(svc.graph, run_id)
    except harvest.HarvestRunNotFoundError as exc:
        raise ApiProblem(404, str(exc)) from None


@router.get("/harvest/runs/{run_id}/errors", response_model=Page[HarvestProblem])
def harvest_errors(
    run_id: RunId,
    page: PageRequest = Depends(page_request),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
) -> Page[HarvestProblem]:
    """The run's error records (errors.jsonl under DATA_DIR/harvest/RUN), one item per line."""
    start = int(page.position().get("line", 0))
    try:
        return harvest.problems(svc.graph, svc.settings.data_dir, run_id, start=start, limit=page.limit)
    except harvest.HarvestRunNotFoundError as exc:
        raise ApiProblem(404, str(exc)) from None
