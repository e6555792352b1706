"""Stored TTL advice (what `watershed ttl advise` and the nightly task wrote onto the columns): the
biggest savings first, for the whole graph or one table.

Columns whose savings are unknown (no sampled size) come last. Without `table` the list orders
every advised column by its savings (a scan of the Column label, bounded by the page size).
"""

from __future__ import annotations

import json

from fastapi import APIRouter, Depends, Query

from watershed.api.http.deps import Service, service, viewer
from watershed.api.http.models import TtlAdvice
from watershed.api.http.nodes import TABLE_ID, missing, parse
from watershed.api.http.paging import Page, PageRequest, encode_cursor, page_request
from watershed.api.service.accounts.rights import Me

router = APIRouter(tags=["ttl"])

#: what a column of unknown savings sorts as (after every known saving, zero included)
UNKNOWN = -1
SAVED = f"coalesce(c.ttl_savings_bytes, {UNKNOWN})"
FIELDS = "c.id, c.table, c.ttl_status, c.ttl_days_recommended, c.ttl_savings_bytes, c.ttl_evidence"
# keyset paging on (savings descending, id ascending): the cursor holds the last row's pair
AFTER = f"({SAVED} < $saved OR ({SAVED} = $saved AND c.id > $after)) AND {SAVED} >= $min_saved"
ORDER = f"ORDER BY {SAVED} DESC, c.id LIMIT $n"
ALL = f"MATCH (c:Column) WHERE c.ttl_status IS NOT NULL AND {AFTER} RETURN {FIELDS} {ORDER}"
OF_TABLE = (
    "MATCH (t:Table {id: $table})-[:HAS_COLUMN]->(c:Column) "
    f"WHERE c.ttl_status IS NOT NULL AND {AFTER} RETURN {FIELDS} {ORDER}"
)
TABLE_EXISTS = "MATCH (t:Table {id: $table}) RETURN t.id"
#: above any real saving: where the first page starts
START = 2**62


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
    params = {
        "saved": int(position.get("saved", START)),
        "after": str(position.get("after", "")),
        "min_saved": UNKNOWN if min_savings is None else min_savings,
        "n": page.limit + 1,
    }
    if table:
        table_id, _, _ = parse(table, "Table")
        if not svc.graph.read(TABLE_EXISTS, {"table": table_id}):
            raise missing("table", table_id)
        rows = svc.graph.read(OF_TABLE, {"table": table_id, **params})
    else:
        rows = svc.graph.read(ALL, params)
    items = [
        TtlAdvice(
            column=c,
            table=t,
            status=status,
            ttl_days_recommended=days,
            savings_bytes=saved,
            evidence=json.loads(evidence) if evidence else [],
        )
        for c, t, status, days, saved, evidence in rows
    ]
    more = len(items) > page.limit
    items = items[: page.limit]
    last = items[-1] if items else None
    cursor = None
    if more and last is not None:
        cursor = encode_cursor(
            {"saved": UNKNOWN if last.savings_bytes is None else last.savings_bytes, "after": last.column}
        )
    return Page(items=items, next_cursor=cursor)
