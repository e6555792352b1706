"""The graph's lineage sources, and the stale tasks of OpenLineage producers: written once here.

Every task remembers the source that last loaded it (`Task.source`: a harvest corpus such as
`files:/abs/path` or `table:db.tasks`, or `openlineage:<job namespace>` for a producer's events)
and when it was last loaded or found unchanged (`Task.seen_at`, UTC ISO text). A harvest prunes
its own source's tasks; an OpenLineage producer never says a job is gone, so a task of an
`openlineage:*` source not seen for `openlineage_stale_days` (a setting, 7 by default) is
reported stale here, and never deleted. Tasks loaded before sources existed are listed under no
name (kind `none`) until a harvest adopts them (ingest/harvest.py).

`watershed lineage sources [--stale]` (api/cli/lineage_sources.py) and
`GET /api/v1/lineage/sources[/stale]` (api/http/routers/lineage_sources.py) call `sources` and
`stale_tasks`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import BaseModel

from watershed.api.service.pages import Page, keyed_page
from watershed.graph import queries
from watershed.graph.errors import WatershedError
from watershed.graph.store import GraphStore
from watershed.ingest.harvest import OPENLINEAGE_PREFIX

SourceKind = Literal["harvest", "openlineage", "none"]
#: the longest stale time asked for (a century): beyond it no date is stale, and dates overflow
MAX_STALE_DAYS = 36500


class LineageSourceError(WatershedError, ValueError):
    """A request about sources that cannot be answered as asked; the message names the input."""


class LineageSource(BaseModel):
    """One source of the graph's tasks."""

    #: null for the tasks loaded before sources existed
    name: str | None
    kind: SourceKind
    tasks: int
    #: the newest `seen_at` of its tasks (UTC ISO), null when none was ever seen
    last_seen: str | None = None
    #: tasks not seen for `stale_days` (OpenLineage sources only: a harvest prunes instead)
    stale: int = 0


class StaleTask(BaseModel):
    task_id: str
    source: str
    #: when it was last loaded or seen (UTC ISO); null: before seen times were kept
    seen_at: str | None = None


def kind_of(name: str | None) -> SourceKind:
    if name is None:
        return "none"
    return "openlineage" if name.startswith(OPENLINEAGE_PREFIX) else "harvest"


def cutoff(stale_days: float, now: datetime | None = None) -> str:
    """The seen time before which a task is stale, as the UTC ISO text `seen_at` is compared with."""
    if not 0 < stale_days <= MAX_STALE_DAYS:
        raise LineageSourceError(f"stale days {stale_days}: must be more than 0 and at most {MAX_STALE_DAYS}")
    moment = (now or datetime.now(UTC)) - timedelta(days=stale_days)
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def sources(
    store: GraphStore,
    *,
    stale_days: float,
    after: str | None = None,
    limit: int = 100,
    now: datetime | None = None,
) -> Page[LineageSource]:
    """The sources in name order (the source-less tasks first), `limit` from after the name
    `after` (a cursor's `after`; None: from the start), with the total number of sources.

    One aggregate over the tasks: a graph holds one source per corpus and producer namespace.
    """
    rows = store.read(queries.TASK_SOURCES, {"cutoff": cutoff(stale_days, now)})
    found = sorted(
        (
            LineageSource(
                name=name,
                kind=kind_of(name),
                tasks=count,
                last_seen=last_seen,
                stale=stale if kind_of(name) == "openlineage" else 0,
            )
            for name, count, last_seen, stale in rows
        ),
        key=lambda source: (source.name is not None, source.name or ""),
    )
    if after is not None:
        found = [source for source in found if source.name is not None and source.name > after]
    total = len(rows)
    return keyed_page(found[: limit + 1], limit, lambda source: source.name or "", total=total)


def stale_tasks(
    store: GraphStore,
    *,
    stale_days: float,
    source: str | None = None,
    after: str = "",
    limit: int = 50,
    now: datetime | None = None,
) -> Page[StaleTask]:
    """The stale tasks of `source` (an `openlineage:*` name), or of every OpenLineage source,
    in task id order, `limit` from after the id `after`."""
    if source is not None and kind_of(source) != "openlineage":
        raise LineageSourceError(
            f"source {source!r}: only OpenLineage sources ({OPENLINEAGE_PREFIX}*) go stale; "
            "a harvest's tasks are pruned when its corpus drops them"
        )
    rows = store.read(
        queries.STALE_TASKS,
        {"source": source, "cutoff": cutoff(stale_days, now), "after": after, "n": limit + 1},
    )
    tasks = [StaleTask(task_id=task_id, source=name, seen_at=seen_at) for task_id, name, seen_at in rows]
    return keyed_page(tasks, limit, lambda task: task.task_id)
