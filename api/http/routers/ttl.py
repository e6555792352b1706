"""Stored TTL advice (what a TTL run, `watershed ttl run` or the nightly chain, wrote onto the
columns): the biggest savings first, for the whole graph or one table (api/service/ttl_advice.py).

Biggest savings first: the bytes freed where the table's size was sampled, then the days of
retention cut (the table's TTL minus the recommendation), then the column id. `total` counts the
advised columns the filters keep (up to a bound); an empty answer's `hint` says what to run.
Without `table` the list orders every advised column (a scan of the Column label).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query

from watershed.api.http.deps import Service, service, viewer
from watershed.api.http.nodes import TABLE_ID, parse
from watershed.api.http.paging import PageRequest, page_request
from watershed.api.http.problems import ApiProblem
from watershed.api.service import ttl_advice
from watershed.api.service.accounts.rights import Me
from watershed.api.service.pages import CursorError
from watershed.api.service.ttl_advice import Status, TtlAdvicePage

router = APIRouter(tags=["ttl"])


@router.get("/ttl/advice", response_model=TtlAdvicePage)
def advice(
    table: str | None = Query(None, max_length=1000, pattern=TABLE_ID, description="A table id, `db.table`."),
    min_savings: int | None = Query(
        None, ge=0, description="Only columns whose recommended TTL frees at least this many bytes."
    ),
    status: Status | None = Query(None, description="Only advice of this status: ttl, keep or unused."),
    page: PageRequest = Depends(page_request),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
) -> TtlAdvicePage:
    try:
        return ttl_advice.stored(
            svc.graph,
            table=parse(table, "Table")[0] if table else None,
            status=status,
            min_savings=min_savings,
            cursor=page.cursor,
            limit=page.limit,
        )
    except ttl_advice.TtlAdviceError as exc:
        raise ApiProblem(404, str(exc)) from None
    except CursorError as exc:
        raise ApiProblem(400, str(exc)) from None
