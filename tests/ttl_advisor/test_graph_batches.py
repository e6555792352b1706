"""TTL advice batch by batch of tables equals the whole-graph advice, stored property by property.

The graph: the hand-made warehouse of test_advisor (known windows, keep, unused, capped), a table
only lineage knows (`ext.raw`, not in the catalog), and a generated warehouse with ORC data for
two tables (so savings are measured per batch).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from bench.propagation_bench import load_generated
from bench.ttl_memory_bench import whole_graph_advice
from tests.support.paths import REPO
from tests.support.ttl_warehouse import CATALOG, TASKS
from watershed.api.cli import app
from watershed.graph.catalog import Catalog
from watershed.graph.falkordb_store import FalkorDBStore
from watershed.graph.lineage import SqlTask
from watershed.graph.queries import TABLE_IDS
from watershed.graph.server import free_port
from watershed.ingest.extract import extract_lineage
from watershed.ingest.generator import generate_warehouse
from watershed.ttl_advisor import graph_uses
from watershed.ttl_advisor.batches import advise_in_batches, store_advice
from watershed.ttl_advisor.graph_uses import table_pages
from watershed.ttl_advisor.settings import AdvisorSettings
from watershed.ttl_advisor.store import store_recommendations
from watershed.ttl_advisor.tasks import advise_and_store

#: a table no catalog lists: its columns exist only because lineage mentions them
LINEAGE_ONLY = {
    "t_raw": "INSERT OVERWRITE TABLE dw.r1 SELECT a, b FROM ext.raw WHERE dt >= date_sub('${date}', 4)",
    # one task using a column several ways (value kinds, a filter) into two targets
    "t_roles": (
        "INSERT OVERWRITE TABLE dw.r2 SELECT a, upper(a) AS ua, count(b) AS nb FROM ext.raw "
        "WHERE dt = '${date}' AND b IS NOT NULL GROUP BY a"
    ),
}
STORED = (
    "MATCH (c:Column) RETURN c.id, c.ttl_status, c.ttl_days_recommended, c.ttl_evidence, "
    "c.ttl_savings_bytes, c.ttl_run"
)


def stored(store: FalkorDBStore) -> dict[str, dict]:
    """Every Column's TTL properties by id (None for columns without advice)."""
    return {
        row[0]: {"status": row[1], "days": row[2], "evidence": row[3], "savings": row[4], "run": row[5]}
        for row in store.read(STORED)
    }


def without_run(properties: dict[str, dict]) -> dict[str, dict]:
    return {column: {k: v for k, v in p.items() if k != "run"} for column, p in properties.items()}


@pytest.fixture(scope="module")
def graph(falkordb_server, tmp_path_factory):
    """The loaded graph, shared by this module's tests (each run rewrites every column's advice)."""
    store = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=f"ttl_batches_{free_port()}")
    store.ensure_schema()
    warehouse = tmp_path_factory.mktemp("warehouse")
    generate_warehouse(warehouse, tasks=30, seed=5, data_tables=2, data_partitions=10)
    load_generated(store, warehouse)
    catalog = Catalog.from_dict(CATALOG)
    items = []
    for task_id, sql in {**TASKS, **LINEAGE_ONLY}.items():
        task = SqlTask(task_id=task_id, sql=sql, vars={"date": "2024-03-31"})
        items.append((task, extract_lineage(task, catalog)))
    store.upsert_tasks(items, catalog)
    yield store
    store.clear()
    store.close()


@pytest.fixture(scope="module")
def reference(graph):
    """The whole-graph advice's stored properties (margin 3) and counts."""
    counts = whole_graph_advice(graph, AdvisorSettings(ttl_margin_days=3), "whole")
    properties = stored(graph)
    advised = {c: p for c, p in properties.items() if p["status"] is not None}
    # the reference covers what the batches must reproduce: every status, savings, lineage-only columns
    assert {p["status"] for p in advised.values()} == {"ttl", "keep", "unused"}
    assert any(p["savings"] for p in advised.values())
    assert advised["ext.raw.a"]["status"] == "ttl" and advised["ext.raw.a"]["days"] == 5 + 3
    [roles] = [u for u in json.loads(advised["ext.raw.a"]["evidence"]) if u["task_id"] == "t_roles"]
    assert len(roles["roles"]) >= 2, roles
    assert "ods.events.dt" in properties and properties["ods.events.dt"]["status"] is None
    assert counts.columns == len(advised)
    return without_run(properties), counts


@pytest.mark.parametrize("batch_tables", [1, 2, 7, 100_000])
def test_batches_store_exactly_the_whole_graph_advice(graph, reference, batch_tables):
    expected, expected_counts = reference
    tables = len(graph.read("MATCH (t:Table) RETURN t.id"))
    settings = AdvisorSettings(ttl_margin_days=3, ttl_batch_tables=batch_tables)
    run_id = f"batched-{batch_tables}"

    counts = store_advice(graph, run_id, settings, full=True).counts

    got = stored(graph)
    assert without_run(got) == expected
    # every advised column was written by this run, not left from the reference's
    assert {p["run"] for p in got.values() if p["status"] is not None} == {run_id}
    assert counts == expected_counts
    pages = list(table_pages(graph, batch_tables))
    assert len(pages) == math.ceil(tables / batch_tables)
    assert sorted(itertools.chain(*pages)) == [t for page in pages for t in page]


ODD_IDS = [
    *(f"ods.t{i}" for i in range(6)),
    "é.x",
    "z.ü",
    "ods.tä",
    "日本.t",
    "😀.t",
    "path:fs./data/Out",
    "path:fs./data/out",
    "db. t",
]


@pytest.mark.parametrize("batch_tables", [1, 2, 3, 100])
def test_every_table_comes_once_in_order_whatever_its_id(falkordb_server, batch_tables):
    # with the index on Table.id, FalkorDB's `t.id > $after` orders these unlike ORDER BY: keyset
    # pages in the graph skipped some and repeated others
    store = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=f"ttl_ids_{free_port()}")
    try:
        store.ensure_schema()
        store.execute("UNWIND $ids AS id MERGE (:Table {id: id})", {"ids": ODD_IDS})
        pages = list(table_pages(store, batch_tables))
        assert [t for page in pages for t in page] == sorted(ODD_IDS)
        assert all(len(page) == batch_tables for page in pages[:-1])
    finally:
        store.clear()
        store.close()


def test_one_table_alone_gets_the_same_advice_as_in_its_batch(graph, reference):
    expected, _ = reference
    settings = AdvisorSettings(ttl_margin_days=3)
    [batch] = list(advise_in_batches(graph, settings, table="ods.profile"))
    assert batch.tables == ["ods.profile"]
    got = {r.column: (r.status, r.ttl_days) for r in batch.recommendations}
    assert got == {
        column: (p["status"], p["days"])
        for column, p in expected.items()
        if column.startswith("ods.profile.") and p["status"] is not None
    }


def test_a_crash_between_batches_leaves_earlier_batches_new_and_later_ones_old_and_a_rerun_converges(
    graph,
):
    old = AdvisorSettings(ttl_margin_days=3, ttl_batch_tables=5)
    new = AdvisorSettings(ttl_margin_days=10, ttl_batch_tables=5)
    store_advice(graph, "night-1", old, full=True)
    before = stored(graph)
    # the new night's whole advice (margin 10 changes every TTL), then night-1's again
    whole_graph_advice(graph, new, "reference-2")
    after = without_run(stored(graph))
    store_advice(graph, "night-1", old, full=True)
    assert stored(graph) == before

    finished: set[str] = set()
    # the run dies after its second batch: the generator is dropped half-way, like a killed worker
    for batch in itertools.islice(advise_in_batches(graph, new), 2):
        store_recommendations(graph, batch.recommendations, "night-2")
        finished.update(batch.tables)
    crashed = stored(graph)
    advised = [c for c, p in crashed.items() if p["status"] is not None]
    assert any(graph_table(c) in finished for c in advised) and any(
        graph_table(c) not in finished for c in advised
    )
    for column in advised:
        if graph_table(column) in finished:
            assert crashed[column]["run"] == "night-2"
            assert without_run({column: crashed[column]}) == {column: after[column]}
        else:
            assert crashed[column] == before[column]
    assert after != without_run(before)

    store_advice(graph, "night-2", new)
    converged = stored(graph)
    assert without_run(converged) == after
    assert {converged[c]["run"] for c in advised} == {"night-2"}


def graph_table(column: str) -> str:
    from watershed.graph import ids

    return ids.parent(column)


def test_the_task_is_idempotent_and_reads_its_batch_size_from_the_settings(
    graph, falkordb_server, monkeypatch
):
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(falkordb_server.port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph.graph_name)
    monkeypatch.setenv("WATERSHED_TTL_MARGIN_DAYS", "3")
    monkeypatch.setenv("WATERSHED_TTL_BATCH_TABLES", "4")
    first = advise_and_store("ttl-twice", full=True)
    once = stored(graph)
    second = advise_and_store("ttl-twice", full=True)
    assert first == second and first["columns"] > 0
    assert stored(graph) == once
    assert {p["run"] for p in once.values() if p["status"] is not None} == {"ttl-twice"}


def test_a_bad_batch_setting_is_refused_naming_it(graph, monkeypatch):
    monkeypatch.delenv("WATERSHED_SETTINGS_FILE", raising=False)
    monkeypatch.setenv("WATERSHED_TTL_BATCH_TABLES", "0")
    with pytest.raises(ValidationError, match="ttl_batch_tables"):
        AdvisorSettings()
    with pytest.raises(ValidationError, match="ttl_batch_tables"):
        advise_and_store("ttl-bad-setting")
    with pytest.raises(ValueError, match="ttl_batch_tables must be 1 or more, not 0"):
        next(table_pages(graph, 0))
    assert not any(p["run"] == "ttl-bad-setting" for p in stored(graph).values())

    env = {k: v for k, v in os.environ.items() if not k.startswith("WATERSHED_")}
    result = subprocess.run(
        [sys.executable, "-m", "watershed.api.cli", "ttl", "advise"],
        env={**env, "WATERSHED_TTL_BATCH_TABLES": "-3"},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "WATERSHED_TTL_BATCH_TABLES='-3'" in " ".join(result.stderr.split())


def test_ttl_advise_gives_the_same_report_whatever_the_batch_size(
    graph, reference, falkordb_server, monkeypatch
):
    _, expected_counts = reference
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(falkordb_server.port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph.graph_name)
    reports = []
    for size in ("1", "3", "100000"):
        monkeypatch.setenv("WATERSHED_TTL_BATCH_TABLES", size)
        result = CliRunner().invoke(
            app,
            ["ttl", "advise", "--format", "json", "--margin-days", "3", "--top", "15"],
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
        report = json.loads(result.output)
        report.pop("seconds")
        reports.append(report)
    assert reports[0] == reports[1] == reports[2]
    assert reports[0]["columns"] == expected_counts.columns
    assert reports[0]["counts"] == {
        "ttl": expected_counts.ttl,
        "keep": expected_counts.keep,
        "unused": expected_counts.unused,
    }
    top = reports[0]["top"]
    assert len(top) == 15 and top[0]["savings"] is not None
    assert [r["savings"]["bytes"] for r in top if r["savings"]] == sorted(
        (r["savings"]["bytes"] for r in top if r["savings"]), reverse=True
    )

    result = CliRunner().invoke(app, ["ttl", "advise", "--table", "ods.nope"], catch_exceptions=False)
    assert result.exit_code == 1 and "ods.nope: no such table in the graph" in result.output


def test_the_batch_statements_are_neo4j_5_cypher():
    from tests.support.cypher_lint import lint

    items = [
        {"query": graph_uses.ANY_TABLE, "params": []},
        {"query": TABLE_IDS, "params": []},
        *(
            {"query": query, "params": ["ids"]}
            for query in (
                graph_uses.BATCH_TABLES,
                graph_uses.BATCH_COLUMN_USES,
                graph_uses.BATCH_WEAK_USES,
                graph_uses.BATCH_READS,
            )
        ),
    ]
    invalid = [answer for answer in lint(items) if answer["errors"]]
    assert not invalid, invalid
