"""Stored TTL advice (what a TTL run, `watershed ttl run` or the nightly chain, wrote onto the
columns): the biggest savings first, for the whole graph or one table (api/service/ttl_advice.py).

Columns whose savings are unknown (no sampled size) come last. Without `table` the list orders
every advised column by its savings (a scan of the Column label, bounded by the page size).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query

from watershed.api.http.deps import Service, service, viewer
from watershed.api.http.nodes import TABLE_ID, parse
from watershed.api.http.paging import Page, PageRequest, page_request
from watershed.api.http.problems import ApiProblem
from watershed.api.service import ttl_advice
from watershed.api.service.accounts.rights import Me
from watershed.api.service.ttl_advice import TtlAdvice

router = APIRouter(tags=["ttl"])


@router.get("/ttl/advice", response_model=Page[TtlAdvice])
def advice(
    table: str | None = Query(None, max_length=1000, pattern=TABLE_ID, description="A table id, `db.table`."),
    min_savings: int | None = Query(
        None, ge=0, description="Only columns whose recommended TTL frees at least this many bytes."
    ),
    page: PageRequest = Depends(page_request),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
) -> Page[TtlAdvice]:
    position = page.position()
    try:
        return ttl_advice.stored(
            svc.graph,
            table=parse(table, "Table")[0] if table else None,
            min_savings=min_savings,
            saved=int(position.get("saved", ttl_advice.START)),
            after=str(position.get("after", "")),
            limit=page.limit,
        )
    except ttl_advice.TtlAdviceError as exc:
        raise ApiProblem(404, str(exc)) from None
