"""OpenLineage events into the graph: validated, converted, loaded as tasks, audited.

`Intake.take(document, actor)` takes one event or a batch (a JSON array, as some producers send:
the stock Python client, the Spark listener and Airflow's provider send one event per POST) and

1. checks every event of it and converts each (`ingest.openlineage`) before anything is written:
   a bad event is an `EventError` naming the JSON path of the bad field, and nothing of the batch
   is loaded;
2. per event, in order, compares it with the run state its task was last loaded from
   (`openlineage_run` on the Task: run id, event type, event time; or an earlier event's of the
   batch) and keeps only an event that supersedes it (`RunState.supersedes`): the same event
   again changes nothing, a START or RUNNING after its run's COMPLETE is refused, a newer run
   replaces an older one, so events in any order converge;
3. loads the batch's winners through one `GraphStore.upsert_tasks` (a task whose lineage is the
   same content stays `unchanged`) and, in the same write, sets the run state and the facet's runtime edges
   (`runtime_lineage`, read by `lineage_reconcile`) and, for a load, the audit entry
   (`lineage.openlineage`, the producer's token user).

Called by POST /api/v1/lineage (api/http/routers/openlineage.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from watershed.api.service.accounts.rights import ForbiddenError
from watershed.api.service.audit import audit_params
from watershed.graph import ids
from watershed.graph.catalog import Catalog
from watershed.graph.store import GraphStore
from watershed.ingest.openlineage.convert import Conversion, Converter, RunState
from watershed.ingest.openlineage.events import EventError, parse_events
from watershed.ingest.openlineage.names import DatasetNameError
from watershed.ingest.settings import IngestSettings

AUDIT_ACTION = "lineage.openlineage"
#: rows per run-state statement (a POST's array is bounded by the body's size; this bounds a statement)
RUN_STATE_ROWS = 1000
RUN_STATES = "UNWIND $ids AS id MATCH (k:Task {id: id}) RETURN k.id, k.openlineage_run, k.version"
#: the batch's run states, and for each task it loads the audit entry (the `audit_*` keys of
#: `audit_params`): one statement for the batch, not one entry statement per event
SET_RUN_STATES = (
    "UNWIND $rows AS r MATCH (k:Task {id: r.task}) SET k.openlineage_run = r.state, k.runtime_lineage = r.runtime "
    "WITH r WHERE r.audit_id IS NOT NULL "
    "CREATE (:AuditEntry {id: r.audit_id, at: r.audit_at, actor: r.audit_actor, action: r.audit_action, "
    "target: r.audit_target, before: r.audit_before, after: r.audit_after})"
)


class IntakeResult(BaseModel):
    """What one POST did, per task id."""

    events: int = 0
    #: tasks whose lineage was (re)loaded
    loaded: list[str] = Field(default_factory=list)
    #: tasks whose lineage was already this content (a new run of the same job): run state updated
    unchanged: list[str] = Field(default_factory=list)
    #: tasks an event did not touch: the same event again, or older than what the task was loaded from
    superseded: list[str] = Field(default_factory=list)
    #: events with no lineage to load (a DatasetEvent, a run event without outputs or SQL)
    ignored: int = 0


class Intake:
    """The intake use case on one graph, under one configuration of names and dialects."""

    def __init__(self, graph: GraphStore, settings: IngestSettings | None = None) -> None:
        self.graph = graph
        self.converter = Converter(settings)
        # read-decide-write of one task's run state must not interleave in this process
        self._lock = threading.Lock()

    def convert_all(self, document: Any) -> tuple[int, list[Conversion | None]]:
        """Every event of the document checked and converted, or the first bad one's error."""
        events = parse_events(document)
        batch = isinstance(document, list)
        conversions = []
        for index, event in enumerate(events):
            try:
                conversions.append(self.converter.convert(event))
            except DatasetNameError as exc:
                raise EventError(f"[{index}]" if batch else "", str(exc)) from None
        return len(events), conversions

    def take(self, document: Any, actor: str, covers: Callable[[str], bool] | None = None) -> IntakeResult:
        """Load the document's events as `actor`; `covers` (a caller limited to databases): whether
        a database is theirs, checked for every table the batch writes before anything is."""
        count, conversions = self.convert_all(document)
        for conversion in conversions if covers is not None else []:
            for table in conversion.lineage.writes if conversion is not None else []:
                database = ids.split(table)[0]
                if not covers(database):
                    raise ForbiddenError(f"lineage right on database {database} needed (job writes {table})")
        result = IntakeResult(events=count)
        with self._lock:
            self._load([c for c in conversions if c is not None], actor, result)
        result.ignored = sum(1 for c in conversions if c is None)
        return result

    def _load(self, conversions: list[Conversion], actor: str, result: IntakeResult) -> None:
        """The batch's events in order, each against the run state before it (the graph's, or an
        earlier event's of the batch), the winners loaded by one `upsert_tasks`."""
        task_ids = list(dict.fromkeys(c.task.task_id for c in conversions))
        stored = {
            task: (RunState.from_json(state), version)
            for task, state, version in self.graph.read(RUN_STATES, {"ids": task_ids})
        }
        winners: dict[str, Conversion] = {}
        for conversion in conversions:
            task = conversion.task.task_id
            before = winners[task].state if task in winners else stored.get(task, (None, None))[0]
            if conversion.state.supersedes(before):
                winners[task] = conversion
            else:
                result.superseded.append(task)
        if not winners:
            return
        rows: list[dict[str, Any]] = []
        tables = {}
        for task, conversion in winners.items():
            state = conversion.state
            runtime = conversion.runtime
            runtime_json = json.dumps(runtime, separators=(",", ":")) if runtime is not None else None
            row: dict[str, Any] = {
                "task": task,
                "state": state.to_json(),
                "runtime": runtime_json,
                "audit_id": None,
            }
            rows.append(row)
            if conversion.catalog is not None:
                tables.update(conversion.catalog.tables)
            # the version read under the lock: only a load is audited, in the load's own write
            if stored.get(task, (None, None))[1] == conversion.task.version:
                result.unchanged.append(task)
                continue
            result.loaded.append(task)
            after = {
                "run": state.run_id,
                "event": state.event_type,
                "time": state.event_time.isoformat(),
                "version": conversion.task.version,
                "column_edges": sum(len(c.sources) for c in conversion.lineage.columns),
                "weak_edges": len(conversion.lineage.weak_references),
                "table_edges": len(conversion.lineage.table_edges),
            }
            row.update(audit_params(actor, AUDIT_ACTION, task, None, after))
        also = [
            (SET_RUN_STATES, {"rows": rows[at : at + RUN_STATE_ROWS]})
            for at in range(0, len(rows), RUN_STATE_ROWS)
        ]
        catalog = (
            Catalog(default_database=self.converter.names.default_database, tables=tables) if tables else None
        )
        self.graph.upsert_tasks([(c.task, c.lineage) for c in winners.values()], catalog, also=also)
