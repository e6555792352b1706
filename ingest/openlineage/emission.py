"""Every task's lineage in the graph as OpenLineage RunEvents (docs/openlineage.md, "What Watershed emits").

One COMPLETE RunEvent per task: the job is the task (`job_namespace`, name = task id), the run id is
stable per task version (uuid5 of id and version), so emitting the same graph again sends the same
runs and a consumer that keys on runs changes nothing. Inputs and outputs are the tables the task
reads and writes, each with its schema (columns and types from the graph) and the `watershed_tags`
facet (each column's tags and where they came from); every output carries the columnLineage facet:
the task's FLOWS_TO edges into it as per-field DIRECT/INDIRECT transformations, its weak references
(INFLUENCES) as dataset-level INDIRECT ones.

Everything is built with openlineage-python's generated classes, so what is sent is what the spec's
classes allow. Events are produced lazily, a batch of tasks at a time: memory stays flat over a
graph of any number of tasks.

This module reads the graph only; which functions mask a value is the caller's (the tag policy's
function-effect table, passed in as `masks`), and a dataset's OpenLineage name is
`ingest.openlineage.names.Names.to_openlineage`, the intake's mapping read backwards.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import attr
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    DatasetFacet,
    column_lineage_dataset,
    job_type_job,
    ownership_job,
    schema_dataset,
    sql_job,
)
from openlineage.client.utils import RedactMixin

from watershed.graph import ids
from watershed.graph.store import GraphStore
from watershed.ingest.openlineage.names import Names

#: the key of Watershed's own dataset facet (a custom facet's key carries its producer's prefix)
TAGS_FACET = "watershed_tags"
#: where the facet's JSON Schema is published unless a setting says otherwise: docs/schemas/ of this
#: repository; `.invalid` (RFC 2606) says nobody has published it yet
TAGS_FACET_SCHEMA_URL = (
    "https://watershed-lineage.invalid/schemas/WatershedTagsDatasetFacet.json"
    "#/$defs/WatershedTagsDatasetFacet"
)
#: run ids are uuid5 names under this namespace: the same task version always has the same run
RUN_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://pypi.org/project/watershed-lineage/openlineage-run")

#: Watershed's column-edge kind -> OpenLineage (type, subtype). `window` and `conditional-value`
#: edges are the columns that decide a value (window partitions and orders, CASE conditions) when
#: ingest counts them as its sources; `script` is an opaque TRANSFORM program.
KIND_TRANSFORMATIONS: dict[str, tuple[str, str]] = {
    "direct": ("DIRECT", "IDENTITY"),
    "expression": ("DIRECT", "TRANSFORMATION"),
    "aggregate": ("DIRECT", "AGGREGATION"),
    "script": ("DIRECT", "TRANSFORMATION"),
    "window": ("INDIRECT", "WINDOW"),
    "conditional-value": ("INDIRECT", "CONDITIONAL"),
}
#: Watershed's weak-reference role -> OpenLineage INDIRECT subtype
ROLE_SUBTYPES: dict[str, str] = {
    "filter": "FILTER",
    "join": "JOIN",
    "group": "GROUP_BY",
    "order": "SORT",
    "condition": "CONDITIONAL",
    #: a weak reference the intake took from an INDIRECT/WINDOW transformation
    "window": "WINDOW",
}

Masks = Callable[[str], bool]
Progress = Callable[[int, int], None]


@attr.define
class TagSource(RedactMixin):
    """One lineage edge a propagated tag came in by (propagation's provenance)."""

    #: the Watershed id of the node the tag came from
    node: str
    #: that node as OpenLineage names it: dataset namespace and name, and the field of a column
    namespace: str
    name: str
    field: str | None = attr.field(default=None)
    #: the task of the edge, its kind (or weak-reference role), the propagation rule, hops to the seed
    task: str | None = attr.field(default=None)
    kind: str | None = attr.field(default=None)
    rule: str | None = attr.field(default=None)
    hops: int | None = attr.field(default=None)


@attr.define
class Tag(RedactMixin):
    """One tag of a column or table: its values, its origin (seed, manual, propagated) and sources."""

    key: str
    values: list[str]
    origin: str
    provenance: list[TagSource] = attr.field(factory=list)


@attr.define
class WatershedTagsDatasetFacet(DatasetFacet):
    """Watershed's tags of a dataset and of each of its columns (docs/schemas/WatershedTagsDatasetFacet.json)."""

    #: the table's own tags
    table: list[Tag] = attr.field(factory=list)
    #: column name -> its tags (columns without tags are left out)
    columns: dict[str, list[Tag]] = attr.field(factory=dict)

    @staticmethod
    def _get_schema() -> str:
        return TAGS_FACET_SCHEMA_URL


# ------------------------------------------------------------------ what is read from the graph

# A task's edges end at the tables it WRITES (graph/queries.py deletes them from there too): each
# query starts at the task's node, so a batch never scans the graph.
_TASKS = "UNWIND $ids AS id MATCH (k:Task {id: id}) RETURN k.id, k.version, k.sql, k.dialect, k.owner"
_TASK_TABLES = (
    "UNWIND $ids AS id MATCH (k:Task {id: id})-[r:READS|WRITES]->(t:Table) RETURN k.id, type(r), t.id"
)
_COLUMN_EDGES = (
    "UNWIND $ids AS id MATCH (:Task {id: id})-[:WRITES]->(:Table)-[:HAS_COLUMN]->(c:Column)<-[r:FLOWS_TO]-(s:Column) "
    "WHERE r.task = id RETURN id, s.id, c.id, r.kind, r.functions, r.key, r.description"
)
_WEAK_EDGES = (
    "UNWIND $ids AS id MATCH (:Task {id: id})-[:WRITES]->(t:Table)<-[r:INFLUENCES]-(s:Column) "
    "WHERE r.task = id RETURN id, s.id, t.id, r.role"
)
_TABLES = (
    "UNWIND $ids AS id MATCH (t:Table {id: id}) OPTIONAL MATCH (t)-[:HAS_COLUMN]->(c:Column) "
    "RETURN t.id, t.column_order, t.tags, collect([c.name, c.type, c.tags])"
)

#: queries this module sends, for the tests that parse every statement of the product
QUERIES = (_TASKS, _TASK_TABLES, _COLUMN_EDGES, _WEAK_EDGES, _TABLES)


@dataclass
class _Table:
    columns: list[tuple[str, str | None]]
    tags: str | None
    column_tags: dict[str, str]


@dataclass
class _Task:
    id: str
    version: str | None
    sql: str | None
    dialect: str | None
    owner: str | None
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    #: (source column id, target column id, kind, functions, key, description)
    column_edges: list[tuple[str, str, str, list[str], str | None, str | None]] = field(default_factory=list)
    #: (source column id, target table id, role)
    weak_edges: list[tuple[str, str, str]] = field(default_factory=list)


@dataclass
class Emission:
    """How an emission of events went (filled in while the generator runs)."""

    tasks: int = 0
    events: int = 0
    #: tasks without a version (a load cut short): their lineage is incomplete, so none is sent
    skipped: list[str] = field(default_factory=list)


def run_id(task_id: str, version: str) -> str:
    """The run of a task version: the same id each time the same version is emitted."""
    return str(uuid.uuid5(RUN_NAMESPACE, f"{task_id}\n{version}"))


def masking_edge(functions: Sequence[str], masks: Masks) -> bool:
    """Whether a column edge masks its source's value: a function on it that the effect table says
    hides the value (a hash, a mask, a count)."""
    return any(masks(function) for function in functions)


def run_events(
    store: GraphStore,
    *,
    job_namespace: str,
    masks: Masks,
    producer: str,
    task_ids: Sequence[str] | None = None,
    event_time: datetime | None = None,
    tags_schema_url: str = TAGS_FACET_SCHEMA_URL,
    names: Names | None = None,
    batch_size: int = 500,
    progress: Progress | None = None,
    emission: Emission | None = None,
) -> Iterator[RunEvent]:
    """One COMPLETE RunEvent per task of the graph (or of `task_ids`), in task id order, lazily.

    `masks(function)` says whether a function hides the value it is given; `event_time` (default:
    now) is every event's time; `names` the dataset name mapping (default: the settings');
    `progress(done, total)` is called after each batch of tasks; `emission` counts what was produced.
    """
    facets = _Facets(producer, tags_schema_url, names or Names())
    ordered = sorted(set(task_ids)) if task_ids is not None else sorted(store.task_ids())
    emission = emission if emission is not None else Emission()
    emission.tasks = len(ordered)
    when = (event_time or datetime.now(UTC)).astimezone(UTC).isoformat()
    done = 0
    for start in range(0, len(ordered), batch_size):
        batch = ordered[start : start + batch_size]
        tasks, tables = _read_batch(store, batch)
        for task in tasks:
            if task.version is None:
                emission.skipped.append(task.id)
                continue
            event = _event(task, tables, job_namespace, masks, facets, when)
            emission.events += 1
            yield event
        done += len(batch)
        if progress is not None:
            progress(done, len(ordered))


def _read_batch(store: GraphStore, task_ids: list[str]) -> tuple[list[_Task], dict[str, _Table]]:
    params = {"ids": task_ids}
    tasks = {
        row[0]: _Task(id=row[0], version=row[1], sql=row[2], dialect=row[3], owner=row[4])
        for row in store.read(_TASKS, params)
    }
    for task_id, relation, table in store.read(_TASK_TABLES, params):
        (tasks[task_id].writes if relation == "WRITES" else tasks[task_id].reads).append(table)
    for task_id, source, target, kind, functions, key, description in store.read(_COLUMN_EDGES, params):
        tasks[task_id].column_edges.append((source, target, kind, list(functions or []), key, description))
    for task_id, source, target, role in store.read(_WEAK_EDGES, params):
        tasks[task_id].weak_edges.append((source, target, role))
    # a backend returns rows in no fixed order (Neo4j's differs with the batch a task is read in):
    # sorted, the same task gives the same event whatever the batch
    for task in tasks.values():
        task.reads.sort()
        task.writes.sort()
        task.column_edges.sort(key=lambda e: (e[0], e[1], e[2], e[3], e[4] or "", e[5] or ""))
        task.weak_edges.sort()
    wanted: set[str] = set()
    for task in tasks.values():
        wanted.update(task.reads, task.writes)
        wanted.update(ids.parent(source) for source, *_ in task.column_edges)
        wanted.update(ids.parent(source) for source, *_ in task.weak_edges)
    tables: dict[str, _Table] = {}
    for table_id, order, tags, columns in store.read(_TABLES, {"ids": sorted(wanted)}):
        types = {name: type_ for name, type_, _ in columns if name is not None}
        names = [n for n in dict.fromkeys([*(order or []), *sorted(types)]) if n in types]
        tables[table_id] = _Table(
            columns=[(name, types[name]) for name in names],
            tags=tags,
            column_tags={name: column_tags for name, _, column_tags in columns if name and column_tags},
        )
    # a task deleted between listing and reading (a harvest pruned it) has nothing to send
    return [tasks[task_id] for task_id in task_ids if task_id in tasks], tables


# ------------------------------------------------------------------ building the event


def _event(
    task: _Task,
    tables: dict[str, _Table],
    job_namespace: str,
    masks: Masks,
    facet: _Facets,
    when: str,
) -> RunEvent:
    assert task.version is not None
    producer = facet.producer
    job_facets: dict[str, Any] = {
        "jobType": job_type_job.JobTypeJobFacet(
            processingType="BATCH", integration="WATERSHED", jobType="SQL_TASK", producer=producer
        )
    }
    if task.sql:
        job_facets["sql"] = sql_job.SQLJobFacet(query=task.sql, dialect=task.dialect, producer=producer)
    if task.owner:
        job_facets["ownership"] = ownership_job.OwnershipJobFacet(
            owners=[ownership_job.Owner(name=task.owner)], producer=producer
        )
    read = list(dict.fromkeys([*task.reads, *(ids.parent(s) for s, *_ in task.column_edges)]))
    read += [t for t in dict.fromkeys(ids.parent(s) for s, *_ in task.weak_edges) if t not in read]
    inputs = [
        InputDataset(*facet.names.to_openlineage(table), facets=facet.dataset(table, tables.get(table)))
        for table in read
    ]
    lineage = _column_lineage(task, masks, facet)
    outputs = []
    for table in task.writes:
        facets = facet.dataset(table, tables.get(table))
        if table in lineage:
            facets["columnLineage"] = lineage[table]
        outputs.append(OutputDataset(*facet.names.to_openlineage(table), facets=facets))
    return RunEvent(
        eventType=RunState.COMPLETE,
        eventTime=when,
        run=Run(runId=run_id(task.id, task.version)),
        job=Job(namespace=job_namespace, name=task.id, facets=job_facets),
        inputs=inputs,
        outputs=outputs,
        producer=producer,
    )


def _column_lineage(
    task: _Task, masks: Masks, facet: _Facets
) -> dict[str, column_lineage_dataset.ColumnLineageDatasetFacet]:
    """Per written table: its columns' inputs (FLOWS_TO) and the dataset-wide ones (INFLUENCES)."""
    # target table -> target column -> source column -> transformations (one InputField per source)
    fields: dict[str, dict[str, dict[str, list]]] = defaultdict(lambda: defaultdict(dict))
    for source, target, kind, functions, key, description in task.column_edges:
        kind_type, subtype = KIND_TRANSFORMATIONS.get(kind, ("DIRECT", "TRANSFORMATION"))
        table, column = ids.split_last(target)
        fields[table][column].setdefault(source, []).append(
            column_lineage_dataset.Transformation(
                type=kind_type,
                subtype=subtype,
                description=description or _description(kind, functions, key),
                masking=masking_edge(functions, masks),
            )
        )
    dataset: dict[str, dict[str, list]] = defaultdict(dict)
    for source, target, role in task.weak_edges:
        dataset[target].setdefault(source, []).append(
            column_lineage_dataset.Transformation(
                type="INDIRECT", subtype=ROLE_SUBTYPES.get(role, role.upper())
            )
        )
    facets = {}
    for table in [*fields, *(t for t in dataset if t not in fields)]:
        facets[table] = column_lineage_dataset.ColumnLineageDatasetFacet(
            fields={
                column: column_lineage_dataset.Fields(
                    inputFields=[
                        facet.input_field(s, transformations) for s, transformations in sources.items()
                    ]
                )
                for column, sources in fields.get(table, {}).items()
            },
            dataset=[
                facet.input_field(s, transformations) for s, transformations in dataset.get(table, {}).items()
            ],
            producer=facet.producer,
        )
    return facets


def _description(kind: str, functions: list[str], key: str | None) -> str:
    """Watershed's own words for an edge without a producer's description (one the intake kept
    from an OpenLineage transformation goes out as it came): its kind, its functions, a key read."""
    text = kind
    if functions:
        text += f" via {', '.join(functions)}"
    if key:
        text += f" of key {key}"
    return text


@dataclass
class _Facets:
    producer: str
    tags_schema_url: str
    names: Names

    def input_field(self, column_id: str, transformations: list) -> column_lineage_dataset.InputField:
        table, name = ids.split_last(column_id)
        namespace, dataset_name = self.names.to_openlineage(table)
        return column_lineage_dataset.InputField(
            namespace=namespace, name=dataset_name, field=name, transformations=transformations
        )

    def dataset(self, table_id: str, table: _Table | None) -> dict[str, Any]:
        if table is None:
            return {}
        facets: dict[str, Any] = {
            "schema": schema_dataset.SchemaDatasetFacet(
                fields=[
                    schema_dataset.SchemaDatasetFacetFields(name=name, type=type_, ordinal_position=i)
                    for i, (name, type_) in enumerate(table.columns, start=1)
                ],
                producer=self.producer,
            )
        }
        columns = {name: self.tags(text) for name, text in sorted(table.column_tags.items())}
        columns = {name: tags for name, tags in columns.items() if tags}
        own = self.tags(table.tags)
        if columns or own:
            tags = WatershedTagsDatasetFacet(table=own, columns=columns, producer=self.producer)
            tags._schemaURL = self.tags_schema_url
            facets[TAGS_FACET] = tags
        return facets

    def tags(self, text: str | None) -> list[Tag]:
        """A node's tags from the JSON propagation keeps on it (`n.tags`: key -> {v, o, p})."""
        if not text:
            return []
        return [
            Tag(
                key=key,
                values=sorted(item["v"]),
                origin=item["o"],
                provenance=[self.source(*p) for p in item.get("p") or []],
            )
            for key, item in sorted(json.loads(text).items())
        ]

    def source(
        self, node: str, task: str | None, kind: str | None, rule: str | None, hops: int | None
    ) -> TagSource:
        try:
            is_column = ids.depth(node) == 3
        except ids.InvalidIdError:
            is_column = False
        table, column = ids.split_last(node) if is_column else (node, None)
        namespace, name = self.names.to_openlineage(table)
        return TagSource(
            node=node,
            namespace=namespace,
            name=name,
            field=column,
            task=task,
            kind=kind,
            rule=rule,
            hops=hops,
        )


__all__ = [
    "KIND_TRANSFORMATIONS",
    "QUERIES",
    "ROLE_SUBTYPES",
    "TAGS_FACET",
    "TAGS_FACET_SCHEMA_URL",
    "Emission",
    "Tag",
    "TagSource",
    "WatershedTagsDatasetFacet",
    "masking_edge",
    "run_events",
    "run_id",
]
