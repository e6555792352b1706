"""Restart time of the embedded graph server, and its size on disk.

    .venv/bin/python bench/restart_bench.py [--columns 2000000] [--demo-tasks 500]

Two graphs, each on its own FalkorDB (free port, temporary directory):

- the demo graph: `--demo-tasks` generated tasks (bench/gen_warehouse.py),
  extracted in this process (no Spark) and loaded through the GraphStore. It is
  restarted as the server ran before persistence was tuned (append-only file
  of Cypher queries, no snapshots, no rewrite on stop; stopped by SIGTERM),
  and as it runs now (`graph.server.PERSISTENCE`, `FALKORDB_MODULE_ARGS`):
  after a crash (SIGKILL: the append-only file's increments are replayed) and
  after `stop` (compacted first);
- the scale graph: `--columns` synthetic columns in 8 layers
  (bench/graph_bench.py's generator), bulk-loaded through the GraphStore;
  restarted as it runs now, after a crash and after `stop`.

For each: load time, stop time, the files' size on disk, and the restart time
(from launching redis-server until it answers PING with the graph loaded; the
graph's counts are checked after). Results go to bench/results/restart_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.graph_bench import synthetic_catalog, synthetic_tasks  # noqa: E402
from watershed.graph import processes  # noqa: E402
from watershed.graph.catalog import Catalog  # noqa: E402
from watershed.graph.falkordb_store import FalkorDBStore  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402
from watershed.ingest.extract import extract_lineage  # noqa: E402
from watershed.ingest.generator import generate_warehouse  # noqa: E402
from watershed.ingest.sources import read_tasks  # noqa: E402

#: the settings the server ran with before (later arguments override graph.server.PERSISTENCE)
OLD_SETTINGS = ("--save", "", "--auto-aof-rewrite-min-size", "64mb")


def size_on_disk(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def restart(spec: ServerSpec, store_factory, how: str, progress) -> dict:
    """Stop the server (`stop`: compacted and SHUTDOWN; `sigterm`: as before; `sigkill`: a crash), start it."""
    store = store_factory()
    stats = store.stats()
    store.close()
    began = time.perf_counter()
    if how == "stop":
        stop(spec, wait_seconds=600)
    else:
        record = processes.read_record(spec.pid_file)
        if how == "sigkill":
            os.kill(record.pid, signal.SIGKILL)
            processes.wait_gone(record.pid, 60)
        else:
            processes.terminate(record, wait_seconds=600)
        spec.pid_file.unlink(missing_ok=True)
    stop_seconds = time.perf_counter() - began
    on_disk = size_on_disk(spec.directory)
    began = time.perf_counter()
    start(spec, stall_seconds=1800, progress=progress)
    restart_seconds = time.perf_counter() - began
    store = store_factory()
    assert store.stats() == stats, "the restarted graph differs"
    store.close()
    return {
        "stopped_by": how,
        "stop_seconds": round(stop_seconds, 2),
        "on_disk_bytes": on_disk,
        "restart_seconds": round(restart_seconds, 2),
        "stats": stats.model_dump(),
    }


def demo_graph(root: Path, tasks: int, old: bool, progress) -> dict:
    warehouse = root / "warehouse"
    if not warehouse.exists():
        generate_warehouse(warehouse, tasks=tasks, seed=7)
    spec = ServerSpec(
        "falkordb",
        "127.0.0.1",
        free_port(),
        root / ("old" if old else "new"),
        with_falkordb=True,
        extra_args=OLD_SETTINGS if old else (),
    )
    start(spec)
    try:

        def store_factory():
            return FalkorDBStore(spec.host, spec.port)

        store = store_factory()
        if old:  # FalkorDB's default: slow writes logged as their Cypher query
            store.client.connection.execute_command("GRAPH.CONFIG", "SET", "EFFECTS_THRESHOLD", "300")
        store.ensure_schema()
        catalog = Catalog.load(warehouse / "catalog.json")
        began = time.perf_counter()
        store.upsert_catalog(catalog)
        items = [(task, extract_lineage(task, catalog)) for task in read_tasks(warehouse / "tasks", [])]
        for offset in range(0, len(items), 100):
            store.upsert_tasks(items[offset : offset + 100], catalog)
        load_seconds = time.perf_counter() - began
        store.close()
        head = {
            "settings": "before" if old else "now",
            "tasks": tasks,
            "load_seconds": round(load_seconds, 2),
        }
        if old:
            return head | {"runs": [restart(spec, store_factory, "sigterm", progress)]}
        return head | {"runs": [restart(spec, store_factory, how, progress) for how in ("sigkill", "stop")]}
    finally:
        stop(spec, wait_seconds=600)


def scale_graph(root: Path, columns: int, progress) -> dict:
    spec = ServerSpec("falkordb", "127.0.0.1", free_port(), root / "scale", with_falkordb=True)
    start(spec)
    try:

        def store_factory():
            return FalkorDBStore(spec.host, spec.port, batch_size=10000)

        store = store_factory()
        store.ensure_schema()
        items = synthetic_tasks(columns, seed=1)
        catalog = synthetic_catalog(items, columns)
        began = time.perf_counter()
        store.upsert_catalog(catalog)
        for offset in range(0, len(items), 1000):
            store.upsert_tasks(items[offset : offset + 1000])
            progress(f"  loaded {min(offset + 1000, len(items))} of {len(items)} tasks")
        load_seconds = time.perf_counter() - began
        store.close()
        runs = [restart(spec, store_factory, how, progress) for how in ("sigkill", "stop")]
        return {"settings": "now", "columns": columns, "load_seconds": round(load_seconds, 2), "runs": runs}
    finally:
        stop(spec, wait_seconds=600)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--columns", type=int, default=2_000_000)
    parser.add_argument("--demo-tasks", type=int, default=500)
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "restart_bench.json")
    args = parser.parse_args()
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="restart-bench-") as scratch:
        root = Path(scratch)
        if not args.skip_demo:
            for old in (True, False):
                run = demo_graph(root, args.demo_tasks, old, print)
                results["demo_before" if old else "demo_now"] = run
                for item in run["runs"]:
                    print(
                        f"demo graph ({args.demo_tasks} tasks), settings {run['settings']}, stopped by "
                        f"{item['stopped_by']}: restart {item['restart_seconds']} s, "
                        f"{item['on_disk_bytes'] / 1e6:.1f} MB on disk, stop {item['stop_seconds']} s"
                    )
        if not args.skip_scale:
            run = scale_graph(root, args.columns, print)
            results["scale"] = run
            stats = run["runs"][0]["stats"]
            print(
                f"scale graph ({stats['columns']} columns, {stats['column_edges']} column edges): "
                f"load {run['load_seconds']} s"
            )
            for item in run["runs"]:
                print(
                    f"  stopped by {item['stopped_by']}: stop {item['stop_seconds']} s, "
                    f"{item['on_disk_bytes'] / 1e6:.1f} MB on disk, restart {item['restart_seconds']} s"
                )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results in {args.out}")


if __name__ == "__main__":
    main()
