"""Persistence of the embedded servers: compaction on stop, loading as progress, restarts."""

from __future__ import annotations

import pytest
import redis

from watershed.graph.server import ServerSpec, free_port, start, stop

# no fixture: each test starts (and restarts) servers of its own
pytestmark = pytest.mark.services


def _aof_files(spec: ServerSpec) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in (spec.directory / "appendonlydir").iterdir()}


def test_stop_compacts_the_append_only_file_into_a_snapshot_base(tmp_path):
    spec = ServerSpec("falkordb", "127.0.0.1", free_port(), tmp_path, with_falkordb=True)
    start(spec)
    try:
        client = redis.Redis(port=spec.port)
        for i in range(50):
            client.execute_command(
                "GRAPH.QUERY", "g", f"CREATE (:Column {{id: 'c{i}'}})-[:FLOWS_TO]->(:Column)"
            )
    finally:
        stop(spec)
    files = _aof_files(spec)
    # What the next start loads: the graph as an RDB snapshot, and no Cypher writes to replay.
    assert [name for name in files if name.endswith(".base.rdb")], files
    assert all(size == 0 for name, size in files.items() if ".incr." in name), files
    start(spec)
    try:
        reply = redis.Redis(port=spec.port).execute_command("GRAPH.QUERY", "g", "MATCH (n) RETURN count(n)")
        assert reply[1] == [[100]]
    finally:
        stop(spec)


def test_a_long_load_is_progress_not_a_failure(tmp_path):
    # Redis's own test knobs make loading slow (a delay per key) and answer LOADING often.
    slow = ("--key-load-delay", "400", "--loading-process-events-interval-bytes", "1024")
    spec = ServerSpec("redis", "127.0.0.1", free_port(), tmp_path, with_falkordb=False)
    start(spec)
    client = redis.Redis(port=spec.port)
    pipeline = client.pipeline(transaction=False)
    for i in range(10000):
        pipeline.set(f"key:{i}", "x" * 64)
    pipeline.execute()
    stop(spec)
    slow_spec = ServerSpec("redis", "127.0.0.1", spec.port, tmp_path, with_falkordb=False, extra_args=slow)
    messages: list[str] = []
    try:
        start(slow_spec, wait_seconds=1, progress=messages.append)
        assert redis.Redis(port=spec.port).dbsize() == 10000
    finally:
        stop(slow_spec)
    assert any("redis: loading its data" in m for m in messages), messages


def test_writes_are_logged_as_their_effects_not_their_queries(tmp_path):
    # Replaying logged Cypher re-runs every MATCH (and scanned while loading: minutes for the demo
    # graph); logged effects are applied directly. What a crash leaves to replay is effects only.
    import os
    import signal

    from watershed.graph import processes
    from watershed.graph.falkordb_store import FalkorDBStore
    from watershed.graph.lineage import SqlTask
    from watershed.ingest.extract import extract_lineage

    spec = ServerSpec("falkordb", "127.0.0.1", free_port(), tmp_path, with_falkordb=True)
    pid = start(spec)
    store = FalkorDBStore(spec.host, spec.port)
    store.ensure_schema()
    task = SqlTask(
        task_id="t1", sql="INSERT INTO dw.o SELECT a, upper(b) AS b FROM ods.s WHERE dt = '2024-01-01'"
    )
    store.upsert_tasks([(task, extract_lineage(task))])
    stats = store.stats()
    store.close()
    os.kill(pid, signal.SIGKILL)
    processes.wait_gone(pid, 30)
    log = b"".join(p.read_bytes() for p in (spec.directory / "appendonlydir").glob("*.incr.aof"))
    assert b"GRAPH.EFFECT" in log and b"UNWIND" not in log
    start(spec)
    try:
        assert FalkorDBStore(spec.host, spec.port).stats() == stats
    finally:
        stop(spec)
