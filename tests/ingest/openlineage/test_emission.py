"""OpenLineage out: every task of a harvested and propagated warehouse as RunEvents, checked against
the spec (the client's generated classes and the intake's models of the spec), against the graph
(every edge once, kinds and roles mapped, masking where the policy's table says) and for what
makes re-emitting harmless (stable runs, the same events from any batch size)."""

from __future__ import annotations

import enum
import json
import types
import typing
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import attr
import jsonschema_rs
import pytest
from openlineage.client import event_v2
from openlineage.client.facet_v2 import (
    column_lineage_dataset,
    job_type_job,
    ownership_job,
    schema_dataset,
    sql_job,
)
from openlineage.client.serde import Serde

from tests.support.openlineage_emission import propagated_warehouse
from watershed.graph import ids
from watershed.ingest.openlineage import emission
from watershed.ingest.openlineage.emission import (
    TAGS_FACET,
    WatershedTagsDatasetFacet,
    run_events,
    run_id,
)
from watershed.ingest.openlineage.events import RunEvent, parse_event
from watershed.ingest.openlineage.names import Names

REPO = Path(__file__).resolve().parents[3]
TAGS_SCHEMA = REPO / "docs" / "schemas" / "WatershedTagsDatasetFacet.json"
WHEN = datetime(2024, 1, 31, 2, 0, tzinfo=UTC)
PRODUCER = "https://pypi.org/project/watershed-lineage/test/"

#: facet key -> the generated class it deserialises into
DATASET_FACETS = {
    "schema": schema_dataset.SchemaDatasetFacet,
    "columnLineage": column_lineage_dataset.ColumnLineageDatasetFacet,
    TAGS_FACET: WatershedTagsDatasetFacet,
}
JOB_FACETS = {
    "sql": sql_job.SQLJobFacet,
    "jobType": job_type_job.JobTypeJobFacet,
    "ownership": ownership_job.OwnershipJobFacet,
}


def masks(function: str) -> bool:
    """The default policy's masking functions among the generated warehouse's: md5 and count."""
    return function in {"md5", "count", "count_distinct"}


# ------------------------------------------------------------------ the warehouse


@pytest.fixture
def warehouse(backend_store, falkordb_server, tmp_path):
    return propagated_warehouse(backend_store, falkordb_server, tmp_path)


def emitted(store, **options) -> list[event_v2.RunEvent]:
    return list(
        run_events(
            store, job_namespace="watershed", masks=masks, producer=PRODUCER, event_time=WHEN, **options
        )
    )


# ------------------------------------------------------------------ deserialising into the generated classes


def structure(value, hint, where: str = ""):
    """`value` (decoded JSON) as an instance of the generated type `hint`: an unknown property, a
    missing required one or a value its validators refuse raises, naming where."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None:
            return None
        assert len(options) == 1, (where, hint)
        return structure(value, options[0], where)
    if origin is list:
        assert isinstance(value, list), where
        return [structure(v, typing.get_args(hint)[0], f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        assert isinstance(value, dict), where
        return {k: structure(v, typing.get_args(hint)[1], f"{where}.{k}") for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if isinstance(hint, type) and attr.has(hint):
        assert isinstance(value, dict), where
        hints = typing.get_type_hints(hint)
        fields = {f.name: f for f in attr.fields(hint)}
        kwargs = {}
        for key, item in value.items():
            name = key.lstrip("_")
            field = fields.get(key) or fields.get("_" + name)
            assert field is not None, f"{where}.{key}: not a property of {hint.__name__}"
            if not field.init:
                continue  # _schemaURL / schemaURL: each class sets its own
            kwargs[field.alias or name] = structure(item, hints[field.name], f"{where}.{key}")
        return hint(**kwargs)
    if hint is typing.Any:
        return value
    assert isinstance(value, hint), (where, value, hint)
    return value


def facets_of(value: dict | None, classes: dict, where: str) -> dict:
    """A facets map with each known facet as its class (a facet this test does not know fails)."""
    found = {}
    for key, facet in (value or {}).items():
        assert key in classes, f"{where}.{key}: a facet nobody expects"
        found[key] = structure(facet, classes[key], f"{where}.{key}")
        # the class's own schema URL, except for ours, which the settings may move
        if key != TAGS_FACET:
            assert facet["_schemaURL"] == classes[key]._get_schema(), (where, key)
    return found


def deserialise(document: dict) -> event_v2.RunEvent:
    """A RunEvent of the generated classes from its JSON, facet by facet."""
    body = dict(document)
    assert body.pop("schemaURL") == event_v2.RunEvent._get_schema()
    job = body.pop("job")
    run = body.pop("run")
    datasets = {side: body.pop(side) for side in ("inputs", "outputs")}
    event = event_v2.RunEvent(
        eventType=event_v2.RunState(body.pop("eventType")),
        eventTime=body.pop("eventTime"),
        producer=body.pop("producer"),
        run=event_v2.Run(runId=run.pop("runId"), facets=facets_of(run.pop("facets", None), {}, "run")),
        job=event_v2.Job(
            namespace=job.pop("namespace"),
            name=job.pop("name"),
            facets=facets_of(job.pop("facets", None), JOB_FACETS, "job"),
        ),
        inputs=[
            event_v2.InputDataset(
                d.pop("namespace"),
                d.pop("name"),
                facets=facets_of(d.pop("facets", None), DATASET_FACETS, "in"),
            )
            for d in map(dict, datasets["inputs"])
        ],
        outputs=[
            event_v2.OutputDataset(
                d.pop("namespace"),
                d.pop("name"),
                facets=facets_of(d.pop("facets", None), DATASET_FACETS, "out"),
            )
            for d in map(dict, datasets["outputs"])
        ],
    )
    assert not body and not job and not run, (body, job, run)
    return event


# ------------------------------------------------------------------ the tests


def test_every_event_is_a_spec_run_event_and_reads_back_unchanged(warehouse):
    events = emitted(warehouse)
    assert len(events) == len(warehouse.task_ids()) == 30
    tags_schema = jsonschema_rs.validator_for(
        {**json.loads(TAGS_SCHEMA.read_text()), "$ref": "#/$defs/WatershedTagsDatasetFacet"}
    )
    tagged = 0
    for event in events:
        document = json.loads(Serde.to_json(event))
        # the intake's models of the spec: required fields, enums, UUID run id, URIs
        parsed = parse_event(document)
        assert isinstance(parsed, RunEvent) and parsed.eventType == "COMPLETE"
        # the client's generated classes: every property is theirs, and the event reads back equal
        again = deserialise(json.loads(Serde.to_json(event)))
        assert json.loads(Serde.to_json(again)) == document
        for dataset in [*document["inputs"], *document["outputs"]]:
            facet = dataset.get("facets", {}).get(TAGS_FACET)
            if facet is not None:
                tags_schema.validate(facet)
                assert facet["_schemaURL"] == emission.TAGS_FACET_SCHEMA_URL
                tagged += 1
    assert tagged > 10


def test_every_edge_of_the_graph_is_sent_once_with_its_kind_role_and_masking(warehouse):
    names = Names()
    column_edges = Counter()
    for source, target, task, kind, functions in warehouse.read(
        "MATCH (s:Column)-[r:FLOWS_TO]->(t:Column) RETURN s.id, t.id, r.task, r.kind, r.functions"
    ):
        column_edges[
            (task, source, target, *emission.KIND_TRANSFORMATIONS[kind], any(map(masks, functions or [])))
        ] += 1
    weak_edges = Counter(
        (task, source, target, emission.ROLE_SUBTYPES[role])
        for source, target, task, role in warehouse.read(
            "MATCH (s:Column)-[r:INFLUENCES]->(t:Table) RETURN s.id, t.id, r.task, r.role"
        )
    )
    sent_columns, sent_weak = Counter(), Counter()
    for event in emitted(warehouse):
        for output in event.outputs:
            table = names.table_id(output.namespace, output.name)
            facet = output.facets.get("columnLineage")
            if facet is None:
                continue
            for column, fields in facet.fields.items():
                for field in fields.inputFields:
                    source = names.column_id(field.namespace, field.name, field.field)
                    for t in field.transformations:
                        sent_columns[
                            (event.job.name, source, ids.child(table, column), t.type, t.subtype, t.masking)
                        ] += 1
            for field in facet.dataset:
                source = names.column_id(field.namespace, field.name, field.field)
                for t in field.transformations:
                    assert t.type == "INDIRECT"
                    sent_weak[(event.job.name, source, table, t.subtype)] += 1
    assert sent_columns == column_edges and sent_weak == weak_edges
    assert {key[3:5] for key in column_edges} >= {("DIRECT", "IDENTITY"), ("DIRECT", "TRANSFORMATION")}
    # the md5 columns of the generated tasks: masked
    assert any(key[5] for key in column_edges) and not all(key[5] for key in column_edges)
    assert {key[3] for key in weak_edges} >= {"FILTER"}


def test_a_job_is_its_task_with_its_sql_and_its_datasets_schemas(warehouse):
    names = Names()
    tasks = {
        row[0]: row[1:] for row in warehouse.read("MATCH (k:Task) RETURN k.id, k.sql, k.dialect, k.version")
    }
    for event in emitted(warehouse):
        sql, dialect, version = tasks[event.job.name]
        assert event.job.namespace == "watershed"
        assert event.job.facets["sql"].query == sql and event.job.facets["sql"].dialect == dialect
        assert event.run.runId == run_id(event.job.name, version)
        reads = {
            row[0]
            for row in warehouse.read(
                "MATCH (:Task {id: $id})-[:READS]->(t:Table) RETURN t.id", {"id": event.job.name}
            )
        }
        writes = {
            row[0]
            for row in warehouse.read(
                "MATCH (:Task {id: $id})-[:WRITES]->(t:Table) RETURN t.id", {"id": event.job.name}
            )
        }
        assert {names.table_id(d.namespace, d.name) for d in event.outputs} == writes
        assert {names.table_id(d.namespace, d.name) for d in event.inputs} >= reads
        for dataset in [*event.inputs, *event.outputs]:
            table = names.table_id(dataset.namespace, dataset.name)
            entry = warehouse.catalog_entries([table])[table]
            expected = [(c.name, c.type) for c in [*entry.columns, *entry.partitioned_by]]
            assert [(f.name, f.type) for f in dataset.facets["schema"].fields] == expected


def test_a_propagated_tag_is_sent_with_the_edge_it_came_by(warehouse):
    # the derived columns holding the `pii` tag seeded on an ODS uid column (L1 after an md5)
    found = Counter()
    for event in emitted(warehouse):
        for output in event.outputs:
            facet = output.facets.get(TAGS_FACET)
            for tags in (facet.columns if facet else {}).values():
                for tag in tags:
                    if tag.key != "pii":
                        continue
                    assert tag.origin == "propagated" and tag.values in (["L3"], ["L1"])
                    assert tag.provenance and all(p.hops >= 1 and p.field and p.task for p in tag.provenance)
                    sources = {(p.namespace, p.name, p.field) for p in tag.provenance}
                    assert all(ns == "spark_catalog" for ns, _, _ in sources)
                    found[tag.values[0]] += 1
    assert found["L3"] > 0 and found["L1"] > 0, found


def test_re_emitting_sends_the_same_runs_and_batches_change_nothing(warehouse):
    first = [Serde.to_json(e) for e in emitted(warehouse)]
    seen = []
    again = [
        Serde.to_json(e)
        for e in emitted(warehouse, batch_size=7, progress=lambda done, total: seen.append((done, total)))
    ]
    assert again == first
    assert seen == [(7, 30), (14, 30), (21, 30), (28, 30), (30, 30)]
    some = sorted(warehouse.task_ids())[3:5]
    assert [
        json.loads(e)["job"]["name"] for e in map(Serde.to_json, emitted(warehouse, task_ids=some))
    ] == some


def test_a_new_task_version_is_a_new_run(backend_store):
    from watershed.graph.lineage import SqlTask
    from watershed.ingest.extract import extract_lineage

    def load(sql: str) -> str:
        task = SqlTask(task_id="t1", sql=sql)
        backend_store.upsert_tasks([(task, extract_lineage(task))])
        (event,) = emitted(backend_store)
        return event.run.runId

    first = load("INSERT OVERWRITE TABLE dw.b SELECT md5(x) AS x FROM ods.a")
    assert load("INSERT OVERWRITE TABLE dw.b SELECT md5(x) AS x FROM ods.a") == first
    assert load("INSERT OVERWRITE TABLE dw.b SELECT x FROM ods.a WHERE y > 1") != first


def test_a_task_whose_load_was_cut_short_is_not_sent_and_is_named(backend_store):
    from watershed.graph import queries
    from watershed.graph.lineage import SqlTask
    from watershed.ingest.extract import extract_lineage

    for task_id in ("t1", "t2"):
        task = SqlTask(task_id=task_id, sql=f"INSERT OVERWRITE TABLE dw.{task_id} SELECT x FROM ods.a")
        backend_store.upsert_tasks([(task, extract_lineage(task))])
    # what a load killed after its first statement leaves: the task without a version
    backend_store.write_all([(queries.UNSET_TASK_VERSIONS, {"ids": ["t1"]})])
    counted = emission.Emission()
    assert [e.job.name for e in emitted(backend_store, emission=counted)] == ["t2"]
    assert (counted.tasks, counted.events, counted.skipped) == (2, 1, ["t1"])
