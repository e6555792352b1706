"""The Neo4j backend's statements and transactions, without a Neo4j server.

No Neo4j server can run on this machine, so the driver is replaced by a
recorder of what the backend sends (the only fake in the suite); the shared
Cypher itself is exercised against FalkorDB in test_falkordb_store.py.
"""

from __future__ import annotations

from watershed.graph.lineage import SqlTask
from watershed.graph.neo4j_store import CONSTRAINTS, Neo4jStore
from watershed.ingest.extract import extract_lineage


class RecordedResult:
    def __init__(self, rows):
        self.rows = rows

    def consume(self):
        return None

    def __iter__(self):
        return iter(self.rows)


class Record:
    def __init__(self, values):
        self._values = values

    def values(self):
        return self._values


class Recorder:
    def __init__(self):
        self.transactions: list[tuple[str, list[tuple[str, dict]]]] = []
        self.answers: dict[str, list] = {}

    # driver
    def session(self, database):
        assert database == "lineage"
        return self

    def close(self):
        pass

    # session
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def run(self, query, params=None):
        self.transactions.append(("auto", [(query, params or {})]))
        return RecordedResult([])

    def _transaction(self, kind, work):
        statements: list[tuple[str, dict]] = []
        recorder = self

        class Tx:
            def run(self, query, params=None):
                statements.append((query, params or {}))
                return RecordedResult(
                    [Record(v) for v in recorder.answers.get(query.split()[0] + query[-20:], [])]
                )

        result = work(Tx())
        self.transactions.append((kind, statements))
        return result

    def execute_write(self, work):
        return self._transaction("write", work)

    def execute_read(self, work):
        return self._transaction("read", work)


def test_schema_uses_neo4j_5_constraints():
    recorder = Recorder()
    Neo4jStore(recorder, database="lineage").ensure_schema()
    sent = [query for _, statements in recorder.transactions for query, _ in statements]
    assert sent == CONSTRAINTS
    assert all("IF NOT EXISTS" in q for q in sent)


def test_a_load_is_one_write_transaction_with_batched_unwinds():
    recorder = Recorder()
    store = Neo4jStore(recorder, database="lineage", batch_size=2)
    task = SqlTask(
        task_id="t1", sql="INSERT INTO dw.o SELECT a, upper(b) AS b, c FROM ods.s WHERE dt = '2024-01-01'"
    )
    result = store.upsert_tasks([(task, extract_lineage(task))])
    assert result.loaded == 1 and result.column_edges == 3
    kinds = [kind for kind, _ in recorder.transactions]
    assert kinds == ["read", "write"]  # stored versions, then the whole load at once
    _, statements = recorder.transactions[1]
    queries = [q for q, _ in statements]
    # the version goes first and comes back last: visible only with all the task's edges
    assert queries[0] == "UNWIND $ids AS id MERGE (k:Task {id: id}) SET k.version = null"
    assert queries[1].startswith("UNWIND $ids AS id MATCH (k:Task {id: id})-[:WRITES]")
    assert queries[-1] == "UNWIND $rows AS r MATCH (k:Task {id: r[0]}) SET k.version = r[1]"
    edge_batches = [p["rows"] for q, p in statements if "CREATE (a)-[:FLOWS_TO {task: r[2], kind" in q]
    assert [len(b) for b in edge_batches] == [2, 1]
    # [source, target, task, kind, functions, key], the layout in graph.rows
    assert edge_batches[0][0] == ["ods.s.a", "dw.o.a", "t1", "direct", [], None]
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
