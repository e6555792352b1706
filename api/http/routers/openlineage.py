"""OpenLineage intake: POST /lineage (the stock HTTP transport's endpoint) and a task's reconcile.

A producer is pointed at Watershed by its base URL and a token (`Authorization: Bearer`, the
transport's `api_key` auth) of a producer, steward or admin (docs/openlineage.md).
"""

from __future__ import annotations

import json
import zlib

from fastapi import APIRouter, Depends, Path, Request, Response

from watershed.api.http.deps import Service, lineage_writer, service, viewer
from watershed.api.http.problems import ApiProblem
from watershed.api.service.accounts.rights import Me
from watershed.api.service.lineage_intake import Intake, IntakeResult
from watershed.api.service.lineage_reconcile import NothingToReconcileError, TaskReconcile, reconcile
from watershed.ingest.openlineage.events import EventError
from watershed.ingest.settings import IngestSettings

router = APIRouter(tags=["openlineage"])

_LIMIT_SETTING = "WATERSHED_OPENLINEAGE_MAX_BODY_BYTES"


def intake(request: Request, svc: Service = Depends(service)) -> Intake:
    """The app's one intake (its converter keeps a cache of dataset names)."""
    found = getattr(request.app.state, "openlineage_intake", None)
    if found is None:
        found = request.app.state.openlineage_intake = Intake(svc.graph, IngestSettings())
    return found


async def _body(request: Request, limit: int) -> bytes:
    body = await request.body()
    if len(body) > limit:
        raise ApiProblem(413, f"request body over {limit} bytes ({_LIMIT_SETTING})")
    encoding = request.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise ApiProblem(415, f"content-encoding {encoding!r}: only gzip is taken")
    # read at most one byte past the limit: a small gzip bomb must not become a large body
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        plain = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise ApiProblem(400, f"body: not gzip: {exc}") from None
    if len(plain) > limit:
        raise ApiProblem(413, f"request body over {limit} bytes once gunzipped ({_LIMIT_SETTING})")
    return plain


@router.post(
    "/lineage",
    response_model=IntakeResult,
    status_code=201,
    responses={
        200: {"model": IntakeResult, "description": "Nothing was loaded (known or older events)"},
        415: {"description": "A Content-Encoding other than gzip"},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "An OpenLineage event of spec 2-0-x (RunEvent, JobEvent, DatasetEvent) or a JSON "
            "array of them; checked against the spec by the intake (a bad field is a 400 naming its path).",
            "content": {
                "application/json": {
                    "schema": {
                        "oneOf": [
                            {"type": "object", "title": "Event"},
                            {"type": "array", "title": "Events", "items": {"type": "object"}},
                        ]
                    }
                }
            },
        }
    },
)
async def post_lineage(
    request: Request,
    response: Response,
    me: Me = Depends(lineage_writer),
    taker: Intake = Depends(intake),
) -> IntakeResult:
    """Take one OpenLineage event (RunEvent, JobEvent, DatasetEvent of spec 2-0-x) or a JSON array
    of them: 201 when a task's lineage was loaded, 200 when nothing changed."""
    body = await _body(request, taker.converter.settings.openlineage_max_body_bytes)
    try:
        document = json.loads(body)
    except ValueError as exc:
        raise ApiProblem(400, f"body: not JSON: {exc}") from None
    try:
        result = await _run(taker, document, me)
    except EventError as exc:
        raise ApiProblem(400, str(exc)) from None
    if not result.loaded:
        response.status_code = 200
    return result


async def _run(taker: Intake, document, me: Me) -> IntakeResult:
    from starlette.concurrency import run_in_threadpool

    # extraction and the graph's round trips block: off the event loop
    return await run_in_threadpool(taker.take, document, me.name, me.covers)


@router.get("/tasks/{task_id:path}/reconcile", response_model=TaskReconcile)
def task_reconcile(
    task_id: str = Path(
        max_length=2000,
        description="A task id; an OpenLineage job's is `namespace.name`, quoted as graph ids are.",
        examples=["spark_app.`app.insert_dw_user_daily`"],
    ),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
) -> TaskReconcile:
    """The task's SQL lineage against its runtime lineage: edges only the SQL found, only the
    engine reported, and kinds that differ (docs/openlineage.md, "Reconcile")."""
    try:
        return reconcile(svc.graph, task_id).tasks[0]
    except NothingToReconcileError as exc:
        raise ApiProblem(404, str(exc)) from None
