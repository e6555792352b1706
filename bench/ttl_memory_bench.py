"""TTL advice's memory: the whole graph in one process (the old path) against table batches.

    .venv/bin/python bench/ttl_memory_bench.py [--tasks 3000] [--seed 7] [--batches 50,200,500,2000]

Generates a warehouse (`generate_warehouse`, ORC data for a few ODS tables), starts its own
FalkorDB on a free port, loads the warehouse in this process (extract_lineage + upsert_tasks),
then runs each path in a fresh Python process (this script with `--path`), so each one's peak
RSS (VmHWM) is its own:

- `whole`: what `advise_and_store` did before issue 16: catalog_from_graph + index_graph,
  advise every column in one list, store them all;
- `batched`: `ttl_advisor.batches.store_advice` with `ttl_batch_tables` = each of --batches.

Printed and written to bench/results/ttl_memory_bench.json: each path's peak RSS, its RSS after
imports (the interpreter and libraries, the same for both), the peak above that, seconds, and
CPU seconds of the path's process plus the graph server's during it (steadier than wall time
on a shared machine), and the ratios batched/whole (memory above imports; seconds; CPU seconds).
Nothing asserts a timing.

Incremental against full (issue 41):

    .venv/bin/python bench/ttl_memory_bench.py --incremental 2150,10700 [--seed 7]

For each task count (about 46 columns a task: 100k and 500k columns), a warehouse of its own is
generated and loaded, then, each in a fresh process: a full run (`store_advice(full=True)`), a
one-task change (one task reloaded with another partition window, as a redeployed task is), the
incremental run that follows (`store_advice`), and a second full run (the machine is shared: it
shows the drift). Written to bench/results/ttl_incremental_bench.json with the command: each
run's seconds, CPU, peak memory and tables advised, the ratio incremental/full per size, and the
size exponent of each (log time ratio / log columns ratio between the two sizes).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.scale_bench import status_kib  # noqa: E402

RESULTS = REPO / "bench" / "results" / "ttl_memory_bench.json"
INCREMENTAL_RESULTS = REPO / "bench" / "results" / "ttl_incremental_bench.json"


def whole_graph_advice(store, settings, run_id: str):
    """The advice as it was before batches: every table and edge read at once, advised in one list,
    stored in one go; its counts (the tests' reference too)."""
    from watershed.ttl_advisor.advisor import advise
    from watershed.ttl_advisor.graph_uses import catalog_from_graph, index_graph
    from watershed.ttl_advisor.model import AdviceCounts
    from watershed.ttl_advisor.sizes import OrcSizeEstimator
    from watershed.ttl_advisor.store import store_recommendations

    catalog = catalog_from_graph(store)
    recommendations = advise(
        index_graph(store, catalog),
        catalog,
        settings=settings,
        estimate=OrcSizeEstimator(catalog, settings.ttl_sample_files),
    )
    store_recommendations(store, recommendations, run_id)
    counts = AdviceCounts()
    counts.add(recommendations)
    return counts


def run_path(path: str, port: int, graph: str, batch_tables: int) -> dict:
    """One path in this process (the `--path` entry); its result as a dict."""
    # what both paths import on their way (the ORC sampler's pyarrow) counts as imports, not as lineage
    import pyarrow.orc  # noqa: F401

    from watershed.graph.falkordb_store import FalkorDBStore
    from watershed.ttl_advisor.batches import store_advice
    from watershed.ttl_advisor.settings import AdvisorSettings

    store = FalkorDBStore("127.0.0.1", port, graph=graph)
    store.ping()
    # FalkorDB runs one query at a time: no write commits after a run read the clock (no margin)
    settings = AdvisorSettings(ttl_batch_tables=batch_tables, ttl_clock_margin_seconds=0)
    baseline = status_kib("VmRSS") or 0
    began, began_cpu = time.monotonic(), time.process_time()
    extra: dict = {}
    if path == "whole":
        counts = whole_graph_advice(store, settings, f"bench-{path}")
    elif path in ("full", "incremental"):
        done = store_advice(store, f"bench-{path}", settings, full=path == "full")
        counts, extra = done.counts, {"mode": done.mode, "tables_advised": done.tables}
    else:
        counts = store_advice(store, f"bench-{path}-{batch_tables}", settings, full=True).counts
    seconds, cpu = time.monotonic() - began, time.process_time() - began_cpu
    store.close()
    peak = status_kib("VmHWM") or 0
    return {
        "seconds": round(seconds, 2),
        "client_cpu_seconds": round(cpu, 2),
        "peak_mib": round(peak / 1024, 1),
        "after_imports_mib": round(baseline / 1024, 1),
        "peak_above_imports_mib": round((peak - baseline) / 1024, 1),
        **counts.model_dump(),
        **extra,
    }


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def in_child(path: str, port: int, graph: str, batch_tables: int, server_pid: int) -> dict:
    server_before = cpu_seconds(server_pid)
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--path",
            path,
            "--port",
            str(port),
            "--graph",
            graph,
            "--batch",
            str(batch_tables),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    if done.returncode != 0:
        raise SystemExit(f"{path} ({batch_tables}) failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    # the graph server's share: many small queries cost it more than a few big ones
    result["server_cpu_seconds"] = round(cpu_seconds(server_pid) - server_before, 2)
    result["cpu_seconds"] = round(result["client_cpu_seconds"] + result["server_cpu_seconds"], 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--batches", default="50,200,500,2000", help="ttl_batch_tables values to run")
    parser.add_argument(
        "--incremental", help="task counts (comma-separated): time full against incremental runs"
    )
    parser.add_argument("--path", choices=["whole", "batched", "full", "incremental"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--graph", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, default=500, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.path:
        print(json.dumps(run_path(args.path, args.port, args.graph, args.batch)), flush=True)
        return
    if args.incremental:
        incremental_main([int(n) for n in args.incremental.split(",")], args.seed)
        return

    sizes = [int(size) for size in args.batches.split(",")]
    with loaded_warehouse(args.tasks, args.seed) as (
        summary,
        _,
        store,
        load_seconds,
        port,
        server_pid,
    ):
        stats = store.stats()
        store.close()
        runs = {"whole": in_child("whole", port, "ttl_bench", 1, server_pid)}
        for size in sizes:
            runs[f"batched_{size}"] = in_child("batched", port, "ttl_bench", size, server_pid)
        # once more: the machine is shared, a second whole run shows how much its time drifts
        runs["whole_again"] = in_child("whole", port, "ttl_bench", 1, server_pid)

    whole = runs["whole"]
    whole_seconds = (whole["seconds"] + runs["whole_again"]["seconds"]) / 2
    whole_cpu = (whole["cpu_seconds"] + runs["whole_again"]["cpu_seconds"]) / 2
    for name, run in runs.items():
        if name.startswith("batched"):
            run["memory_ratio"] = round(run["peak_above_imports_mib"] / whole["peak_above_imports_mib"], 3)
            run["seconds_ratio"] = round(run["seconds"] / whole_seconds, 3)
            run["cpu_ratio"] = round(run["cpu_seconds"] / whole_cpu, 3)
            assert run["columns"] == whole["columns"] and run["ttl"] == whole["ttl"], (name, run, whole)
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "tasks": args.tasks,
        "warehouse": summary.__dict__,
        "graph": stats.model_dump(),
        "load_seconds": round(load_seconds, 1),
        "runs": runs,
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"warehouse: {summary.tasks} tasks, {summary.tables} tables, {summary.columns} columns")
    for name, run in runs.items():
        ratios = (
            f"  memory x{run['memory_ratio']}, seconds x{run['seconds_ratio']}, cpu x{run['cpu_ratio']}"
            if "memory_ratio" in run
            else ""
        )
        print(
            f"{name:>14}: peak {run['peak_mib']:7.1f} MiB ({run['peak_above_imports_mib']:7.1f} above imports), "
            f"{run['seconds']:6.1f} s (cpu {run['cpu_seconds']:.1f} s), {run['columns']} columns{ratios}"
        )


@contextlib.contextmanager
def loaded_warehouse(tasks: int, seed: int):
    """A generated warehouse of `tasks` tasks loaded into a FalkorDB of its own (stopped and
    deleted on leaving): (its summary, its directory, a store on it, the load's seconds, the port, the server's pid)."""
    from bench.propagation_bench import load_generated
    from watershed.graph.falkordb_store import FalkorDBStore
    from watershed.graph.server import ServerSpec, free_port, start, stop
    from watershed.ingest.generator import generate_warehouse

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        summary = generate_warehouse(root / "warehouse", tasks=tasks, seed=seed, data_tables=4)
        spec = ServerSpec("falkordb", "127.0.0.1", free_port(), root / "var", with_falkordb=True)
        server_pid = start(spec)
        try:
            store = FalkorDBStore(spec.host, spec.port, graph="ttl_bench")
            store.ensure_schema()
            began = time.monotonic()
            load_generated(store, root / "warehouse")
            yield summary, root / "warehouse", store, time.monotonic() - began, spec.port, server_pid
        finally:
            stop(spec)


def change_one_task(store, directory: Path) -> str:
    """Reload one generated task with a wider partition window (or, when none has a window, with a
    comment: a redeployed task); its id."""
    import re

    from watershed.graph.catalog import Catalog
    from watershed.ingest.extract import extract_lineage
    from watershed.ingest.sources import read_jsonl

    catalog = Catalog.load(directory / "catalog.json")
    tasks = [located.task for located in read_jsonl(directory / "tasks.jsonl", [])]
    window = re.compile(r"date_sub\('\$\{date\}', (\d+)\)")
    task = next((t for t in tasks if window.search(t.sql)), tasks[len(tasks) // 2])
    sql = window.sub(lambda m: f"date_sub('${{date}}', {int(m.group(1)) + 7})", task.sql, count=1)
    changed = task.model_copy(
        update={"sql": sql if sql != task.sql else f"-- redeployed\n{task.sql}", "version": None}
    )
    store.upsert_tasks([(changed, extract_lineage(changed, catalog))], catalog)
    return task.task_id


def incremental_main(task_counts: list[int], seed: int) -> None:
    """Full and incremental runs after a one-task change, at each task count (see the docstring)."""

    sizes = []
    for tasks in task_counts:
        with loaded_warehouse(tasks, seed) as (summary, warehouse, store, load_seconds, port, server_pid):
            runs = {"full": in_child("full", port, "ttl_bench", 100, server_pid)}
            changed = change_one_task(store, warehouse)
            store.close()
            runs["incremental"] = in_child("incremental", port, "ttl_bench", 100, server_pid)
            runs["full_again"] = in_child("full", port, "ttl_bench", 100, server_pid)
        full_seconds = (runs["full"]["seconds"] + runs["full_again"]["seconds"]) / 2
        sizes.append(
            {
                "tasks": tasks,
                "columns": summary.columns,
                "tables": summary.tables,
                "load_seconds": round(load_seconds, 1),
                "changed_task": changed,
                "runs": runs,
                "incremental_over_full_seconds": round(runs["incremental"]["seconds"] / full_seconds, 4),
                "incremental_over_full_cpu": round(
                    runs["incremental"]["cpu_seconds"]
                    / ((runs["full"]["cpu_seconds"] + runs["full_again"]["cpu_seconds"]) / 2),
                    4,
                ),
            }
        )
        print(
            f"{summary.columns} columns ({summary.tables} tables): full {full_seconds:.1f} s, incremental "
            f"{runs['incremental']['seconds']:.2f} s ({runs['incremental']['tables_advised']} tables, "
            f"peak {runs['incremental']['peak_mib']} MiB against {runs['full']['peak_mib']}), "
            f"ratio {sizes[-1]['incremental_over_full_seconds']}",
            flush=True,
        )
        write_incremental(task_counts, seed, sizes)


def write_incremental(task_counts: list[int], seed: int, sizes: list[dict]) -> None:
    """The results so far (after each size: a long run cut short keeps its smaller sizes)."""
    import math

    exponents = {}
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        scale = math.log(large["columns"] / small["columns"])
        for name in ("full", "incremental"):
            a, b = small["runs"][name]["seconds"], large["runs"][name]["seconds"]
            exponents[name] = round(math.log(b / a) / scale, 2) if a > 0 and b > 0 else None
        print(f"size exponent of seconds: full {exponents['full']}, incremental {exponents['incremental']}")
    INCREMENTAL_RESULTS.write_text(
        json.dumps(
            {
                "command": "bench/ttl_memory_bench.py --incremental "
                + ",".join(str(n) for n in task_counts)
                + f" --seed {seed}",
                "machine": f"{platform.machine()}, {os.cpu_count()} cores, shared with other work",
                "batch_tables": 100,
                "sizes": sizes,
                "seconds_exponent": exponents,
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
