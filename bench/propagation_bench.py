"""Propagation benchmark: a full run and an incremental run on a generated warehouse, through Celery workers.

    .venv/bin/python bench/propagation_bench.py --tasks 10000 --workers 2

Starts its own FalkorDB, Redis and workers on free ports, generates the
warehouse (policy name rules seed every email/phone column; stewards' `app`
values are set on the ODS tables and their app columns), loads it, runs a
full propagation, then changes one task's SQL and runs an incremental one.
Prints columns/s of the full run, its layers and tags written, and the
incremental run's nodes touched and time as a ratio of the full run's.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from watershed.api.service.celery_app import app_for, worker_argv  # noqa: E402
from watershed.graph.catalog import Catalog  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402
from watershed.graph.store import GraphStore  # noqa: E402
from watershed.ingest.extract import extract_lineage  # noqa: E402
from watershed.ingest.generator import generate_warehouse, seed_apps  # noqa: E402
from watershed.ingest.sources import read_jsonl  # noqa: E402

APPS = ["douyin", "toutiao", "xigua", "lark"]


def load_generated(graph: GraphStore, directory: Path, chunk: int = 1000) -> tuple[int, Catalog]:
    """Extract every task of a generated warehouse in this process and load it; returns (tasks, catalog)."""
    catalog = Catalog.load(directory / "catalog.json")
    graph.upsert_catalog(catalog)
    tasks = [located.task for located in read_jsonl(directory / "tasks.jsonl", [])]
    for start_at in range(0, len(tasks), chunk):
        graph.upsert_tasks(
            [(task, extract_lineage(task, catalog)) for task in tasks[start_at : start_at + chunk]], catalog
        )
    return len(tasks), catalog


def start_workers(count: int, concurrency: int, redis_port: int, falkordb_port: int, log_dir: Path):
    env = {
        **os.environ,
        "WATERSHED_CELERY_BROKER": f"redis://127.0.0.1:{redis_port}/0",
        "WATERSHED_FALKORDB_PORT": str(falkordb_port),
        "PYTHONPATH": str(REPO),
    }
    processes = []
    for i in range(count):
        log = (log_dir / f"worker-{i}.log").open("w")
        processes.append(
            subprocess.Popen(
                worker_argv(concurrency, name=f"bench{i}@%h"),
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    return processes


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--concurrency", type=int, default=2, help="pool processes per worker")
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "propagation_bench.json")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="watershed-propagation-bench-"))
    falkordb = ServerSpec("falkordb", "127.0.0.1", free_port(), work / "falkordb", with_falkordb=True)
    redis = ServerSpec("redis", "127.0.0.1", free_port(), work / "redis", with_falkordb=False)
    start(falkordb)
    start(redis)
    os.environ["WATERSHED_CELERY_BROKER"] = f"redis://127.0.0.1:{redis.port}/0"
    workers = start_workers(args.workers, args.concurrency, redis.port, falkordb.port, work)
    try:
        from watershed.graph.falkordb_store import FalkorDBStore
        from watershed.propagation.coordinator import Progress, celery_runner, propagate
        from watershed.propagation.graph_store import GraphTagStore
        from watershed.propagation.policy import default_policy
        from watershed.propagation.run_state import RunState
        from watershed.propagation.settings import PropagationSettings

        began = time.monotonic()
        summary = generate_warehouse(work / "warehouse", tasks=args.tasks, seed=args.seed)
        graph = FalkorDBStore("127.0.0.1", falkordb.port, graph="bench")
        graph.ensure_schema()
        loaded, catalog = load_generated(graph, work / "warehouse")
        load_seconds = time.monotonic() - began
        stats = graph.stats()
        policy = default_policy()
        tags = GraphTagStore(graph, policy)
        seeded = seed_apps(tags, catalog)
        print(
            f"warehouse: {loaded} tasks, {stats.columns} columns, {stats.column_edges} column edges, "
            f"{seeded} ODS tables seeded with app values ({load_seconds:.0f} s to generate and load)",
            flush=True,
        )
        settings = PropagationSettings(
            falkordb_port=falkordb.port,
            graph_name="bench",
            celery_broker=os.environ["WATERSHED_CELERY_BROKER"],
        )
        state = RunState.from_url(settings.broker_url(), "bench")
        app = app_for(settings)
        deadline = time.monotonic() + 60
        while len(app.control.ping(timeout=0.5) or []) < args.workers and time.monotonic() < deadline:
            pass

        def show(layer, record) -> None:
            print(
                f"  layer {layer.layer:>3}: {layer.nodes:>8} nodes, {layer.batches:>5} batches, "
                f"{layer.changed:>8} changed, {layer.seconds:7.2f} s",
                flush=True,
            )

        progress = Progress(on_layer=show, on_message=lambda m: print("  " + m, flush=True))
        runner = celery_runner(settings, policy, app=app)
        t0 = time.monotonic()
        full = propagate(
            graph,
            policy,
            state,
            runner,
            full=True,
            settings=settings,
            progress=progress,
            batch_size=args.batch_size,
        )
        full_seconds = time.monotonic() - t0
        tagged = len(tags.tagged_nodes())
        tag_edges = graph.read("MATCH ()-[g:TAGGED {origin: 'propagated'}]->() RETURN count(g)")[0][0]

        # One task changes: the first DWD task copies a different column into its first target column.
        task_id = next(
            t
            for t in (json.loads(line)["task_id"] for line in (work / "warehouse" / "tasks.jsonl").open())
            if t.startswith("dwd_")
        )
        from watershed.graph.lineage import SqlTask

        original = next(
            json.loads(line)
            for line in (work / "warehouse" / "tasks.jsonl").open()
            if json.loads(line)["task_id"] == task_id
        )
        changed_sql = original["sql"] + "\n-- changed by the benchmark"
        changed_sql = changed_sql.replace("SELECT ", "SELECT DISTINCT ", 1)
        task = SqlTask(task_id=task_id, sql=changed_sql, vars=original["vars"])
        graph.upsert_tasks([(task, extract_lineage(task, catalog))], catalog)
        t0 = time.monotonic()
        incremental = propagate(
            graph, policy, state, runner, settings=settings, progress=progress, batch_size=args.batch_size
        )
        incremental_seconds = time.monotonic() - t0

        result = {
            "tasks": loaded,
            "columns": stats.columns,
            "column_edges": stats.column_edges,
            "warehouse": {"tables": summary.tables, "cycles": summary.cycles, "broken": summary.broken},
            "workers": args.workers,
            "concurrency": args.concurrency,
            "batch_size": args.batch_size,
            "full": {
                "seconds": round(full_seconds, 2),
                "columns_per_s": round(stats.columns / full_seconds, 1),
                "nodes_processed": full.nodes_processed,
                "nodes_processed_per_s": round(full.nodes_processed / full_seconds, 1),
                "cone": full.cone,
                "layers": len(full.layers),
                "nodes_with_tags": tagged,
                "propagated_tag_edges": tag_edges,
                "tags_changed": full.tags_changed,
            },
            "incremental": {
                "changed_task": task_id,
                "seconds": round(incremental_seconds, 2),
                "nodes_touched": incremental.nodes_processed,
                "cone": incremental.cone,
                "layers": len(incremental.layers),
                "time_ratio_to_full": round(incremental_seconds / full_seconds, 4),
                "nodes_ratio_to_full": round(incremental.nodes_processed / max(full.nodes_processed, 1), 4),
            },
        }
        print(json.dumps(result, indent=2))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    finally:
        for process in workers:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(process.pid, signal.SIGKILL)
        stop(redis)
        stop(falkordb)


if __name__ == "__main__":
    main()
