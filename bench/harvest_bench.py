"""End-to-end harvest of a generated warehouse on Spark local[2]: tasks/s for extraction and for loading.

    .venv/bin/python bench/harvest_bench.py [--tasks 4000] [--seed 7] [--master local[2]] [--ttl]

Generates the warehouse, starts its own FalkorDB on a free port, harvests the
`.sql` directory with Spark, and reports extraction and loading rates
separately (the loading time is the driver's time inside GraphStore writes).
With `--ttl` it then runs the TTL advisor over the loaded graph and reports
its time and how many columns got a TTL shorter than their table's.
It also extracts the corpus in this one process and prints
`spark_over_inprocess_per_core`: Spark's seconds per task per executor core (plus the
driver's decoding) over in-process seconds per task, target 1.3; the same in CPU seconds
(`spark_over_inprocess_cpu`, steadier on a shared machine), and both again for a second
extraction on the already warm workers.
Results go to bench/results/harvest_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from watershed.graph.catalog import Catalog  # noqa: E402
from watershed.graph.falkordb_store import FalkorDBStore  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402
from watershed.ingest.extract import extract_lineage  # noqa: E402
from watershed.ingest.generator import generate_warehouse  # noqa: E402
from watershed.ingest.harvest import run_harvest, spark_session  # noqa: E402
from watershed.ingest.settings import IngestSettings  # noqa: E402
from watershed.ingest.sources import read_task_source  # noqa: E402

#: the issue's target: Spark's extraction per core at most this many times slower than in-process
TARGET_RATIO = 1.3


def in_process_seconds(tasks_dir: Path, catalog: Catalog) -> tuple[int, float, float]:
    """extract_lineage over the corpus in this one process (one core): tasks, wall and CPU seconds."""
    tasks = [item.task for item in read_task_source(tasks_dir, [])]
    settings = IngestSettings()
    began, began_cpu = time.monotonic(), time.process_time()
    for task in tasks:
        extract_lineage(task, catalog, settings)
    return len(tasks), time.monotonic() - began, time.process_time() - began_cpu


def spark_cpu_seconds(skip: tuple[str, ...] = ("redis", "falkordb")) -> float:
    """CPU seconds (user + system) of this process's descendants -- Spark's JVM, its Python daemon
    and workers -- but not the graph server's. Linux /proc; the machine is shared, so CPU time
    compares the two paths where wall time mostly measures the neighbours' load."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if any(word in command for word in skip):
            continue
        parents[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    mine = os.getpid()

    def descends(pid: int) -> bool:
        while pid in parents and pid > 1:
            pid = parents[pid]
            if pid == mine:
                return True
        return False

    return sum(seconds for pid, seconds in cpu.items() if descends(pid))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--ttl", action="store_true", help="also time the TTL advisor on the loaded graph")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        began = time.monotonic()
        summary = generate_warehouse(root / "warehouse", tasks=args.tasks, seed=args.seed)
        generate_seconds = time.monotonic() - began
        spec = ServerSpec("falkordb", "127.0.0.1", free_port(), root / "var", with_falkordb=True)
        start(spec)
        try:
            store = FalkorDBStore(spec.host, spec.port, graph="bench")
            store.ensure_schema()
            catalog = Catalog.load(root / "warehouse" / "catalog.json")
            # In-process first, before Spark's JVM and workers share the cores.
            inprocess_tasks, inprocess_seconds, inprocess_cpu = in_process_seconds(
                root / "warehouse" / "tasks", catalog
            )
            spark = spark_session(args.master)
            cores = spark.sparkContext.defaultParallelism

            def harvest(graph, out: str):
                """A harvest of the corpus and the CPU seconds Spark's processes spent on it."""
                cpu_before = spark_cpu_seconds()
                done = run_harvest(
                    spark,
                    tasks=str(root / "warehouse" / "tasks"),
                    catalog=catalog,
                    store=graph,
                    out_dir=root / out,
                    batch_size=1000,
                    progress=lambda _line: None,
                )
                return done, spark_cpu_seconds() - cpu_before

            report, spark_cpu = harvest(store, "harvest")
            # Once more without a graph, on the warm workers: the per-task cost without start-up.
            warm, warm_cpu = harvest(None, "harvest-warm")
            stats = store.stats()
            ttl = None
            if args.ttl:
                from watershed.ttl_advisor.advisor import advise
                from watershed.ttl_advisor.graph_uses import catalog_from_graph, index_graph

                ttl_began = time.monotonic()
                graph_catalog = catalog_from_graph(store)
                recommendations = advise(index_graph(store, graph_catalog), graph_catalog)
                ttl = {
                    "seconds": time.monotonic() - ttl_began,
                    "columns": len(recommendations),
                    "with_ttl": sum(1 for r in recommendations if r.status == "ttl"),
                    "shorter_than_table": sum(1 for r in recommendations if r.shorter_than_table),
                    "keep": sum(1 for r in recommendations if r.status == "keep"),
                    "unused": sum(1 for r in recommendations if r.status == "unused"),
                }
            spark.stop()
            # ... and again after it: the machine's load drifts, the mean of both compares fairer
            _, again, again_cpu = in_process_seconds(root / "warehouse" / "tasks", catalog)
            inprocess_seconds = (inprocess_seconds + again) / 2
            inprocess_cpu = (inprocess_cpu + again_cpu) / 2
        finally:
            stop(spec)

    # Seconds of one core per task: the executors' extraction times the cores they had, plus
    # the driver's decoding of their rows (what the in-process path never pays).
    inprocess_per_task = inprocess_seconds / inprocess_tasks
    spark_per_task = (report.extract_seconds * cores + report.decode_seconds) / report.tasks
    ratio = spark_per_task / inprocess_per_task
    # The same in CPU seconds: Spark's processes during the harvest plus the driver's decoding.
    cpu_ratio = (spark_cpu + report.decode_seconds) / report.tasks / (inprocess_cpu / inprocess_tasks)
    warm_ratio = (warm.extract_seconds * cores + warm.decode_seconds) / warm.tasks / inprocess_per_task
    warm_cpu_ratio = (warm_cpu + warm.decode_seconds) / warm.tasks / (inprocess_cpu / inprocess_tasks)
    result = {
        "tasks": report.tasks,
        "master": args.master,
        "generate_seconds": generate_seconds,
        "extract_seconds": report.extract_seconds,
        "load_seconds": report.load_seconds,
        "extract_tasks_per_s": report.tasks / report.extract_seconds if report.extract_seconds else None,
        "load_tasks_per_s": report.loaded / report.load_seconds if report.load_seconds else None,
        "tasks_with_errors": report.tasks_with_errors,
        "executor_cores": cores,
        "decode_seconds": report.decode_seconds,
        "inprocess_seconds": inprocess_seconds,
        "inprocess_tasks_per_s": inprocess_tasks / inprocess_seconds,
        "spark_tasks_per_s_per_core": 1 / spark_per_task,
        "spark_over_inprocess_per_core": ratio,
        "spark_over_inprocess_target": TARGET_RATIO,
        "inprocess_cpu_seconds": inprocess_cpu,
        "spark_cpu_seconds": spark_cpu,
        "spark_over_inprocess_cpu": cpu_ratio,
        "warm_extract_seconds": warm.extract_seconds,
        "warm_decode_seconds": warm.decode_seconds,
        "warm_spark_over_inprocess_per_core": warm_ratio,
        "warm_spark_over_inprocess_cpu": warm_cpu_ratio,
        "graph": stats.model_dump(),
        "warehouse": summary.__dict__,
        "ttl": ttl,
    }
    print(
        f"warehouse: {summary.tasks} tasks, {summary.tables} tables, {summary.columns} columns ({generate_seconds:.1f} s)"
    )
    print(
        f"extraction: {result['extract_tasks_per_s']:.0f} tasks/s ({report.extract_seconds:.1f} s on {args.master})"
    )
    print(
        f"loading:    {result['load_tasks_per_s']:.0f} tasks/s ({report.load_seconds:.1f} s; {stats.column_edges} FLOWS_TO edges)"
    )
    print(
        f"per core:   in-process {result['inprocess_tasks_per_s']:.0f} tasks/s, Spark "
        f"{result['spark_tasks_per_s_per_core']:.0f} tasks/s ({cores} cores, driver decode "
        f"{report.decode_seconds:.1f} s): spark_over_inprocess_per_core {ratio:.2f} (target {TARGET_RATIO})"
    )
    print(
        f"cpu:        in-process {inprocess_cpu:.1f} s, Spark's processes {spark_cpu:.1f} s + driver decode: "
        f"spark_over_inprocess_cpu {cpu_ratio:.2f} (target {TARGET_RATIO})"
    )
    print(
        f"warm:       a second extraction on the same workers: spark_over_inprocess_per_core "
        f"{warm_ratio:.2f}, spark_over_inprocess_cpu {warm_cpu_ratio:.2f}"
    )
    print(f"errors: {report.tasks_with_errors} tasks with errors")
    if ttl:
        print(
            f"ttl advise: {ttl['columns']} columns in {ttl['seconds']:.1f} s; {ttl['with_ttl']} with a TTL, "
            f"{ttl['shorter_than_table']} shorter than their table's, {ttl['keep']} keep, {ttl['unused']} unused"
        )
    out = ROOT / "bench" / "results" / "harvest_bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(f"results written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
