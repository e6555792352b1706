"""The OpenLineage intake on both backends: events loaded as tasks, idempotent, converging when
out of order, nothing written for a bad batch, every load audited."""

from __future__ import annotations

import pytest

from tests.ingest.openlineage.samples import facet_event, field, run_event
from watershed.api.service import audit
from watershed.api.service.accounts.rights import ForbiddenError
from watershed.api.service.lineage_intake import AUDIT_ACTION, Intake
from watershed.ingest.openlineage.events import EventError
from watershed.ingest.settings import IngestSettings

TASK = "spark_app.`app.insert_dw_user_daily`"
EDGES = (
    "MATCH (a:Column)-[r:FLOWS_TO]->(b:Column) WHERE r.task = $task "
    "RETURN a.id, b.id, r.kind, r.functions, r.description ORDER BY a.id, b.id"
)
WEAK = "MATCH (a:Column)-[r:INFLUENCES]->(t:Table) WHERE r.task = $task RETURN a.id, t.id, r.role ORDER BY a.id, r.role"


def _edges(graph):
    return [
        tuple(x if not isinstance(x, list) else tuple(x) for x in row)
        for row in graph.read(EDGES, {"task": TASK})
    ]


def _entries(graph):
    return [e for e in audit.entries(graph, limit=1000) if e.action == AUDIT_ACTION]


@pytest.fixture
def intake(backend_store):
    return Intake(backend_store, IngestSettings())


def test_a_facet_event_loads_its_column_edges_roles_and_masking(intake, backend_store):
    result = intake.take(facet_event(), "producer1")
    assert result.loaded == [TASK]
    edges = _edges(backend_store)
    assert (
        "ods.user_log.uid",
        "dw.user_daily.uid_hash",
        "expression",
        ("openlineage.masking",),
        "sha2(uid, 256)",
    ) in edges
    assert ("ods.user_log.event", "dw.user_daily.events", "aggregate", (), None) in edges
    assert ["ods.user_log.ts", "dw.user_daily", "window"] in backend_store.read(WEAK, {"task": TASK})
    (source,) = backend_store.read("MATCH (k:Task {id: $id}) RETURN k.source", {"id": TASK})
    assert source == ["openlineage:spark_app"]
    (entry,) = _entries(backend_store)
    assert (entry.actor, entry.target, entry.after["event"]) == ("producer1", TASK, "COMPLETE")


def test_the_same_event_twice_changes_nothing(intake, backend_store):
    event = facet_event()
    intake.take(event, "p")
    before = _edges(backend_store)
    again = intake.take(event, "p")
    assert (again.loaded, again.unchanged, again.superseded) == ([], [], [TASK])
    assert _edges(backend_store) == before
    assert len(_entries(backend_store)) == 1


def test_a_start_after_its_complete_does_not_undo_it_and_a_newer_run_replaces(intake, backend_store):
    complete = facet_event(run_id="0190d0a6-1c2b-7d3e-8f40-00000000000a", time="2024-01-31T02:10:00Z")
    start = run_event(
        run_id="0190d0a6-1c2b-7d3e-8f40-00000000000a",
        event_type="START",
        time="2024-01-31T02:00:00Z",
        columns={"app": [field("ods.user_log", "app", ("DIRECT", "IDENTITY"))]},
    )
    intake.take(complete, "p")
    loaded = _edges(backend_store)
    assert intake.take(start, "p").superseded == [TASK]
    assert _edges(backend_store) == loaded
    # the other order ends the same
    backend_store.clear()
    intake.take(start, "p")
    intake.take(complete, "p")
    assert _edges(backend_store) == loaded
    newer = run_event(
        time="2024-02-01T02:00:00Z", columns={"app": [field("ods.user_log", "app", ("DIRECT", "IDENTITY"))]}
    )
    assert intake.take(newer, "p").loaded == [TASK]
    assert _edges(backend_store) == [("ods.user_log.app", "dw.user_daily.app", "direct", (), None)]
    older = facet_event(time="2024-01-30T02:00:00Z")
    assert intake.take(older, "p").superseded == [TASK]


def test_a_new_run_of_the_same_content_is_unchanged(intake, backend_store):
    intake.take(facet_event(), "p")
    result = intake.take(facet_event(time="2024-02-01T02:00:00Z"), "p")
    assert (result.loaded, result.unchanged) == ([], [TASK])
    assert len(_entries(backend_store)) == 1


def test_a_batch_with_one_bad_event_writes_nothing(intake, backend_store):
    bad = facet_event(job="other")
    bad["run"]["runId"] = "not-a-uuid"
    with pytest.raises(EventError) as raised:
        intake.take([facet_event(), bad], "p")
    assert raised.value.path == "[1].run.runId"
    assert backend_store.read("MATCH (k:Task) RETURN count(k)") == [[0]]


def test_a_caller_limited_to_databases_loads_only_theirs(intake, backend_store):
    with pytest.raises(ForbiddenError, match="database dw"):
        intake.take(facet_event(), "p", covers=lambda db: db == "ods")
    assert backend_store.read("MATCH (k:Task) RETURN count(k)") == [[0]]


def test_sql_lineage_is_loaded_and_the_runtime_kept_beside_it(intake, backend_store):
    sql = (
        "INSERT OVERWRITE TABLE dw.user_daily SELECT sha2(uid, 256) AS uid_hash, app, count(event) AS events "
        "FROM ods.user_log WHERE dt = '${date}' GROUP BY uid, app"
    )
    intake.take(facet_event(sql=sql), "p")
    edges = _edges(backend_store)
    assert ("ods.user_log.uid", "dw.user_daily.uid_hash", "expression", ("sha2",), None) in edges
    ((runtime,),) = backend_store.read("MATCH (k:Task {id: $id}) RETURN k.runtime_lineage", {"id": TASK})
    assert '["ods.user_log.uid","dw.user_daily.uid_hash","expression"]' in runtime
    ((predicates,),) = backend_store.read(
        "MATCH (k:Task {id: $id})-[r:READS]->(:Table {id: 'ods.user_log'}) RETURN r.predicates", {"id": TASK}
    )
    assert predicates == ["dt = '2024-01-31'"]


def test_a_batch_is_taken_in_order_and_loaded_at_once(intake, backend_store):
    run = "0190d0a6-1c2b-7d3e-8f40-00000000000b"
    start = run_event(run_id=run, event_type="START", time="2024-01-31T02:00:00Z")
    complete = facet_event(run_id=run, time="2024-01-31T02:10:00Z")
    other = facet_event(job="app.other", time="2024-01-31T02:05:00Z")
    result = intake.take([complete, other, start], "p")
    assert sorted(result.loaded) == sorted([TASK, "spark_app.`app.other`"])
    assert result.superseded == [TASK]  # the START after its COMPLETE
    assert ("ods.user_log.app", "dw.user_daily.app", "direct", (), None) in _edges(backend_store)
    assert len(_entries(backend_store)) == 2
