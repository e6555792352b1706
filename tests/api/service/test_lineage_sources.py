"""Sources and seen times of tasks, and the stale report of OpenLineage sources, on both backends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from watershed.api.service import lineage_sources
from watershed.api.service.pages import decode_cursor
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def ago(days: float) -> str:
    return (NOW - timedelta(days=days)).isoformat(timespec="seconds")


def task(task_id: str, source: str | None, sql: str | None = None) -> SqlTask:
    return SqlTask(
        task_id=task_id,
        sql=sql or f"INSERT OVERWRITE TABLE dw.{task_id} SELECT a, b FROM ods.src_{task_id}",
        source=source,
    )


def load(store, tasks: list[SqlTask], seen_at: str | None = None):
    return store.upsert_tasks([(t, extract_lineage(t)) for t in tasks], seen_at=seen_at)


def stored(store, task_id: str) -> tuple:
    rows = store.read("MATCH (k:Task {id: $id}) RETURN k.source, k.seen_at, k.version", {"id": task_id})
    return tuple(rows[0])


def test_an_unchanged_task_is_touched_and_a_later_source_takes_it_over(backend_store):
    first = load(backend_store, [task("t1", "files:/a"), task("t2", "files:/a")], seen_at=ago(3))
    assert first.loaded == 2 and first.taken_over == []
    assert stored(backend_store, "t1")[:2] == ("files:/a", ago(3))

    # The same versions again: nothing reloaded, but the seen time moves (the touch statement).
    again = load(backend_store, [task("t1", "files:/a"), task("t2", "files:/a")], seen_at=ago(1))
    assert (again.loaded, again.unchanged, again.taken_over) == (0, 2, [])
    assert stored(backend_store, "t1")[:2] == ("files:/a", ago(1))

    # Another source defines t1 too: the later load takes it over, unchanged or not.
    other = load(backend_store, [task("t1", "table:db.tasks")], seen_at=ago(0))
    assert (other.loaded, other.unchanged, other.taken_over) == (0, 1, ["t1"])
    assert stored(backend_store, "t1")[:2] == ("table:db.tasks", ago(0))
    assert stored(backend_store, "t2")[0] == "files:/a"

    # A load naming no source (tests, benchmarks) keeps the task's source and is no take-over.
    legacy = load(backend_store, [task("t1", None, sql="INSERT OVERWRITE TABLE dw.t1 SELECT a FROM ods.x")])
    assert legacy.loaded == 1 and legacy.taken_over == []
    assert stored(backend_store, "t1")[0] == "table:db.tasks"


def test_sources_are_listed_with_their_counts_and_openlineage_tasks_go_stale(backend_store):
    load(backend_store, [task("old_sql", None)])  # before sources existed: no source, no seen time
    backend_store.write_all([("MATCH (k:Task {id: 'old_sql'}) REMOVE k.seen_at", {})])
    load(backend_store, [task("h1", "files:/corpus"), task("h2", "files:/corpus")], seen_at=ago(30))
    load(
        backend_store,
        [task("ol_old", "openlineage:spark"), task("ol_older", "openlineage:spark")],
        seen_at=ago(9),
    )
    load(backend_store, [task("ol_new", "openlineage:spark")], seen_at=ago(1))
    load(backend_store, [task("af", "openlineage:airflow")], seen_at=ago(2))

    page = lineage_sources.sources(backend_store, stale_days=7, now=NOW)
    assert page.total == 4 and page.next_cursor is None
    assert [s.model_dump() for s in page.items] == [
        {"name": None, "kind": "none", "tasks": 1, "last_seen": None, "stale": 0},
        {"name": "files:/corpus", "kind": "harvest", "tasks": 2, "last_seen": ago(30), "stale": 0},
        {"name": "openlineage:airflow", "kind": "openlineage", "tasks": 1, "last_seen": ago(2), "stale": 0},
        {"name": "openlineage:spark", "kind": "openlineage", "tasks": 3, "last_seen": ago(1), "stale": 2},
    ]
    # paged by name: the source-less entry first, then after each page's last name
    first = lineage_sources.sources(backend_store, stale_days=7, now=NOW, limit=2)
    assert [s.name for s in first.items] == [None, "files:/corpus"]
    rest = lineage_sources.sources(
        backend_store, stale_days=7, now=NOW, limit=2, after=decode_cursor(first.next_cursor)["after"]
    )
    assert [s.name for s in rest.items] == ["openlineage:airflow", "openlineage:spark"]
    assert rest.next_cursor is None

    # A longer setting: nothing of spark is stale; a shorter one: airflow's task too.
    assert lineage_sources.sources(backend_store, stale_days=10, now=NOW).items[3].stale == 0
    assert lineage_sources.sources(backend_store, stale_days=1.5, now=NOW).items[2].stale == 1

    stale = lineage_sources.stale_tasks(
        backend_store, stale_days=7, source="openlineage:spark", limit=1, now=NOW
    )
    assert [(t.task_id, t.seen_at) for t in stale.items] == [("ol_old", ago(9))]
    after = decode_cursor(stale.next_cursor)["after"]
    rest = lineage_sources.stale_tasks(
        backend_store, stale_days=7, source="openlineage:spark", limit=1, after=after, now=NOW
    )
    assert [t.task_id for t in rest.items] == ["ol_older"] and rest.next_cursor is None
    # every OpenLineage source at once
    everywhere = lineage_sources.stale_tasks(backend_store, stale_days=1.5, now=NOW)
    assert [(t.task_id, t.source) for t in everywhere.items] == [
        ("af", "openlineage:airflow"),
        ("ol_old", "openlineage:spark"),
        ("ol_older", "openlineage:spark"),
    ]
    # stale is only ever reported: every task is still there
    assert backend_store.stats().tasks == 7


def test_a_harvest_source_has_no_stale_list(graph_store):
    with pytest.raises(lineage_sources.LineageSourceError, match="'files:/corpus'"):
        lineage_sources.stale_tasks(graph_store, stale_days=7, source="files:/corpus")
    with pytest.raises(lineage_sources.LineageSourceError, match="stale days 0: must be more than 0"):
        lineage_sources.sources(graph_store, stale_days=0)
    with pytest.raises(lineage_sources.LineageSourceError, match="at most 36500"):
        lineage_sources.stale_tasks(graph_store, stale_days=1e9)
