"""A harvest run, and the harvest runs the graph records: written once here.

A run checks every input before Spark starts or anything is written, opens the configured graph
checked to answer (graph/backends.open_answering), extracts every task's lineage with Spark in
this process (the driver) and loads it (ingest/harvest.run_harvest). `watershed harvest`
(api/cli/harvest.py) and the nightly chain's harvest step (api/service/nightly/steps.py) call
`run`; the spark-submit job (`ingest/harvest.py`'s own main) is the same run without this floor,
and the nightly reads what it left from its run.json. The runs router (api/http/routers/runs.py)
lists and shows the runs and their error records through `listing`, `one` and `problems`.

Each face renders the errors: a `HarvestRunError` names the input at fault, an unreachable graph
is the graph's `UnreachableGraphError`, and a run that fails later raises its own exception (its
run.json says `failed` and why).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, computed_field

from watershed.api.service.notifications import events
from watershed.api.service.pages import Page, encode_cursor, keyed_page
from watershed.graph.backends import UnreachableGraphError, open_answering
from watershed.graph.catalog import Catalog, CatalogError
from watershed.graph.errors import WatershedError
from watershed.graph.model import HarvestRun
from watershed.graph.settings import GraphSettings
from watershed.graph.store import GraphStore
from watershed.ingest.harvest import (
    HarvestError,
    HarvestReport,
    catalog_from_spark,
    check_out_dir,
    run_harvest,
    source_name,
    spark_session,
)
from watershed.ingest.settings import IngestSettings
from watershed.ingest.sources import TaskSourceError, check_task_source

Say = Callable[[str], None]


class HarvestRunError(WatershedError, ValueError):
    """A harvest that cannot run as asked: the message names the input at fault (a task source,
    a catalog, the output directory, a task table)."""


class HarvestRunNotFoundError(WatershedError, LookupError):
    """No harvest run of that id, or no error records where its run directory should be."""


class HarvestProblem(BaseModel):
    """One line of a harvest run's errors.jsonl (a statement that could not be analysed, a bad
    task record, a duplicate task id): a record, not an exception. `text` says it in words; the
    parser's own description, when the record has one, stays in `detail`."""

    model_config = {"extra": "allow"}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def text(self) -> str:
        """Which task, statement (counted from 1), line and column, and what is wrong there."""
        record = self.model_extra or {}
        index = record.get("statement_index")
        where = [
            f"{label} {value}"
            for label, value in (
                ("task", record.get("task_id")),
                ("statement", None if index is None else index + 1),
                ("line", record.get("line")),
                ("column", record.get("column")),
            )
            if value is not None
        ]
        if record.get("source") and index is None:
            where.append(f"in {record['source']}")
        said = ", ".join(where) or "the run"
        return f"{said[:1].upper()}{said[1:]}: {record.get('message') or record.get('error') or 'no message'}"


@dataclass(frozen=True)
class HarvestSource:
    """What a run harvests: exactly one of `tasks` (a directory of .sql files or a .jsonl/.parquet
    export) and `tasks_table` (a Spark/Hive table); the schemas from `catalog` (a JSON file) or,
    with `spark_catalog`, from the Spark/Hive catalog. `name` is the source its tasks are loaded
    as and pruned within (ingest/harvest.source_name: default `files:<absolute path>` or
    `table:<name>`)."""

    tasks: Path | None = None
    tasks_table: str | None = None
    catalog: Path | None = None
    spark_catalog: bool = False
    name: str | None = None

    def source_name(self) -> str:
        """The checked source name; HarvestRunError naming the input when it is no usable name."""
        try:
            return source_name(self.name, self.tasks, self.tasks_table)
        except HarvestError as exc:
            raise HarvestRunError(str(exc)) from None

    def __str__(self) -> str:
        return str(self.tasks if self.tasks is not None else self.tasks_table)


def check(source: HarvestSource, out: Path) -> Catalog | None:
    """Every input checked before Spark starts or anything is written; the catalog file's catalog."""
    source.source_name()
    try:
        if source.tasks is not None:
            check_task_source(source.tasks)
        check_out_dir(out)
        return Catalog.load(source.catalog) if source.catalog is not None else None
    except (TaskSourceError, HarvestError, CatalogError) as exc:
        raise HarvestRunError(str(exc)) from None


def run(
    source: HarvestSource,
    *,
    out: Path,
    settings: IngestSettings,
    graph: GraphSettings | None,
    spark=None,
    master: str | None = None,
    prune: bool = True,
    prune_force: bool = False,
    progress: Say | None = None,
    started: Say | None = None,
) -> HarvestReport:
    """Harvest `source` into the graph `graph` points at (None: extract only), run records under `out`.

    `spark` is the session to use, else one on `master` (else the setting's). `started` hears the
    one line naming what runs where, once Spark is up. A refused prune is a report whose status
    is `prune-refused` (the lineage loaded stays); the caller decides what that means for it.
    """
    catalog = check(source, out)
    store: GraphStore | None = None
    if graph is not None:
        try:
            store = open_answering(graph, schema=True)
        except UnreachableGraphError:
            raise
        except WatershedError as exc:  # a backend the settings name that does not exist
            raise HarvestRunError(str(exc)) from None
    try:
        session = spark or spark_session(master or settings.spark_master)
        if source.spark_catalog and catalog is None:
            catalog = catalog_from_spark(session)
        if started is not None:
            started(f"harvesting {source} on {session.sparkContext.master}")
        try:
            report = run_harvest(
                session,
                tasks=str(source.tasks) if source.tasks is not None else None,
                tasks_table=source.tasks_table,
                catalog=catalog,
                store=store,
                out_dir=out,
                prune=prune,
                prune_force=prune_force,
                prune_max_fraction=settings.prune_max_fraction,
                progress=progress or (lambda _message: None),
                settings=settings,
                source=source.name,
            )
        except (TaskSourceError, HarvestError) as exc:
            raise HarvestRunError(str(exc)) from None
        # the run record is ingest's own write: its event follows it (docs/notifications.md)
        event = events.harvest_errors(
            report.run_id, report.source, report.tasks, report.tasks_with_errors, report.statement_errors
        )
        if store is not None and event is not None:
            store.write_all([event])
        return report
    finally:
        if store is not None:
            store.close()


# ------------------------------------------------------------------ the recorded runs

_FIELDS = ("id", "started_at", "inputs", "tasks", "errors", "loaded", "unchanged", "seconds")
_RETURNED = ", ".join(f"h.{name}" for name in _FIELDS)
# the cursor compared as a plain string (`toString`): FalkorDB answered an indexed `h.id < $after`
# with the runs at and above it too, so every page after the first was the first page again
RUNS = f"MATCH (h:HarvestRun) WHERE toString(h.id) < $after RETURN {_RETURNED} ORDER BY h.id DESC LIMIT $n"
RUN = f"MATCH (h:HarvestRun {{id: $id}}) RETURN {_RETURNED}"
#: a run id that can name a directory under DATA_DIR/harvest (what run_harvest makes, and no path)
_RUN_DIR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,200}$")
#: above every run id: where the first page starts (ids sort by their start time)
FIRST = "~"


def _run(row) -> HarvestRun:
    return HarvestRun(**{k: v for k, v in zip(_FIELDS, row, strict=True) if v is not None})


def listing(store: GraphStore, *, after: str = FIRST, limit: int) -> Page[HarvestRun]:
    """The runs the graph records, newest first, `limit` from below `after` (a cursor's `after`)."""
    runs = [_run(row) for row in store.read(RUNS, {"after": after, "n": limit + 1})]
    return keyed_page(runs, limit, lambda run: run.id)


def one(store: GraphStore, run_id: str) -> HarvestRun:
    rows = store.read(RUN, {"id": run_id})
    if not rows:
        raise HarvestRunNotFoundError(f"harvest run {run_id} not found")
    return _run(rows[0])


def problems(
    store: GraphStore, data_dir: Path, run_id: str, *, start: int = 0, limit: int
) -> Page[HarvestProblem]:
    """The run's error records (errors.jsonl under DATA_DIR/harvest/RUN), `limit` from line `start`."""
    run = one(store, run_id)
    if not _RUN_DIR.match(run.id) or ".." in run.id:
        raise HarvestRunNotFoundError(f"no error records for harvest run {run_id}")
    path = data_dir / "harvest" / run.id / "errors.jsonl"
    items: list[HarvestProblem] = []
    more = False
    number = start
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines):
                if number < start or not line.strip():
                    continue
                if len(items) == limit:
                    more = True
                    break
                items.append(HarvestProblem(**json.loads(line)))
    except FileNotFoundError:
        raise HarvestRunNotFoundError(
            f"no error records for harvest run {run_id} under {path.parent.parent} (harvested with another --out?)"
        ) from None
    return Page[HarvestProblem](items=items, next_cursor=encode_cursor({"line": number}) if more else None)
