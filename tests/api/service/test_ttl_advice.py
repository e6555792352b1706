"""TTL advice is one use case (api/service/ttl_advice.py): what `advise` computes is what a run
stores (the nightly step's in this process) and what `stored` reads back, page by page; the faces'
errors are its errors."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tests.support.api_service import load_sample_warehouse
from watershed.api.cli import app
from watershed.api.service import ttl_advice
from watershed.api.service.nightly import steps
from watershed.api.service.nightly.settings import NightlySettings
from watershed.graph.server import free_port
from watershed.ttl_advisor.settings import AdvisorSettings

DAY = "2024-01-31"


@pytest.fixture
def advised_graph(graph_store, monkeypatch, tmp_path):
    port = graph_store.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path / "var"))
    load_sample_warehouse(graph_store)
    return graph_store


def _all_stored(store, **kwargs) -> list[ttl_advice.TtlAdvice]:
    seen, cursor = [], None
    for _ in range(200):  # bounded: a cursor that went nowhere would repeat its page forever
        page = ttl_advice.stored(store, cursor=cursor, limit=7, **kwargs)
        seen += page.items
        cursor = page.next_cursor
        if cursor is None:
            return seen
    raise AssertionError("more than 200 pages of stored advice")


def test_the_nightly_step_stores_what_advise_computes(advised_graph):
    computed = ttl_advice.advise(advised_graph, AdvisorSettings(), graph_name="g", top=100_000)
    result = steps.ttl(DAY, NightlySettings())
    assert result.run_id == f"ttl-{DAY}"
    # the advice's counts, and how the run went: the first on this graph advises every table
    counts = computed.counts.model_dump()
    assert {key: result.counts[key] for key in counts} == counts
    assert result.counts["mode"] == "full" and result.counts["tables"] > 0

    stored = _all_stored(advised_graph)
    assert len(stored) == computed.counts.columns > 0
    assert [a.savings_bytes for a in stored] == sorted(
        (a.savings_bytes for a in stored), key=lambda s: -1 if s is None else s, reverse=True
    )
    by_column = {a.column: a for a in stored}
    # `advise` keeps the columns a TTL or a deletion would shorten: each is stored as computed
    assert computed.top and {r.status for r in computed.top} <= {"ttl", "unused"}
    for rec in computed.top:
        kept = by_column[rec.column]
        assert (kept.table, kept.status, kept.ttl_days_recommended, kept.savings_bytes) == (
            rec.table,
            rec.status,
            rec.ttl_days,
            rec.savings_bytes,
        )
        assert kept.evidence == [use.model_dump() for use in rec.evidence]
    assert {a.column for a in stored if a.status in ("ttl", "unused")} == {r.column for r in computed.top}


def test_one_tables_advice_and_a_table_the_graph_lacks(advised_graph):
    ttl_advice.store_here("ttl-one-table")
    table = "ods.user_profile"
    of_table = _all_stored(advised_graph, table=table)
    assert of_table and {a.table for a in of_table} == {table}
    with pytest.raises(ttl_advice.TtlAdviceError, match=r"table ods\.nope not found"):
        ttl_advice.stored(advised_graph, table="ods.nope", limit=5)
    with pytest.raises(ttl_advice.TtlAdviceError, match=r"ods\.nope: no such table in the graph"):
        ttl_advice.advise(advised_graph, AdvisorSettings(), graph_name="g", table="ods.nope")


def test_an_empty_graph_is_no_advice_through_the_cli(graph_store, monkeypatch):
    port = graph_store.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    with pytest.raises(ttl_advice.TtlAdviceError) as raised:
        ttl_advice.advise(graph_store, AdvisorSettings(), graph_name=graph_store.graph_name)
    cli = CliRunner().invoke(app, ["ttl", "advise"])
    assert cli.exit_code == 1
    assert cli.output.strip() == f"error: {raised.value}"
    assert "has no tables" in str(raised.value)


def test_an_unreachable_graph_fails_the_nightly_step_naming_it(monkeypatch, tmp_path):
    port = free_port()
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path / "var"))
    with pytest.raises(ttl_advice.TtlRunError) as raised:
        ttl_advice.store_here("ttl-nowhere")
    with pytest.raises(steps.NightlyError) as nightly:
        steps.ttl(DAY, NightlySettings())
    assert str(raised.value).startswith(
        f"TTL run ttl-nowhere: cannot reach the falkordb graph on 127.0.0.1:{port}"
    )
    assert str(nightly.value) == str(raised.value).replace("ttl-nowhere", f"ttl-{DAY}")


def test_an_unreachable_broker_is_named_without_its_password(monkeypatch):
    port = free_port()
    monkeypatch.setenv("WATERSHED_CELERY_BROKER", f"redis://:s3cret-pw@127.0.0.1:{port}/0")
    with pytest.raises(ttl_advice.TtlBrokerUnreachableError) as raised:
        ttl_advice.queue("ttl-x")
    cli = CliRunner().invoke(app, ["ttl", "run", "--run-id", "ttl-x"])
    assert cli.exit_code == 1
    assert cli.output.strip() == f"error: {raised.value}; run `watershed services up`"
    assert f"redis://:**@127.0.0.1:{port}/0" in str(raised.value) and "s3cret-pw" not in cli.output
