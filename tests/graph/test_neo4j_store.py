"""The Neo4j backend's statements and transactions, without a Neo4j server.

No Neo4j server can run on this machine, so the driver is replaced by a
recorder of what the backend sends (the only fake in the suite); the shared
Cypher itself is exercised against FalkorDB in test_falkordb_store.py.
"""

from __future__ import annotations

from tests.support.neo4j_recorder import Recorder
from watershed.graph.lineage import SqlTask
from watershed.graph.neo4j_store import AWAIT_INDEXES, CONSTRAINTS, FULLTEXT_INDEXES, Neo4jStore
from watershed.ingest.extract import extract_lineage


def test_schema_uses_neo4j_5_constraints():
    recorder = Recorder()
    Neo4jStore(recorder, database="lineage").ensure_schema()
    sent = [query for _, statements in recorder.transactions for query, _ in statements]
    # then the full-text indexes, waited for (search reads them at once)
    schema = CONSTRAINTS + FULLTEXT_INDEXES + [AWAIT_INDEXES]
    assert sent[: len(schema)] == schema
    assert all("IF NOT EXISTS" in q for q in sent[: len(schema) - 1])
    # then, on a graph not yet stamped as backfilled, each label's id words filled in batches and
    # the stamp set last (a crash before it re-runs the idempotent backfill)
    check, *backfill, stamp = sent[len(schema) :]
    assert check.startswith("MATCH (s:WatershedStamp") and stamp.startswith("MERGE (s:WatershedStamp")
    assert [q.split()[1] for q in backfill] == ["(n:Table)", "(n:Column)"]
    assert all("id_words IS NULL" in q and "IN TRANSACTIONS" in q for q in backfill)


def test_a_load_is_one_write_transaction_with_batched_unwinds():
    recorder = Recorder()
    store = Neo4jStore(recorder, database="lineage", batch_size=2)
    task = SqlTask(
        task_id="t1", sql="INSERT INTO dw.o SELECT a, upper(b) AS b, c FROM ods.s WHERE dt = '2024-01-01'"
    )
    result = store.upsert_tasks([(task, extract_lineage(task))])
    assert result.loaded == 1 and result.column_edges == 3
    kinds = [kind for kind, _ in recorder.transactions]
    # stored versions, then the whole load at once, the data stamp's move (graph.kept) its last statement
    assert kinds == ["read", "write"]
    _, statements = recorder.transactions[1]
    *statements, (stamp_move, stamp) = statements
    assert (
        stamp_move.startswith("MERGE (s:WatershedStamp {name: $stamp_name})")
        and stamp["stamp_name"] == "data"
    )
    queries = [q for q, _ in statements]
    # the version goes first and comes back last: visible only with all the task's edges
    assert queries[0] == "UNWIND $ids AS id MERGE (k:Task {id: id}) SET k.version = null"
    assert queries[1].startswith("UNWIND $ids AS id MATCH (k:Task {id: id})-[:WRITES]")
    # ... after its edges; only the task's source and seen time are set after it
    versioned = queries.index("UNWIND $rows AS r MATCH (k:Task {id: r[0]}) SET k.version = r[1]")
    assert all("k.seen_at" in q for q in queries[versioned + 1 :]), queries[versioned + 1 :]
    assert all("FLOWS_TO" not in q and "INFLUENCES" not in q for q in queries[versioned + 1 :])
    edge_batches = [p["rows"] for q, p in statements if "CREATE (a)-[:FLOWS_TO {task: r[2], kind" in q]
    assert [len(b) for b in edge_batches] == [2, 1]
    # [source, target, task, kind, functions, key, description], the layout in graph.rows
    assert edge_batches[0][0] == ["ods.s.a", "dw.o.a", "t1", "direct", [], None, None]
    assert all("$rows" in q or "$ids" in q for q in queries)


def test_reads_use_structured_rows():
    recorder = Recorder()
    store = Neo4jStore(recorder, database="lineage")
    store.lineage("dw.o.a", "upstream", depth=3)
    (kind, statements), *_ = recorder.transactions
    query, params = statements[0]
    assert kind == "read" and params == {"id": "dw.o.a"}
    # depth 3: the nodes within 2 hops, each expanded by its incoming edges; then the root's own row
    assert "(root)<-[:FLOWS_TO*0..2]-(v) WITH DISTINCT v MATCH (u)-[r:FLOWS_TO]->(v)" in query
    assert "RETURN u.id AS source, u.type AS type, v.id AS target, r.task AS task" in query
    assert "UNION ALL MATCH (root:Column {id: $id})" in query
