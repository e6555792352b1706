"""A bounded lineage walk on Neo4j is one statement (issue 37, "Measure": each statement is a Bolt
round trip), and answers exactly what the shared hop-by-hop walk answers: the same nodes, edges,
order and truncation, on a generated graph with fan-out, repeated edges and caps that cut."""

from __future__ import annotations

import json
import random

import pytest

from tests.support.neo4j_counting import CountingDriver
from watershed.graph.neo4j_store import LINEAGE_STATEMENT_DEPTH
from watershed.graph.store import GraphStore

TABLES = 12
COLUMNS_PER_TABLE = 5


def generated_graph(store) -> tuple[list[str], list[str]]:
    """Columns and tables in layers, each node fed by several of the layers before it (fan-in and
    fan-out, a pair joined by two tasks, two transform kinds), tags on some; their ids."""
    rng = random.Random(41)
    tables = [f"db.t{t:02d}" for t in range(TABLES)]
    columns = [f"{table}.c{c}" for table in tables for c in range(COLUMNS_PER_TABLE)]

    def tags(i: int) -> str | None:
        return json.dumps({"pii": {"v": [f"L{i % 3}"]}}) if i % 4 == 0 else None

    store.execute(
        "UNWIND $rows AS row CREATE (:Column {id: row.id, tags: row.tags})",
        {"rows": [{"id": c, "tags": tags(i)} for i, c in enumerate(columns)]},
    )
    store.execute(
        "UNWIND $rows AS row CREATE (:Table {id: row.id, tags: row.tags})",
        {"rows": [{"id": t, "tags": tags(i)} for i, t in enumerate(tables)]},
    )
    column_edges, table_edges = [], set()
    for i, target in enumerate(columns[COLUMNS_PER_TABLE:], start=COLUMNS_PER_TABLE):
        for source in rng.sample(columns[: i - i % COLUMNS_PER_TABLE], rng.randint(1, 4)):
            for task in ["task_a", "task_b"][: rng.randint(1, 2)]:
                kind = rng.choice(["direct", "indirect"])
                functions = rng.choice([[], ["upper"], ["sum", "coalesce"]])
                column_edges.append({"s": source, "t": target, "task": task, "kind": kind, "f": functions})
                table_edges.add((source.rsplit(".", 1)[0], target.rsplit(".", 1)[0], task))
    store.execute(
        "UNWIND $rows AS row MATCH (s:Column {id: row.s}), (t:Column {id: row.t}) "
        "CREATE (s)-[:FLOWS_TO {task: row.task, kind: row.kind, functions: row.f}]->(t)",
        {"rows": column_edges},
    )
    store.execute(
        "UNWIND $rows AS row MATCH (s:Table {id: row[0]}), (t:Table {id: row[1]}) "
        "CREATE (s)-[:FLOWS_TO {task: row[2]}]->(t)",
        {"rows": sorted(table_edges)},
    )
    return columns, tables


def test_one_statement_answers_what_the_hop_by_hop_walk_answers(neo4j_store):
    columns, tables = generated_graph(neo4j_store)
    asked = 0
    truncated = 0
    for level, ids in (("column", columns), ("table", tables)):
        for node in [ids[len(ids) // 2], ids[-1]]:
            for direction in ("upstream", "downstream", "both"):
                for depth in (0, 3):
                    for limit in (4, 500):
                        for kinds in (None, ["direct"]) if level == "column" else (None,):
                            arguments = (node, direction, depth, limit, level, kinds)
                            walked = GraphStore.bounded_lineage(neo4j_store, *arguments)
                            assert neo4j_store.bounded_lineage(*arguments) == walked, arguments
                            asked += 1
                            truncated += walked.truncated
    # the caps cut some walks and not others: both branches of the truncation were compared
    assert 0 < truncated < asked
    # deeper than one statement is built for: the shared walk itself
    deep = (columns[-1], "both", LINEAGE_STATEMENT_DEPTH + 1, 500, "column", None)
    assert neo4j_store.bounded_lineage(*deep) == GraphStore.bounded_lineage(neo4j_store, *deep)
    for level in ("column", "table"):
        assert neo4j_store.bounded_lineage("db.nowhere", "both", level=level) is None
        assert GraphStore.bounded_lineage(neo4j_store, "db.nowhere", "both", level=level) is None


def test_a_row_cap_cuts_the_same_rows(neo4j_store):
    """A hop whose rows reach the cap (limit * 4 + 1) is cut at the same row on both walks."""
    neo4j_store.execute(
        "CREATE (t:Column {id: 'db.sink.c'}) WITH t UNWIND range(1, 30) AS i "
        "CREATE (:Column {id: 'db.src.c' + i})-[:FLOWS_TO {task: 'k', kind: 'direct', functions: []}]->(t)"
    )
    for limit in (2, 5, 7, 8, 500):
        walked = GraphStore.bounded_lineage(neo4j_store, "db.sink.c", "upstream", 2, limit)
        assert neo4j_store.bounded_lineage("db.sink.c", "upstream", 2, limit) == walked
        assert walked.truncated == (limit < 30)


@pytest.mark.parametrize("direction", ["upstream", "both"])
def test_a_lineage_request_is_one_statement(neo4j_store, direction):
    columns, _ = generated_graph(neo4j_store)
    counting = CountingDriver(neo4j_store.driver)
    neo4j_store.driver = counting
    try:
        view = neo4j_store.bounded_lineage(columns[-1], direction, depth=3)
    finally:
        neo4j_store.driver = counting.driver
    assert len(view.nodes) > 3
    # the hop-by-hop walk: the root, then one per hop and direction (4 or 7 here)
    assert counting.calls == ["run"]
