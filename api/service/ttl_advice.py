"""TTL advice: compute it from the graph, compute and store it on the Column nodes, and read what
is stored. Written once here.

- `advise`: every column's recommendation from the graph, batch by batch of tables, keeping only
  the counts, the top by savings and a few problems (`watershed ttl advise`);
- `store_here`: compute and store under a run id in this process (the nightly chain's TTL step);
  `queue` and `wait`: the same run as the Celery task on the `ttl` queue (`watershed ttl run`);
  both are `ttl_advisor.tasks.advise_and_store`, the task's function: it advises again only the
  columns whose inputs changed since the last complete run and carries the rest forward, unless
  `full` (or a full run is due: ttl_advisor/batches.py);
- `stored`: the stored advice, biggest savings first (bytes, else days cut), a page at a time,
  with its total (`GET /ttl/advice`).

Each face renders the errors and adds its own advice (which command to run); the broker is named
without its password.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

import redis
from celery.exceptions import TimeoutError as CeleryTimeout
from celery.result import AsyncResult
from kombu.exceptions import OperationalError
from kombu.utils.url import maybe_sanitize_url
from pydantic import BaseModel, Field

from watershed.api.service.celery_app import TTL_QUEUE, app_for, workers_serving
from watershed.api.service.pages import CursorError, Page, decode_cursor, encode_cursor
from watershed.graph.backends import UnreachableGraphError, open_answering
from watershed.graph.errors import WatershedError
from watershed.graph.store import GraphStore
from watershed.propagation.settings import PropagationSettings
from watershed.ttl_advisor.advisor import top_by_savings
from watershed.ttl_advisor.batches import advise_in_batches
from watershed.ttl_advisor.graph_uses import has_tables
from watershed.ttl_advisor.model import AdviceCounts, Recommendation
from watershed.ttl_advisor.settings import AdvisorSettings
from watershed.ttl_advisor.tasks import (
    TASK_NAME,
    GraphUnreachableError,
    TtlRunSummary,
    advise_and_store,
    new_run_id,
)

#: how many size problems an advice keeps to show
PROBLEMS_SHOWN = 5


class TtlAdviceError(WatershedError, LookupError):
    """Advice the graph cannot give as asked: it has no tables, or not the one asked for."""


class TtlRunError(WatershedError, RuntimeError):
    """A TTL run could not be queued, failed, or did not finish in time: one line saying which."""


class TtlBrokerUnreachableError(TtlRunError):
    """The Celery broker does not answer (nothing was queued, or the answer was lost)."""


class TtlAdvice(BaseModel):
    """A column's stored TTL advice (written by a TTL run: `watershed ttl run`, the nightly chain)."""

    column: str
    table: str
    status: str
    ttl_days_recommended: int | None = None
    #: bytes the recommended TTL would free (sampled ORC files); None when the table's size is unknown
    savings_bytes: int | None = None
    #: days of retention the advice cuts (the table's TTL minus the recommendation; the table's
    #: whole TTL for an unused column); None when the table has no TTL or the run predates it
    days_cut: int | None = None
    #: tools outside the warehouse that read the table (the catalog's `external_readers`): why a
    #: column no task reads is kept
    read_outside_by: list[str] = Field(default_factory=list)
    evidence: list[dict[str, Any]] = Field(default_factory=list)


# ------------------------------------------------------------------ computed


@dataclass
class Advice:
    """What advising the graph found: the totals, the top recommendations by savings, and the
    first few tables whose size could not be sampled."""

    counts: AdviceCounts = field(default_factory=AdviceCounts)
    top: list[Recommendation] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def advise(
    store: GraphStore,
    settings: AdvisorSettings,
    *,
    graph_name: str,
    table: str | None = None,
    top: int = 20,
    min_savings: int = 0,
) -> Advice:
    """Every column's recommendation (only `table`'s when given), the `top` by savings kept.

    Batch by batch of tables (`ttl_batch_tables`): only the counts, the top so far and a few
    problems outlive a batch; the top of (top so far + this batch) is the top of all batches.
    """
    if not has_tables(store):
        # A mistyped WATERSHED_GRAPH_NAME opens an empty graph: "0 columns" would read as advice.
        raise TtlAdviceError(
            f"graph {graph_name!r} has no tables: no such graph, or nothing harvested into it yet"
        )
    wanted = table.lower() if table else None
    found = Advice()
    for batch in advise_in_batches(store, settings, table=wanted):
        if wanted is not None and batch.catalog.get(wanted) is None:
            raise TtlAdviceError(f"{table}: no such table in the graph")
        found.counts.add(batch.recommendations)
        found.top = top_by_savings([*found.top, *batch.recommendations], top, min_savings)
        found.problems += batch.problems[: PROBLEMS_SHOWN - len(found.problems)]
    return found


# ------------------------------------------------------------------ computed and stored


def store_here(run_id: str, *, full: bool = False) -> TtlRunSummary:
    """Compute and store under `run_id` in this process the advice of the columns whose inputs
    changed since the last complete run (every column's when `full`); idempotent."""
    # The task's function opens a FalkorDB graph unchecked (a refused connection escapes as the
    # driver's own error): check first, the one way every entry point opens the graph.
    try:
        open_answering().close()
    except UnreachableGraphError as exc:
        raise TtlRunError(f"TTL run {run_id}: {exc}") from None
    try:
        return TtlRunSummary.model_validate(advise_and_store(run_id, full))
    except GraphUnreachableError as exc:
        raise TtlRunError(str(exc)) from None


@dataclass
class QueuedTtlRun:
    run_id: str
    #: the broker it was queued on, without its password
    broker: str
    task_id: str
    #: whether a worker served the `ttl` queue when it was queued (else it waits for one)
    serving: bool
    result: AsyncResult


def queue(
    run_id: str | None = None, settings: PropagationSettings | None = None, *, full: bool = False
) -> QueuedTtlRun:
    """Queue a TTL run (a new `ttl-<time>-<hex>` id unless given; every column advised when `full`)
    on the Celery `ttl` queue."""
    settings = settings or PropagationSettings()
    broker = maybe_sanitize_url(settings.broker_url())
    celery = app_for(settings)
    run_id = run_id or new_run_id()
    try:
        serving = workers_serving(celery, TTL_QUEUE)
        sent = celery.send_task(TASK_NAME, args=[run_id, full])
    except (OperationalError, redis.RedisError, OSError) as exc:
        raise TtlBrokerUnreachableError(f"cannot reach the Celery broker at {broker} ({exc})") from None
    return QueuedTtlRun(run_id=run_id, broker=broker, task_id=sent.id, serving=serving, result=sent)


def wait(queued: QueuedTtlRun, seconds: float) -> TtlRunSummary:
    """What the queued run stored, once a worker finished it within `seconds`."""
    try:
        result = queued.result.get(timeout=seconds, interval=0.2)
    except CeleryTimeout:
        raise TtlRunError(
            f"TTL run {queued.run_id} did not finish within {seconds:g} s; it stays queued (or running)"
        ) from None
    except (OperationalError, redis.RedisError) as exc:
        raise TtlBrokerUnreachableError(
            f"lost the Celery broker at {queued.broker} while waiting for TTL run {queued.run_id} ({exc})"
        ) from None
    except Exception as exc:
        # the worker's exception, rebuilt from the result backend: its message names the input at fault
        raise TtlRunError(
            f"TTL run {queued.run_id} failed on the worker: {type(exc).__name__}: {exc}"
        ) from None
    return TtlRunSummary.model_validate(result)


# ------------------------------------------------------------------ stored

#: what a column of unknown savings (or unknown days cut) sorts as: after every known one, zero included
UNKNOWN = -1
#: above any real saving: where the first page starts
START = 2**62
#: the total is counted up to this many columns (a count is a scan of the advised columns)
TOTAL_BOUND = 1_000_000
#: what an empty list says to do
RUN_HINT = "a TTL run stores the advice: run `watershed ttl run` (the nightly chain runs it too)"
Status = Literal["ttl", "keep", "unused"]

# Biggest savings first: the bytes the advice frees (the retention cut times the table's sampled
# size per partition) when the table's size is known; then the days of retention it cuts (the
# table's TTL minus the recommendation; all of it for an unused column); then the column id.
_KEYS = (
    f"WITH c, coalesce(c.ttl_savings_bytes, {UNKNOWN}) AS saved, coalesce(c.ttl_days_cut, {UNKNOWN}) AS cut "
    "WHERE saved >= $min_saved"
)
_FIELDS = (
    "c.id, c.table, c.ttl_status, c.ttl_days_recommended, c.ttl_savings_bytes, cut, c.ttl_read_outside_by, "
    "c.ttl_evidence"
)
# keyset paging on (saved descending, cut descending, id ascending): the cursor holds the last row's
_AFTER = "(saved < $saved OR (saved = $saved AND (cut < $cut OR (cut = $cut AND c.id > $after))))"
_ORDER = "ORDER BY saved DESC, cut DESC, c.id LIMIT $n"
_ADVISED = "c.ttl_status IS NOT NULL AND ($status IS NULL OR c.ttl_status = $status)"
_OF_ALL = f"MATCH (c:Column) WHERE {_ADVISED} "
_OF_TABLE = f"MATCH (t:Table {{id: $table}})-[:HAS_COLUMN]->(c:Column) WHERE {_ADVISED} "
ALL = f"{_OF_ALL}{_KEYS} AND {_AFTER} RETURN {_FIELDS} {_ORDER}"
OF_TABLE = f"{_OF_TABLE}{_KEYS} AND {_AFTER} RETURN {_FIELDS} {_ORDER}"
COUNT_ALL = f"{_OF_ALL}{_KEYS} WITH c LIMIT $bound RETURN count(c)"
COUNT_OF_TABLE = f"{_OF_TABLE}{_KEYS} WITH c LIMIT $bound RETURN count(c)"
TABLE_EXISTS = "MATCH (t:Table {id: $table}) RETURN t.id"


class TtlAdvicePage(Page[TtlAdvice]):
    """A page of stored advice with the number of columns it pages through (`total`, counted up to
    `TOTAL_BOUND`: `total_bounded` when it reached it) and, when there is none, what to run."""

    total_bounded: bool = False
    hint: str | None = None


def stored(
    store: GraphStore,
    *,
    table: str | None = None,
    status: Status | None = None,
    min_savings: int | None = None,
    cursor: str | None = None,
    limit: int,
) -> TtlAdvicePage:
    """The stored advice (of `table`'s columns, a canonical table id, when given; of one `status`)
    freeing at least `min_savings` bytes, biggest savings first (see `_KEYS`) and unknown savings
    last, `limit` after a cursor of the previous page. TtlAdviceError when `table` is not in the
    graph, CursorError for a cursor no page handed out."""
    position = decode_cursor(cursor)
    try:
        keys = {
            "saved": int(position.get("saved", START)),
            "cut": int(position.get("cut", START)),
            "after": str(position.get("after", "")),
        }
    except (TypeError, ValueError):
        raise CursorError("cursor: not a cursor this API handed out") from None
    params = {"status": status, "min_saved": UNKNOWN if min_savings is None else min_savings}
    if table:
        if not store.read(TABLE_EXISTS, {"table": table}):
            raise TtlAdviceError(f"table {table} not found")
        params["table"] = table
    rows = store.read(OF_TABLE if table else ALL, {**params, **keys, "n": limit + 1})
    total = store.read(COUNT_OF_TABLE if table else COUNT_ALL, {**params, "bound": TOTAL_BOUND})[0][0]
    items = [
        TtlAdvice(
            column=c,
            table=t,
            status=kind,
            ttl_days_recommended=days,
            savings_bytes=savings,
            days_cut=None if cut == UNKNOWN else cut,
            read_outside_by=list(outside or []),
            evidence=json.loads(evidence) if evidence else [],
        )
        for c, t, kind, days, savings, cut, outside, evidence in rows
    ]
    more = len(items) > limit
    items = items[:limit]
    next_cursor = None
    if more and items:
        last = items[-1]
        next_cursor = encode_cursor(
            {
                "saved": UNKNOWN if last.savings_bytes is None else last.savings_bytes,
                "cut": UNKNOWN if last.days_cut is None else last.days_cut,
                "after": last.column,
            }
        )
    filtered = table or status or min_savings
    return TtlAdvicePage(
        items=items,
        next_cursor=next_cursor,
        total=total,
        total_bounded=total >= TOTAL_BOUND,
        hint=None if total else f"no stored advice{' matches these filters' if filtered else ''}; {RUN_HINT}",
    )
