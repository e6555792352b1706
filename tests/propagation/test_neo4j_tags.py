"""Propagation on the Neo4j backend, by the transactions it sends.

The Cypher itself runs on FalkorDB and on the live local Neo4j in the other tests
(test_graph_store.py, tests/api/service/test_both_backends.py); this checks that
on Neo4j the batch read goes through a read transaction and every fenced
write through a managed write transaction (which the driver retries).
"""

from __future__ import annotations

import pytest

from tests.support.neo4j_recorder import Recorder
from watershed.graph.neo4j_store import Neo4jStore
from watershed.propagation.engine import StaleTokenError
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy
from watershed.propagation.rules import PROPAGATED, Provenance, TagValue


@pytest.fixture
def recorded():
    recorder = Recorder()
    return recorder, GraphTagStore(Neo4jStore(recorder, database="lineage"), default_policy())


def test_batch_read_is_one_read_transaction(recorded):
    recorder, store = recorded
    store.read_batch(["dwd.user.email", "dwd.user"])
    (kind, statements) = recorder.transactions[-1]
    assert kind == "read" and len(statements) == 1
    query, params = statements[0]
    assert params == {"columns": ["dwd.user.email"], "tables": ["dwd.user"]}
    assert "UNION ALL" in query and "PropagationFence" not in query


def test_fenced_writes_are_write_transactions_and_a_refusal_is_reported(recorded):
    recorder, store = recorded
    tag = TagValue(
        "pii", frozenset(["L3"]), PROPAGATED, (Provenance("ods.user.email", "t1", "direct", "keep", 1),)
    )
    with pytest.raises(StaleTokenError):
        # the recorder answers no rows: the fence did not match this token
        store.write_tags({"dwd.user.email": {"pii": tag}}, "run-1", 7, "run-1#0")
    kinds = [kind for kind, _ in recorder.transactions]
    # the write with the data stamp's move as its last statement (one commit), then the fence's token
    assert kinds == ["write", "read"]
    (query, params), (stamp_move, _) = recorder.transactions[0][1]
    assert stamp_move.startswith("MERGE (s:WatershedStamp {name: $stamp_name})")
    assert query.startswith("MATCH (f:PropagationFence {id: $fence}) WHERE f.token = $token")
    assert params["token"] == 7 and params["stamp"] == "run-1#0"
    assert params["rows"][0][2] == [
        ["pii=L3", "pii", "L3", ["ods.user.email"], ["t1"], ["direct"], ["keep"], 1]
    ]
