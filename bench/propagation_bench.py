"""Propagation benchmark: a full run and an incremental run on a generated warehouse, through Celery workers.

    .venv/bin/python bench/propagation_bench.py --tasks 2200 22000 --label after

Starts its own FalkorDB, Redis and workers on free ports for each size (2,200 tasks are about
100k columns, 22,000 about 1M), generates the warehouse (policy name rules seed every email/phone column; stewards' `app`
values are set on the ODS tables and their app columns), loads it, runs a
full propagation, then changes one task's SQL and runs an incremental one.
Prints columns/s of the full run, its layers and tags written, the coordinator
process's peak memory, and the incremental run's nodes touched, its time per
step (`changes`: finding what changed; `start`: that, the rule seeds and the
cone; `layers`; `metadata`) and, over two sizes, the exponent of its time in the
warehouse's size. The warehouse is generated and loaded in a child process, so
the peak is the coordinator's own.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import resource
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


def _prepare(directory: str, tasks: int, seed: int, port: int) -> dict:
    """Generate and load the warehouse and seed the stewards' app values (in a child process, so the
    parent's peak memory is the propagation coordinator's alone)."""
    from watershed.graph.falkordb_store import FalkorDBStore
    from watershed.propagation.graph_store import GraphTagStore
    from watershed.propagation.policy import default_policy

    began = time.monotonic()
    summary = generate_warehouse(Path(directory), tasks=tasks, seed=seed)
    graph = FalkorDBStore("127.0.0.1", port, graph="bench")
    graph.ensure_schema()
    loaded, catalog = load_generated(graph, Path(directory))
    stats = graph.stats()
    seeded = seed_apps(GraphTagStore(graph, default_policy()), catalog)
    return {
        "tasks": loaded,
        "columns": stats.columns,
        "column_edges": stats.column_edges,
        "warehouse": {"tables": summary.tables, "cycles": summary.cycles, "broken": summary.broken},
        "seeded_ods_tables": seeded,
        "load_seconds": round(time.monotonic() - began, 1),
    }


def _change_one_task(directory: str, port: int) -> str:
    """The first DWD task copies DISTINCT rows now (its lineage is written again); returns its id."""
    from watershed.graph.falkordb_store import FalkorDBStore
    from watershed.graph.lineage import SqlTask

    directory_path = Path(directory)
    catalog = Catalog.load(directory_path / "catalog.json")
    with (directory_path / "tasks.jsonl").open() as lines:
        original = next(json.loads(line) for line in lines if json.loads(line)["task_id"].startswith("dwd_"))
    changed_sql = original["sql"] + "\n-- changed by the benchmark"
    changed_sql = changed_sql.replace("SELECT ", "SELECT DISTINCT ", 1)
    task = SqlTask(task_id=original["task_id"], sql=changed_sql, vars=original["vars"])
    graph = FalkorDBStore("127.0.0.1", port, graph="bench")
    graph.upsert_tasks([(task, extract_lineage(task, catalog))], catalog)
    return task.task_id


def _peak_mib() -> float:
    """This process's peak resident memory so far (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def run_size(tasks: int, args: argparse.Namespace) -> dict:
    """One warehouse of `tasks` tasks on its own servers: a full run, then one task changed and an incremental run."""
    work = Path(tempfile.mkdtemp(prefix="watershed-propagation-bench-"))
    falkordb = ServerSpec("falkordb", "127.0.0.1", free_port(), work / "falkordb", with_falkordb=True)
    redis = ServerSpec("redis", "127.0.0.1", free_port(), work / "redis", with_falkordb=False)
    start(falkordb)
    start(redis)
    os.environ["WATERSHED_CELERY_BROKER"] = f"redis://127.0.0.1:{redis.port}/0"
    workers = start_workers(args.workers, args.concurrency, redis.port, falkordb.port, work)
    spawn = multiprocessing.get_context("spawn")
    try:
        from watershed.graph.falkordb_store import FalkorDBStore
        from watershed.propagation.coordinator import Progress, celery_runner, propagate
        from watershed.propagation.graph_store import GraphTagStore
        from watershed.propagation.policy import default_policy
        from watershed.propagation.run_state import RunState
        from watershed.propagation.settings import PropagationSettings

        with spawn.Pool(1) as pool:
            prepared = pool.apply(_prepare, (str(work / "warehouse"), tasks, args.seed, falkordb.port))
        print(
            f"warehouse: {prepared['tasks']} tasks, {prepared['columns']} columns, "
            f"{prepared['column_edges']} column edges, {prepared['seeded_ods_tables']} ODS tables seeded "
            f"with app values ({prepared['load_seconds']:.0f} s to generate and load)",
            flush=True,
        )
        graph = FalkorDBStore("127.0.0.1", falkordb.port, graph="bench")
        policy = default_policy()
        tags = GraphTagStore(graph, policy)
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
        before_full = _peak_mib()
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
        after_full = _peak_mib()
        tagged = len(tags.tagged_nodes())
        tag_edges = graph.read("MATCH ()-[g:TAGGED {origin: 'propagated'}]->() RETURN count(g)")[0][0]

        with spawn.Pool(1) as pool:
            task_id = pool.apply(_change_one_task, (str(work / "warehouse"), falkordb.port))
        t0 = time.monotonic()
        incremental = propagate(
            graph, policy, state, runner, settings=settings, progress=progress, batch_size=args.batch_size
        )
        incremental_seconds = time.monotonic() - t0
        return {
            **prepared,
            "full": {
                "seconds": round(full_seconds, 2),
                "steps": full.steps,
                "columns_per_s": round(prepared["columns"] / full_seconds, 1),
                "nodes_processed": full.nodes_processed,
                "nodes_processed_per_s": round(full.nodes_processed / full_seconds, 1),
                "cone": full.cone,
                "layers": len(full.layers),
                "nodes_with_tags": tagged,
                "propagated_tag_edges": tag_edges,
                "tags_changed": full.tags_changed,
                # the coordinator's process: its peak before the run (imports, servers' clients) and after
                "peak_mib_before": before_full,
                "peak_mib_after": after_full,
            },
            "incremental": {
                "changed_task": task_id,
                "seconds": round(incremental_seconds, 2),
                "steps": incremental.steps,
                "nodes_touched": incremental.nodes_processed,
                "cone": incremental.cone,
                "layers": len(incremental.layers),
                "time_ratio_to_full": round(incremental_seconds / full_seconds, 4),
                "nodes_ratio_to_full": round(incremental.nodes_processed / max(full.nodes_processed, 1), 4),
            },
        }
    finally:
        for process in workers:
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(process.pid, signal.SIGKILL)
        stop(redis)
        stop(falkordb)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, nargs="+", default=[10000], help="warehouse sizes, in tasks")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--concurrency", type=int, default=2, help="pool processes per worker")
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--label", default="latest", help="the key the runs are kept under in --out")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "propagation_bench.json")
    args = parser.parse_args()

    runs = [run_size(tasks, args) for tasks in args.tasks]
    entry: dict = {
        "command": "python bench/propagation_bench.py " + " ".join(sys.argv[1:]),
        "machine": "shared with other helpers' work (2 cores): compare the sizes and labels of one file",
        "workers": args.workers,
        "concurrency": args.concurrency,
        "batch_size": args.batch_size,
        "runs": runs,
    }
    if len(runs) > 1:
        # how the one-task incremental run's time grows with the warehouse: time ~ columns ** exponent
        small, large = min(runs, key=lambda r: r["columns"]), max(runs, key=lambda r: r["columns"])
        size = math.log(large["columns"] / small["columns"])
        entry["incremental_exponent"] = round(
            math.log(large["incremental"]["seconds"] / small["incremental"]["seconds"]) / size, 2
        )
        entry["incremental_changes_exponent"] = round(
            math.log(
                max(large["incremental"]["steps"].get("changes", 0), 1e-3)
                / max(small["incremental"]["steps"].get("changes", 0), 1e-3)
            )
            / size,
            2,
        )
    print(json.dumps(entry, indent=2))
    kept = json.loads(args.out.read_text()) if args.out.exists() else {}
    if "runs" not in kept or not isinstance(kept["runs"], dict):
        kept = {"runs": {}}  # the file of one run per invocation this replaces
    kept["runs"][args.label] = entry
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(kept, indent=2) + "\n")


if __name__ == "__main__":
    main()
