"""A write through `execute` or `write_all` on Neo4j is one managed transaction, the data stamp's
move its last statement (issue 37, "Measure": it was two, the write and then the stamp's own), so
the stamp moves exactly when the write commits, and concurrent writers still all commit."""

from __future__ import annotations

import threading

import pytest

from tests.support.neo4j_counting import CountingDriver
from watershed.graph.store import DATA_STAMP


def counted(store):
    counting = CountingDriver(store.driver)
    store.driver = counting
    return counting


def test_a_write_and_its_stamp_move_are_one_transaction(neo4j_store):
    counting = counted(neo4j_store)
    try:
        before = neo4j_store.change_stamp(DATA_STAMP)
        assert neo4j_store.execute("CREATE (n:Probe {id: 1}) RETURN n.id") == [[1]]
        moved = neo4j_store.change_stamp(DATA_STAMP)
        neo4j_store.write_all([("CREATE (:Probe {id: 2})", {}), ("CREATE (:Probe {id: 3})", {})])
        assert neo4j_store.change_stamp(DATA_STAMP) not in (before, moved)
    finally:
        neo4j_store.driver = counting.driver
    assert moved != before
    # the three stamp reads are auto-commit statements; each write one transaction
    assert counting.calls == ["run", "write transaction", "run", "write transaction", "run"]


def test_a_failed_write_changes_nothing_and_moves_nothing(neo4j_store):
    from neo4j.exceptions import CypherSyntaxError

    stamp = neo4j_store.change_stamp(DATA_STAMP)
    with pytest.raises(CypherSyntaxError, match=r"(?i)unknown function"):
        neo4j_store.execute("CREATE (n:Probe {id: 1}) SET n.x = no_such_function(1)")
    with pytest.raises(CypherSyntaxError, match=r"(?i)unknown function"):
        neo4j_store.write_all([("CREATE (:Probe {id: 2})", {}), ("RETURN no_such_function(1)", {})])
    # rolled back with the stamp's move: nothing written that kept values could hide
    assert neo4j_store.read("MATCH (n:Probe) RETURN count(n)") == [[0]]
    assert neo4j_store.change_stamp(DATA_STAMP) == stamp


def test_concurrent_writers_queue_on_the_stamp_and_all_commit(neo4j_store):
    """Every writer takes the stamp node's lock last: they wait for each other's commits, and
    never hold it while waiting for another lock (no deadlock to fail or retry)."""
    neo4j_store.execute("UNWIND range(1, 8) AS i CREATE (:Probe {id: i, n: 0})")
    failed: list[BaseException] = []

    def writer(i: int) -> None:
        try:
            for _ in range(15):
                neo4j_store.execute("MATCH (a:Probe {id: $i}) SET a.n = a.n + 1", {"i": i})
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(1, 9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failed == []
    assert neo4j_store.read("MATCH (n:Probe) RETURN sum(n.n)") == [[8 * 15]]
