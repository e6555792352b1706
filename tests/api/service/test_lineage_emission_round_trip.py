"""Watershed → OpenLineage → Watershed: a harvested and propagated warehouse (on either backend)
emitted, and the events taken by Watershed's own intake into a fresh graph, give back the same
column edges and weak references, less only what docs/openlineage.md lists as unsayable."""

from __future__ import annotations

import itertools
import json
from collections import Counter

import pytest

from tests.support.openlineage_emission import consumer_graph, propagated_warehouse
from watershed.api.service import lineage_emission as service
from watershed.api.service.lineage_intake import Intake
from watershed.api.service.lineage_reconcile import reconcile
from watershed.graph import ids
from watershed.graph.lineage import OPENLINEAGE_MASKING
from watershed.ingest.settings import IngestSettings
from watershed.propagation.policy import default_policy

_names = itertools.count()
COLUMN_EDGES = "MATCH (s:Column)-[r:FLOWS_TO]->(t:Column) RETURN r.task, s.id, t.id, r.kind, r.functions"
WEAK_EDGES = "MATCH (s:Column)-[r:INFLUENCES]->(t:Table) RETURN r.task, s.id, t.id, r.role"
#: the kinds OpenLineage says only as INDIRECT transformations: they come back as weak references
AS_WEAK = {"window": "window", "conditional-value": "condition"}


@pytest.fixture
def source(backend_store, falkordb_server, tmp_path):
    return propagated_warehouse(backend_store, falkordb_server, tmp_path)


@pytest.fixture
def fresh(falkordb_server):
    """An empty FalkorDB graph: the consumer Watershed."""
    with consumer_graph(falkordb_server, f"round_trip_{next(_names)}") as store:
        yield store


def events_of(store, tmp_path) -> list[dict]:
    out = tmp_path / "events.jsonl"
    report = service.emit(store, service.file_target(out), str(out), default_policy())
    assert report.sent == report.tasks == 30
    return [json.loads(line) for line in out.read_text().splitlines()]


def consumer_task(task: str) -> str:
    """The task id the intake gives an emitted job (job namespace `watershed`)."""
    return ids.join("watershed", task)


def test_the_column_facets_alone_rebuild_the_same_edges(source, fresh, tmp_path):
    events = events_of(source, tmp_path)
    for event in events:
        del event["job"]["facets"]["sql"]  # the facet path: what a consumer without SQL gets
    result = Intake(fresh, IngestSettings()).take(events, "round-trip")
    # a task that failed to parse writes nothing: without SQL its event has no lineage to load
    writing = sum(1 for event in events if event["outputs"])
    assert (len(result.loaded), result.ignored) == (writing, 30 - writing) and writing >= 28

    expected_columns, expected_weak = Counter(), Counter()
    for task, s, t, kind, functions in source.read(COLUMN_EDGES):
        if kind in AS_WEAK:
            expected_weak[(consumer_task(task), s, ids.parent(t), AS_WEAK[kind])] += 1
            continue
        back = "expression" if kind == "script" else kind
        masked = (
            (OPENLINEAGE_MASKING,) if any(service.masks_of(default_policy())(f) for f in functions) else ()
        )
        expected_columns[(consumer_task(task), s, t, back, masked)] += 1
    for task, s, t, role in source.read(WEAK_EDGES):
        expected_weak[(consumer_task(task), s, t, role)] += 1

    got_columns = Counter(
        (task, s, t, kind, tuple(functions or ())) for task, s, t, kind, functions in fresh.read(COLUMN_EDGES)
    )
    got_weak = Counter(tuple(row) for row in fresh.read(WEAK_EDGES))
    # an edge of several kinds from one column to another comes back once per kind
    assert set(got_columns) == set(expected_columns)
    assert set(got_weak) == set(expected_weak)
    assert any(key[4] for key in got_columns)  # the md5 hops come back masking


def test_with_the_sql_facet_the_consumer_gets_the_same_lineage_and_nothing_to_reconcile(
    source, fresh, tmp_path
):
    events = events_of(source, tmp_path)
    Intake(fresh, IngestSettings()).take(events, "round-trip")
    expected = Counter(
        (consumer_task(task), s, t, kind, tuple(functions or ()))
        for task, s, t, kind, functions in source.read(COLUMN_EDGES)
    )
    got = Counter(
        (task, s, t, kind, tuple(functions or ())) for task, s, t, kind, functions in fresh.read(COLUMN_EDGES)
    )
    assert got == expected
    assert Counter((consumer_task(r[0]), *r[1:]) for r in map(tuple, source.read(WEAK_EDGES))) == Counter(
        map(tuple, fresh.read(WEAK_EDGES))
    )
    # Watershed's runtime facet against its own SQL, read again by the consumer's extractor: they
    # differ only where OpenLineage cannot say a value edge decided by a condition or a window
    report = reconcile(fresh)
    assert len(report.tasks) == sum(1 for event in events if event["outputs"])
    turned = 0
    for task in report.tasks:
        assert task.kind_differs == [] and task.agreed > 0
        assert all(edge.kind in AS_WEAK for edge in task.sql_only), task
        sql_weak = {(c, t, f"weak:{role}") for t_, c, t, role in fresh.read(WEAK_EDGES) if t_ == task.task}
        turned_weak = {(e.source, ids.parent(e.target), f"weak:{AS_WEAK[e.kind]}") for e in task.sql_only}
        assert {(e.source, e.target, e.kind) for e in task.runtime_only} == turned_weak - sql_weak
        turned += len(task.sql_only)
    assert turned == sum(1 for row in source.read(COLUMN_EDGES) if row[3] in AS_WEAK) > 0
