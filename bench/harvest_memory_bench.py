"""The harvest driver's peak memory at two warehouse sizes, and its growth exponent (issue 41).

    .venv/bin/python bench/harvest_memory_bench.py [--sizes 100000,500000] [--label after]

For each size (warehouse columns; the generator makes about 46 per task) it generates a
warehouse, starts its own FalkorDB, and runs the harvest as bench/scale_bench.py's harvest stage
does (`Catalog.load` of the warehouse's catalog.json, then `run_harvest` on
`spark_session("local[2]")`, batches of 1,000) in a child process of its own, whose peak resident
set (VmHWM) is the driver's peak: `peak_mib`. `base_mib` is the same process's resident set just
before `Catalog.load` (Python, pyspark and the Spark session's gateway), `harvest_mib` the peak
above it: what the harvest's own structures cost. The exponents are
log(m_big/m_small)/log(n_big/n_small) over warehouse columns, for both.

The graph's counts after each harvest (tasks, column and edge totals) are kept beside the
memory, so two runs of the same sizes (`--label before` on the old code, `--label after`) show
that the graph came out the same. Results merge into bench/results/harvest_memory_bench.json
under the label, with the command. Nothing here asserts anything; the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import math
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

RESULTS = REPO / "bench" / "results" / "harvest_memory_bench.json"
#: warehouse columns per generated task (as bench/scale_bench.py)
COLUMNS_PER_TASK = 46


def status_mib(field: str) -> float:
    """This process's `VmHWM` (peak) or `VmRSS` (current) resident set in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"/proc/self/status has no {field}")


def stage(config: dict) -> dict:
    """The child: one harvest of the warehouse into the running FalkorDB; its memory and counts."""
    from watershed.graph.catalog import Catalog
    from watershed.graph.falkordb_store import FalkorDBStore
    from watershed.ingest.harvest import run_harvest, spark_session

    warehouse = Path(config["warehouse"])
    store = FalkorDBStore("127.0.0.1", config["port"], graph="bench")
    store.ensure_schema()
    spark = spark_session("local[2]")
    try:
        base = status_mib("VmRSS")
        began = time.monotonic()
        report = run_harvest(
            spark,
            tasks=str(warehouse / "tasks"),
            catalog=Catalog.load(warehouse / "catalog.json"),
            store=store,
            out_dir=Path(config["work"]) / "harvest",
            batch_size=1000,
            progress=lambda _line: None,
        )
        seconds = time.monotonic() - began
        peak = status_mib("VmHWM")
    finally:
        spark.stop()
    counts = {
        name: store.read(query)[0][0]
        for name, query in (
            ("tasks", "MATCH (t:Task) RETURN count(t)"),
            ("tables", "MATCH (t:Table) RETURN count(t)"),
            ("columns", "MATCH (c:Column) RETURN count(c)"),
            ("column_edges", "MATCH (:Column)-[e:FLOWS_TO]->(:Column) RETURN count(e)"),
            ("weak_edges", "MATCH (:Column)-[e:INFLUENCES]->(:Table) RETURN count(e)"),
        )
    }
    return {
        "peak_mib": peak,
        "base_mib": base,
        "harvest_mib": round(peak - base, 1),
        "seconds": round(seconds, 1),
        "tasks": report.tasks,
        "loaded": report.loaded,
        "tasks_with_errors": report.tasks_with_errors,
        "statement_errors": report.statement_errors,
        "graph": counts,
    }


def run_size(columns: int, work: Path, seed: int) -> dict:
    from watershed.graph.server import ServerSpec, free_port, start, stop
    from watershed.ingest.generator import generate_warehouse

    tasks = max(20, round(columns / COLUMNS_PER_TASK))
    here = work / str(columns)
    summary = generate_warehouse(here / "warehouse", tasks=tasks, seed=seed)
    spec = ServerSpec("falkordb", "127.0.0.1", free_port(), here / "var", with_falkordb=True)
    start(spec)
    try:
        config = {"warehouse": str(here / "warehouse"), "work": str(here), "port": spec.port}
        done = subprocess.run(
            [sys.executable, __file__, "--stage", json.dumps(config)],
            capture_output=True,
            text=True,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
            },
        )
    finally:
        stop(spec)
    found = [line for line in done.stdout.splitlines() if line.startswith("STAGE-RESULT ")]
    if done.returncode != 0 or not found:
        raise RuntimeError(f"the harvest at {columns} columns failed: {done.stderr[-2000:]}")
    result = json.loads(found[-1].removeprefix("STAGE-RESULT "))
    result["warehouse"] = {"tables": summary.tables, "columns": summary.columns, "tasks": tasks}
    print(f"  {columns} columns: {json.dumps(result)}", flush=True)
    return result


def exponent(small: dict, big: dict, key: str) -> float:
    n_small, n_big = small["warehouse"]["columns"], big["warehouse"]["columns"]
    return round(math.log(big[key] / small[key]) / math.log(n_big / n_small), 2)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100000,500000", help="warehouse columns, comma-separated")
    parser.add_argument("--label", default="after", help="the name this run's numbers are kept under")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        print("STAGE-RESULT " + json.dumps(stage(json.loads(args.stage))), flush=True)
        return
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="harvest-memory-bench-") as scratch:
        results = {str(size): run_size(size, Path(scratch), args.seed) for size in sizes}
    run = {
        "command": "bench/harvest_memory_bench.py " + " ".join(sys.argv[1:]),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
        ).stdout.strip(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared with other work)",
        "sizes": results,
    }
    if len(sizes) >= 2:
        small, big = results[str(sizes[0])], results[str(sizes[-1])]
        run["exponents"] = {key: exponent(small, big, key) for key in ("peak_mib", "harvest_mib")}
    print(json.dumps({k: v for k, v in run.items() if k != "sizes"}), flush=True)
    merged = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    merged[args.label] = run
    RESULTS.write_text(json.dumps(merged, indent=2) + "\n")


if __name__ == "__main__":
    main()
