"""Records queued beside the graph (`GraphStore.queue_record`, FalkorDB): durable once queued,
written only while the stamp they were decided under holds, run exactly once in effect however
often a run is cut short."""

from __future__ import annotations

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from watershed.api.service.audit import QUEUED_ENTRIES, audit_params, entries
from watershed.graph import falkordb_store
from watershed.graph.falkordb_store import QueuedRecordError
from watershed.graph.kept import DATA_STAMP

COUNT = "MATCH (a:AuditEntry) RETURN count(a)"


def queued(store) -> int:
    return store.client.connection.xlen(store._queue_key())


def entry(n: int) -> dict:
    return audit_params("ann", "authz.decision", "user:ann", None, {"n": n})


def test_a_queued_record_is_written_when_the_queue_runs(graph_store):
    stamp = graph_store.change_stamp(DATA_STAMP)
    assert graph_store.queue_record(QUEUED_ENTRIES, entry(1), stamp=stamp) is None
    assert graph_store.queue_record(QUEUED_ENTRIES, entry(2)) is None
    assert graph_store.read(COUNT) == [[0]] and queued(graph_store) == 2
    assert graph_store.run_queued() == 2
    assert graph_store.read(COUNT) == [[2]] and queued(graph_store) == 0
    assert graph_store.run_queued() == 0
    # queueing is bookkeeping: the data stamp stays
    assert graph_store.change_stamp(DATA_STAMP) == stamp


def test_a_record_decided_under_a_moved_stamp_is_not_queued(graph_store):
    stamp = graph_store.change_stamp(DATA_STAMP)
    graph_store.execute("CREATE (:Probe {id: 1})")
    now = graph_store.queue_record(QUEUED_ENTRIES, entry(1), stamp=stamp)
    assert now is not None and now != stamp and now == graph_store.change_stamp(DATA_STAMP)
    assert queued(graph_store) == 0
    assert graph_store.queue_record(QUEUED_ENTRIES, entry(2), stamp=now) is None
    graph_store.run_queued()
    assert [e.after for e in entries(graph_store)] == [{"n": 2}]


def test_a_run_cut_short_before_its_deletes_writes_each_record_once(graph_store, monkeypatch):
    for n in range(5):
        graph_store.queue_record(QUEUED_ENTRIES, entry(n))
    connection = graph_store.client.connection

    def lost(*_ids):
        raise RedisConnectionError("connection lost")

    monkeypatch.setattr(connection, "xdel", lost)
    with pytest.raises(RedisConnectionError):
        graph_store.run_queued()
    monkeypatch.undo()
    # written, still queued: the next run writes them again, and finds them written
    assert graph_store.read(COUNT) == [[5]] and queued(graph_store) == 5
    assert graph_store.run_queued() == 5
    assert graph_store.read(COUNT) == [[5]] and queued(graph_store) == 0
    assert sorted(e.after["n"] for e in entries(graph_store)) == list(range(5))


def test_a_refused_record_stays_queued_and_is_named(graph_store):
    graph_store.queue_record(QUEUED_ENTRIES, entry(1))
    graph_store.queue_record(
        "UNWIND $rows AS r MERGE (a:AuditEntry {id: r.id}) SET a.at = no_such_function(1)", {"id": "x"}
    )
    graph_store.queue_record(QUEUED_ENTRIES, entry(3))
    with pytest.raises(
        QueuedRecordError, match=r"queued records from \S+ were refused: .*no_such_function.*1 left queued"
    ):
        graph_store.run_queued()
    # the others are written and gone from the queue; it waits, and the trail says why
    assert graph_store.read(COUNT) == [[2]] and queued(graph_store) == 1
    with pytest.raises(QueuedRecordError):
        entries(graph_store)


def test_a_long_queue_is_written_by_the_call_that_queues_its_last_record(graph_store, monkeypatch):
    monkeypatch.setattr(falkordb_store, "RUN_QUEUED_AT", 3)
    monkeypatch.setattr(falkordb_store, "RUN_QUEUED_BATCH", 2)
    for n in range(2):
        graph_store.queue_record(QUEUED_ENTRIES, entry(n))
    assert queued(graph_store) == 2
    graph_store.queue_record(QUEUED_ENTRIES, entry(2))
    assert queued(graph_store) == 0 and graph_store.read(COUNT) == [[3]]


def test_clearing_the_graph_drops_its_queue(graph_store):
    graph_store.queue_record(QUEUED_ENTRIES, entry(1))
    graph_store.clear()
    assert queued(graph_store) == 0 and graph_store.run_queued() == 0


def test_the_queue_polls_for_its_reply_then_blocks_for_a_slow_one(graph_store, monkeypatch):
    client = graph_store._queue_client
    connection = client.connection_pool.get_connection()
    client.connection_pool.release(connection)
    assert isinstance(connection, falkordb_store._PollingConnection)
    polls = []
    can_read = falkordb_store._PollingConnection.can_read

    def counted(self, timeout=0):
        polls.append(timeout)
        return can_read(self, timeout)

    monkeypatch.setattr(falkordb_store._PollingConnection, "can_read", counted)
    stamp = graph_store.change_stamp(DATA_STAMP)
    assert graph_store.queue_record(QUEUED_ENTRIES, entry(1), stamp=stamp) is None
    assert polls and set(polls) == {0}
    # a reply later than the polling window (a 50 ms blocking pop) still arrives, read blocking
    monkeypatch.setattr(falkordb_store, "QUEUE_REPLY_POLL_SECONDS", 0.001)
    assert client.blpop(["watershed:test:nothing"], timeout=0.05) is None
    assert client.ping() is True
    assert queued(graph_store) == 1


def test_closing_the_store_closes_the_queue_connections(graph_store):
    graph_store.queue_record(QUEUED_ENTRIES, entry(1))
    pool = graph_store._queue_client.connection_pool
    connection = pool.get_connection()
    pool.release(connection)
    assert connection._sock is not None
    graph_store.close()
    assert connection._sock is None
