"""A full run's rule-seed sync goes over the warehouse a few tables at a time
(`propagation_scan_batch`): no read hands the coordinator every column, every lineage edge or every
seed at once (issue 41: at 2M columns those lists were most of the coordinator's 0.8 GiB)."""

from __future__ import annotations

from tests.support.rules_warehouse import POLICY, load
from watershed.propagation.graph_store import GraphTagStore


class Counted:
    """The graph, keeping how many rows each read returned."""

    def __init__(self, graph) -> None:
        self.graph = graph
        self.rows: list[tuple[str, bool, int]] = []

    def read(self, query: str, params: dict | None = None):
        rows = self.graph.read(query, params)
        self.rows.append((query, bool(params), len(rows)))
        return rows

    def __getattr__(self, name: str):
        return getattr(self.graph, name)


def test_a_full_rule_seed_sync_reads_a_few_tables_columns_at_a_time(graph_store):
    load(graph_store)
    per_table = graph_store.read("MATCH (t:Table)-[:HAS_COLUMN]->(c:Column) RETURN t.id, count(c)")
    widest = max(count for _, count in per_table)
    columns = graph_store.read("MATCH (c:Column) RETURN count(c)")[0][0]
    assert columns > 3 * widest  # several tables' worth

    counted = Counted(graph_store)
    store = GraphTagStore(counted, POLICY)
    store.scan_batch = 2
    written = store.sync_rule_seeds()
    assert written > 0
    # the table list, then each read at most two tables' columns
    assert all(rows <= (2 * widest if given else len(per_table)) for _, given, rows in counted.rows), (
        counted.rows
    )
    # and it is the sync a whole-warehouse read made: a second one finds nothing to change
    assert GraphTagStore(graph_store, POLICY).sync_rule_seeds() == 0
