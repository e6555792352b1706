"""An OpenLineage event as a task's lineage: what `GraphStore.upsert_tasks` loads.

The job is the task: its id is `graph.ids.join(job namespace, job name)` (`spark.`app.insert``),
its source `openlineage:<job namespace>`. Its lineage comes

- from the job's SQL facet when there is one, read by Watershed's own extractor (dialect: the
  facet's, else `spark` when the run's processing engine is Spark, else the
  `openlineage_dialect` setting; the run's nominal start date is `${date}`), so it has what a
  harvested task has: kinds, functions, weak references, predicates, partition windows. The
  outputs' columnLineage facets are then kept beside it (`runtime`) for `lineage_reconcile`;
- else from the outputs' columnLineage facets: DIRECT/IDENTITY → `direct`, DIRECT/TRANSFORMATION
  → `expression`, DIRECT/AGGREGATION → `aggregate`; INDIRECT/FILTER, JOIN, GROUP_BY, SORT,
  WINDOW, CONDITIONAL → weak references with role filter, join, group, order, window, condition;
  `masking: true` → the edge carries `OPENLINEAGE_MASKING` among its functions; a transformation's
  description is kept on its edge. Every input flows to every output at table level, as the
  extractor records a statement's reads and writes.

Datasets with a `symlinks` facet naming a TABLE that a `table` rule reads are that table (Spark
reports a table's files and names the table in a symlink). The inputs' and outputs' `schema`
facets are the catalog the SQL is read with and the column types the load sets.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

from watershed.graph import ids
from watershed.graph.catalog import Catalog, CatalogColumn, CatalogTable
from watershed.graph.lineage import (
    KIND_STRENGTH,
    OPENLINEAGE_MASKING,
    ColumnLineage,
    Kind,
    Role,
    SourceColumn,
    SqlTask,
    StatementProblem,
    TableEdge,
    TableRead,
    TaskLineage,
    WeakReference,
)
from watershed.ingest.extract import extract_lineage
from watershed.ingest.limits import AnalysisLimitError
from watershed.ingest.openlineage.events import (
    ColumnFields,
    Dataset,
    DatasetEvent,
    Event,
    InputField,
    JobEvent,
    RunEvent,
    Transformation,
)
from watershed.ingest.openlineage.names import Names
from watershed.ingest.settings import IngestSettings

#: the source of a task an OpenLineage producer sent, by its job namespace
SOURCE_PREFIX = "openlineage:"

DIRECT_KINDS: dict[str, Kind] = {
    "IDENTITY": "direct",
    "TRANSFORMATION": "expression",
    "AGGREGATION": "aggregate",
}
#: a DIRECT subtype the spec may add later reads as an expression (the value is derived, not copied)
OTHER_DIRECT: Kind = "expression"
INDIRECT_ROLES: dict[str, Role] = {
    "FILTER": "filter",
    "JOIN": "join",
    "GROUP_BY": "group",
    "SORT": "order",
    "WINDOW": "window",
    "CONDITIONAL": "condition",
}
#: an INDIRECT subtype the spec may add later: the column still decides which rows flow
OTHER_INDIRECT: Role = "filter"
#: how far along its run an event is: a lower one of the same run never undoes a higher one
EVENT_RANK = {"START": 0, "RUNNING": 1, "OTHER": 1, "": 1, "COMPLETE": 2, "FAIL": 2, "ABORT": 2, "JOB": 2}


@dataclass(frozen=True, slots=True)
class RunState:
    """The event a task's lineage came from, kept on its Task node (`openlineage_run`)."""

    run_id: str
    event_type: str
    event_time: datetime

    @property
    def rank(self) -> int:
        return EVENT_RANK.get(self.event_type, 1)

    def to_json(self) -> str:
        return json.dumps({"run": self.run_id, "type": self.event_type, "time": self.event_time.isoformat()})

    @classmethod
    def from_json(cls, text: str | None) -> RunState | None:
        if not text:
            return None
        data = json.loads(text)
        return cls(data["run"], data["type"], datetime.fromisoformat(data["time"]))

    def same_event(self, other: RunState) -> bool:
        return (self.run_id, self.event_type, self.event_time) == (
            other.run_id,
            other.event_type,
            other.event_time,
        )

    def supersedes(self, stored: RunState | None) -> bool:
        """Whether this event's lineage replaces what `stored`'s brought: within one run a later
        stage (START < RUNNING < COMPLETE/FAIL/ABORT), or the same stage later; another run
        when it is newer. So events arriving in any order leave the same task."""
        if stored is None:
            return True
        if self.same_event(stored):
            return False
        if self.run_id == stored.run_id:
            return (self.rank, self.event_time) > (stored.rank, stored.event_time)
        return self.event_time > stored.event_time


@dataclass(slots=True)
class Conversion:
    """What one event loads: the task, its lineage and the catalog its datasets' schemas give."""

    task: SqlTask
    lineage: TaskLineage
    catalog: Catalog | None
    state: RunState
    #: the columnLineage facet's edges beside a SQL task's own (`runtime_edges`), else None
    runtime: list[list[str]] | None


def task_id(namespace: str, name: str) -> str:
    """The task id of an OpenLineage job."""
    return ids.join(namespace.strip(), name.strip())


class Converter:
    """Events to conversions under one configuration (names, dialect, limits)."""

    def __init__(self, settings: IngestSettings | None = None) -> None:
        self.settings = settings or IngestSettings()
        self.names = Names(self.settings)

    # ------------------------------------------------------------ datasets

    def dataset_id(self, dataset: Dataset) -> str:
        symlinks = dataset.facets.symlinks
        for link in symlinks.identifiers if symlinks else []:
            rule = self.names.rule(link.namespace)
            if link.type.upper() == "TABLE" and rule is not None and rule.target.startswith("table"):
                return self.names.table_id(link.namespace, link.name)
        return self.names.table_id(dataset.namespace, dataset.name)

    def _dataset_ids(self, datasets: list[Dataset]) -> dict[tuple[str, str], str]:
        return {(d.namespace, d.name): self.dataset_id(d) for d in datasets}

    def _column(self, known: dict[tuple[str, str], str], field: InputField) -> str:
        table = known.get((field.namespace, field.name))
        if table is None:
            table = self.names.table_id(field.namespace, field.name)
        return ids.child(table, field.field.strip().lower())

    # ------------------------------------------------------------ events

    def convert(self, event: Event) -> Conversion | None:
        """The task the event loads, or None when it brings no lineage (a DatasetEvent, a run
        event without outputs and without SQL)."""
        if isinstance(event, DatasetEvent):
            return None
        job = event.job
        if isinstance(event, RunEvent):
            state = RunState(str(event.run.runId), event.eventType or "", event.eventTime)
            run_facets = event.run.facets
        else:
            assert isinstance(event, JobEvent)
            state = RunState("", "JOB", event.eventTime)
            run_facets = None
        known = self._dataset_ids([*event.inputs, *event.outputs])
        sql = job.facets.sql
        if sql is None and not event.outputs:
            return None
        catalog = self._catalog(event.inputs, event.outputs, known)
        facet = self._facet_lineage(event.inputs, event.outputs, known)
        task = SqlTask(
            task_id=task_id(job.namespace, job.name),
            sql=sql.query if sql else "",
            dialect=self._dialect(sql.dialect if sql else None, run_facets),
            source=SOURCE_PREFIX + job.namespace,
        )
        if sql is not None:
            nominal = run_facets.nominalTime if run_facets else None
            if nominal is not None:
                task.vars = {"date": nominal.nominalStartTime.date().isoformat()}
            lineage = self._sql_lineage(task, catalog)
            from_sql = True
            has_facet = any(o.facets.columnLineage for o in event.outputs)
            runtime = runtime_edges(facet) if has_facet else None
            if (
                lineage.writes
                and event.outputs
                and not _writes_an_output(lineage.writes, event.outputs, known)
            ):
                # a stale SQL facet (Spark 4.3's listener sends a session's last spark.sql text with
                # its later DataFrame actions): not this job's SQL, so neither its text nor its lineage
                task.sql, lineage, runtime, from_sql = "", facet, None, False
            elif not lineage.writes and facet.writes:
                # the SQL said nothing of what the run wrote (it failed, or it was a SELECT of a
                # DataFrame job): the runtime's lineage, with the SQL's errors kept
                lineage = facet.model_copy(update={"errors": lineage.errors, "dialect": task.dialect})
                from_sql = False
        else:
            lineage, runtime, from_sql = facet, None, False
        if not lineage.writes:
            return None
        # the SQL's lineage follows from what the hash covers; any other is hashed itself
        task.version = _version(task, None if from_sql else lineage, runtime, catalog)
        lineage.task_id, lineage.version, lineage.dialect = task.task_id, task.version, task.dialect
        return Conversion(task=task, lineage=lineage, catalog=catalog, state=state, runtime=runtime)

    def _dialect(self, declared: str | None, run_facets) -> str:
        if declared and declared.strip():
            return declared.strip().lower()
        engine = run_facets.processing_engine if run_facets else None
        if engine is not None and (engine.name or "").strip().lower() == "spark":
            return "spark"
        return self.settings.openlineage_dialect

    def _sql_lineage(self, task: SqlTask, catalog: Catalog | None) -> TaskLineage:
        try:
            return extract_lineage(task, catalog, self.settings)
        except AnalysisLimitError as exc:
            problem = StatementProblem(task_id=task.task_id, statement_index=0, message=str(exc))
            return TaskLineage(task_id=task.task_id, dialect=task.dialect, errors=[problem])

    def _catalog(
        self, inputs: list[Dataset], outputs: list[Dataset], known: dict[tuple[str, str], str]
    ) -> Catalog | None:
        tables: dict[str, CatalogTable] = {}
        for dataset in [*inputs, *outputs]:
            schema = dataset.facets.schema_
            if schema is None or not schema.fields:
                continue
            table = known[(dataset.namespace, dataset.name)]
            columns = {f.name.strip().lower(): f.type or "string" for f in schema.fields if f.name.strip()}
            # names checked and folded above: built without validation (a Spark event's schemas
            # are hundreds of columns, and a validated column costs as much as the rest of its load)
            tables[table] = CatalogTable.model_construct(
                name=table,
                columns=[CatalogColumn.model_construct(name=n, type=t.lower()) for n, t in columns.items()],
                partitioned_by=[],
            )
        return Catalog(default_database=self.names.default_database, tables=tables) if tables else None

    def _facet_lineage(
        self, inputs: list[Dataset], outputs: list[Dataset], known: dict[tuple[str, str], str]
    ) -> TaskLineage:
        reads = list(dict.fromkeys(known[(d.namespace, d.name)] for d in inputs))
        writes = list(dict.fromkeys(known[(d.namespace, d.name)] for d in outputs))
        columns: list[ColumnLineage] = []
        weak: dict[tuple[str, str, str], None] = {}
        for dataset in outputs:
            facet = dataset.facets.columnLineage
            if facet is None:
                continue
            target_table = known[(dataset.namespace, dataset.name)]
            for name, fields in facet.fields.items():
                target = ids.child(target_table, name.strip().lower())
                sources: dict[str, SourceColumn] = {}
                for field in fields.inputFields:
                    column = self._column(known, field)
                    for transformation in _transformations(fields, field):
                        if transformation.type == "INDIRECT":
                            role = INDIRECT_ROLES.get((transformation.subtype or "").upper(), OTHER_INDIRECT)
                            weak[(column, role, target_table)] = None
                        else:
                            _add_source(sources, column, transformation)
                if sources:
                    columns.append(ColumnLineage(target=target, sources=list(sources.values())))
            for field in facet.dataset:
                column = self._column(known, field)
                for transformation in field.transformations or [Transformation(type="INDIRECT")]:
                    role = INDIRECT_ROLES.get((transformation.subtype or "").upper(), OTHER_INDIRECT)
                    weak[(column, role, target_table)] = None
        return TaskLineage(
            task_id="",
            dialect="",
            reads=[TableRead(table=t) for t in reads],
            writes=writes,
            columns=columns,
            weak_references=[WeakReference(column=c, role=r, target_table=t) for c, r, t in weak],  # type: ignore[arg-type]
            table_edges=[TableEdge(source=s, target=t) for s in reads for t in writes if s != t],
        )


def _last_name(table_id: str) -> str:
    """A table's name, or the last segment of a path node's location."""
    return ids.name(table_id).rstrip("/").rpartition("/")[2].lower()


def _writes_an_output(writes: list[str], outputs: list[Dataset], known: dict[tuple[str, str], str]) -> bool:
    """Whether the SQL writes one of the event's outputs, by name: the output's id, its path's
    last segment or a symlink's table name (Spark names a table's files by the table's name; a
    session without a rule for its warehouse reads them as `path:` nodes)."""
    names = set()
    for dataset in outputs:
        names.add(_last_name(known[(dataset.namespace, dataset.name)]))
        names.add(dataset.name.rstrip("/").rpartition("/")[2].lower())
        for link in dataset.facets.symlinks.identifiers if dataset.facets.symlinks else []:
            names.add(link.name.rpartition(".")[2].lower())
    return any(_last_name(table) in names for table in writes)


def _transformations(fields: ColumnFields, field: InputField) -> list[Transformation]:
    """The input field's transformations, or what the facet's older form says of the column."""
    if field.transformations:
        return field.transformations
    old = (fields.transformationType or "").upper()
    return [
        Transformation(
            type="DIRECT",
            subtype="IDENTITY" if old == "IDENTITY" else "TRANSFORMATION",
            description=fields.transformationDescription or None,
            masking=old == "MASKED",
        )
    ]


def _add_source(sources: dict[str, SourceColumn], column: str, transformation: Transformation) -> None:
    kind = DIRECT_KINDS.get((transformation.subtype or "").upper(), OTHER_DIRECT)
    functions = [OPENLINEAGE_MASKING] if transformation.masking else []
    description = (transformation.description or "").strip() or None
    found = sources.get(column)
    if found is None:
        sources[column] = SourceColumn(column=column, kind=kind, functions=functions, description=description)
        return
    # one input reported twice (two DIRECT transformations): the stronger kind, masking if either masks
    if KIND_STRENGTH[kind] > KIND_STRENGTH[found.kind]:
        found.kind = kind
    found.functions = list(dict.fromkeys([*found.functions, *functions]))
    if description and description != found.description:
        found.description = "; ".join(d for d in (found.description, description) if d)


def runtime_edges(lineage: TaskLineage) -> list[list[str]]:
    """A lineage's column edges as compact rows: `[source, target, kind]` for a value,
    `[column, table, "weak:<role>"]` for a weak reference; sorted, each once."""
    rows = {(s.column, c.target, s.kind) for c in lineage.columns for s in c.sources}
    rows |= {(w.column, w.target_table, f"weak:{w.role}") for w in lineage.weak_references}
    return [list(row) for row in sorted(rows)]


def _version(
    task: SqlTask, facet: TaskLineage | None, runtime: list[list[str]] | None, catalog: Catalog | None
) -> str:
    """A hash of what defines the task's lineage: the same content is `unchanged` for
    `upsert_tasks`, whichever run sent it."""
    digest = hashlib.sha256()
    digest.update(json.dumps([task.sql, task.dialect, sorted(task.vars.items())]).encode())
    if facet is not None:
        digest.update(facet.model_dump_json(exclude={"task_id", "version"}).encode())
    if runtime is not None:
        digest.update(json.dumps(runtime).encode())
    if catalog is not None:
        digest.update(catalog.model_dump_json().encode())
    return "ol-" + digest.hexdigest()[:16]
