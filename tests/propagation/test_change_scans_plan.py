"""An incremental propagation finds what changed by a range seek of an index on FalkorDB too: the
change times (`created_at`, `own_changed_at`, `lineage_changed_at`, `metadata_changed_at`) without an
index were a scan of every Column and Table (3.5 s of a 3.6 s one-task run at 2M columns, issue 41)."""

from __future__ import annotations

import pytest

from tests.support.neo4j_plans import plan_operators
from watershed.propagation import metadata, queries

CHANGE_SCANS = [
    *queries.CHANGED_SINCE,
    queries.COLUMNS_CREATED_SINCE,
    *metadata.METADATA_CHANGED_SINCE,
    *metadata.CHANGED_COLUMNS,
]
MARKS = ("created_at", "own_changed_at", "lineage_changed_at", "metadata_changed_at")


@pytest.mark.parametrize("query", CHANGE_SCANS)
def test_a_change_scan_reads_only_the_changed_nodes(graph_store, query):
    # 300 nodes of each label changed at times 1..300 and 300 never changed; 5 changed at 296 or later
    marks = ", ".join(f"{mark}: i" for mark in MARKS)
    graph_store.write_all(
        [
            (f"UNWIND range(1, 300) AS i CREATE (:{label} {{id: '{label}' + toString(i), {marks}}})", {})
            for label in ("Column", "Table")
        ]
        + [
            (f"UNWIND range(1, 300) AS i CREATE (:{label} {{id: 'old{label}' + toString(i)}})", {})
            for label in ("Column", "Table")
        ]
    )
    params = {"since": 296}
    rows = graph_store.read(query, params)
    # (the tables here have no columns: the scans of their columns find none)
    assert len(rows) == (1 if "LIMIT 1" in query else 0 if query.endswith("RETURN c.id") else 5)

    plan = graph_store.graph.profile(query, params)
    names = [line.split("|")[0].strip() for line in plan.plan]
    assert not any("Label Scan" in name or "All Node Scan" in name for name in names), plan.plan
    (seek,) = plan.collect_operations("Node By Index Scan")
    # a seek of the range, not the index read whole and filtered
    assert seek.records_produced <= 5, plan.plan


@pytest.mark.parametrize("query", [*metadata.METADATA_CHANGED_SINCE, *metadata.CHANGED_COLUMNS])
def test_the_metadata_passs_change_scans_are_index_seeks_on_neo4j(neo4j_store, query):
    # (the tag run's own change scans: tests/graph/test_neo4j_speed.py)
    found = plan_operators(neo4j_store, query, {"since": 0})
    assert "NodeByLabelScan" not in found and "AllNodesScan" not in found, found
    assert "NodeIndexSeekByRange" in found, found
