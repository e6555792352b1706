"""The nightly chain's discover step: after the harvest and before propagation it samples the
tables whose files changed, so the proposals it auto-accepts are seeds the same night's propagation
carries; WATERSHED_NIGHTLY_DISCOVERY=false skips it (and the summary still counts it)."""

from __future__ import annotations

import itertools

import pytest

from tests.discovery.warehouse import EXPECTED, labelled_table, write_parquet
from watershed.api.service.nightly import STEPS, NightlySettings, steps
from watershed.graph.catalog import Catalog
from watershed.graph.falkordb_store import FalkorDBStore
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy

DAY = "2024-01-31"
_graphs = itertools.count()


@pytest.fixture
def night(falkordb_server, tmp_path, monkeypatch):
    graph = f"nightly_discover_{next(_graphs)}"
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(falkordb_server.port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph)
    store = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=graph)
    store.ensure_schema()
    table = labelled_table(rows=60)
    write_parquet(tmp_path / "ods" / "ext", table, files=1)
    store.upsert_catalog(
        Catalog.from_dict(
            {
                "tables": {
                    "ods.ext": {"columns": table.column_names, "location": str(tmp_path / "ods" / "ext")}
                }
            }
        )
    )
    yield store
    store.clear()
    store.close()


def test_discover_runs_between_harvest_and_propagate():
    assert STEPS.index("harvest") < STEPS.index("discover") < STEPS.index("propagate")


def test_the_step_samples_changed_tables_and_auto_accepted_proposals_are_seeds(night, monkeypatch):
    monkeypatch.setenv("WATERSHED_DISCOVERY_AUTO_ACCEPT", "0.99")
    result = steps.discover(DAY, NightlySettings())
    assert (result.step, result.status) == ("discover", "done")
    assert result.run_id.startswith("discovery-")
    assert result.counts["sampled"] == 1 and result.counts["proposed"] == len(EXPECTED)
    assert result.counts["auto_accepted"] == len(EXPECTED)
    own = GraphTagStore(night, default_policy()).own_tags("ods.ext.c17")
    assert {(e["origin"], e["key"], e["value"]) for e in own} == {
        ("discovered", "pii", "L3"),
        ("discovered", "pii_type", "phone"),
    }
    assert steps.results_of(NightlySettings(), DAY)["discover"] == result
    again = steps.discover(DAY, NightlySettings())
    assert (again.counts["sampled"], again.counts["unchanged"]) == (0, 1)  # its files did not change


def test_the_step_is_skipped_when_turned_off(night, monkeypatch):
    monkeypatch.setenv("WATERSHED_NIGHTLY_DISCOVERY", "false")
    result = steps.discover(DAY, NightlySettings())
    assert result.status == "skipped" and "WATERSHED_NIGHTLY_DISCOVERY" in result.message
    assert night.read("MATCH (s:DiscoveryScan) RETURN count(s)") == [[0]]
    summary = steps.summary(DAY, NightlySettings())
    assert "discover" not in summary.missing
