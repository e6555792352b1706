"""Stored TTL advice (what `watershed ttl advise` wrote onto the columns), per table or for the whole graph.

The graph keeps each column's status, recommended days and evidence, not the bytes a TTL would
free (those need sampled ORC files: `watershed ttl advise` prints them). Without `table` the
list reads every column that has advice (a scan of the Column label, paged by id).
"""

from __future__ import annotations

import json

from fastapi import APIRouter, Depends, Query

from watershed.api.accounts.rights import Me
from watershed.api.http.deps import Service, service, viewer
from watershed.api.http.models import TtlAdvice
from watershed.api.http.nodes import missing, parse
from watershed.api.http.paging import Page, PageRequest, keyed_page, page_request

router = APIRouter(tags=["ttl"])

FIELDS = "c.id, c.table, c.ttl_status, c.ttl_days_recommended, c.ttl_evidence"
ALL = f"MATCH (c:Column) WHERE c.ttl_status IS NOT NULL AND c.id > $after RETURN {FIELDS} ORDER BY c.id LIMIT $n"
OF_TABLE = (
    "MATCH (t:Table {id: $table})-[:HAS_COLUMN]->(c:Column) WHERE c.ttl_status IS NOT NULL AND c.id > $after "
    f"RETURN {FIELDS} ORDER BY c.id LIMIT $n"
)
TABLE_EXISTS = "MATCH (t:Table {id: $table}) RETURN t.id"


@router.get("/ttl/advice", response_model=Page[TtlAdvice])
def advice(
    table: str | None = Query(None, max_length=1000),
    page: PageRequest = Depends(page_request),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
) -> Page[TtlAdvice]:
    after = str(page.position().get("after", ""))
    if table:
        table_id, _, _ = parse(table, "Table")
        if not svc.graph.read(TABLE_EXISTS, {"table": table_id}):
            raise missing("table", table_id)
        rows = svc.graph.read(OF_TABLE, {"table": table_id, "after": after, "n": page.limit + 1})
    else:
        rows = svc.graph.read(ALL, {"after": after, "n": page.limit + 1})
    items = [
        TtlAdvice(
            column=c,
            table=t,
            status=status,
            ttl_days_recommended=days,
            evidence=json.loads(evidence) if evidence else [],
        )
        for c, t, status, days, evidence in rows
    ]
    return keyed_page(items, page.limit, lambda a: a.column)
