"""TTL advice read back from the lineage graph equals the advice computed from the lineage itself."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tests.support.ttl_warehouse import CATALOG, TASKS
from watershed.api.cli import app
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.ttl_advisor.advisor import advise
from watershed.ttl_advisor.graph_uses import catalog_from_graph, index_graph
from watershed.ttl_advisor.settings import AdvisorSettings
from watershed.ttl_advisor.uses import index_lineage


def test_graph_index_gives_the_same_recommendations(graph_store, monkeypatch):
    catalog = Catalog.from_dict(CATALOG)
    items = []
    for task_id, sql in TASKS.items():
        task = SqlTask(task_id=task_id, sql=sql, vars={"date": "2024-03-31"})
        items.append((task, extract_lineage(task, catalog)))
    graph_store.upsert_tasks(items, catalog)
    settings = AdvisorSettings(ttl_margin_days=3)
    expected = {
        r.column: r
        for r in advise(index_lineage([lineage for _, lineage in items]), catalog, settings=settings)
    }
    graph_catalog = catalog_from_graph(graph_store)
    got = {
        r.column: r for r in advise(index_graph(graph_store, graph_catalog), graph_catalog, settings=settings)
    }
    for column in (
        "ods.events.b_ge",
        "ods.events.h_old",
        "ods.profile.email",
        "ods.logs.msg",
        "ods.logs.level",
    ):
        assert (got[column].status, got[column].ttl_days, got[column].keep_for) == (
            expected[column].status,
            expected[column].ttl_days,
            expected[column].keep_for,
        )
    assert got["ods.logs.level"].evidence[0].unparsed_predicates == ["dt LIKE '2024%'"]

    monkeypatch.setenv(
        "WATERSHED_FALKORDB_PORT",
        str(graph_store.client.connection.connection_pool.connection_kwargs["port"]),
    )
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    result = CliRunner().invoke(
        app, ["ttl", "advise", "--format", "json", "--margin-days", "3"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["counts"]["keep"] == 2 and report["shorter_than_table"] >= 8
    assert report["top"] and report["top"][0]["evidence"]
