"""A whole-warehouse discovery against the harvest of the same warehouse, in the same run.

    .venv/bin/python bench/discover_warehouse_bench.py [--tasks 500] [--seed 7] [--content-tables 3]
        [--data-tables 0] [--master local[2]]

Generates the demo's warehouse (`watershed demo`: 500 tasks, seed 7, three ODS tables and the DWD
tables cleaned from them holding discovery content; `--data-tables N` gives N more ODS tables 30 ORC
partitions each), starts its own FalkorDB on a free port and Spark on `--master`, then times:
- the harvest: `run_harvest` of the task directory into the graph, as the demo does it (the
  application's first harvest, its Python workers starting included: what a nightly pays);
- discovery of the whole warehouse, as the nightly with `discovery_derived` does it: every table
  with a location, roots and derived ones (their leak and over-tag flags, whose paths back are
  graph reads), `force` so every table is read: in this process (`discover_seconds`), then once
  more with every table routed to the same Spark session (`discovery_spark_min_bytes=1`,
  `spark_discover_seconds`).
The issue's target: a whole-warehouse discovery within 2x the harvest's time
(`discover_over_harvest` <= 2). Wall-clock seconds on a shared machine: read the ratios.
Results go to bench/results/discover_warehouse_bench.json, one entry per command line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from watershed.api.service.discovery import discover  # noqa: E402
from watershed.discovery.settings import DiscoverySettings  # noqa: E402
from watershed.graph.catalog import Catalog  # noqa: E402
from watershed.graph.falkordb_store import FalkorDBStore  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402
from watershed.ingest.generator import generate_warehouse  # noqa: E402
from watershed.ingest.harvest import run_harvest, spark_session  # noqa: E402
from watershed.propagation.policy import default_policy  # noqa: E402

TARGET_RATIO = 2.0


def summary(run) -> dict:
    statuses = [t.status for t in run.tables]
    return {
        "tables": len(run.tables),
        "sampled": statuses.count("sampled"),
        "skipped": statuses.count("skipped"),
        "files": sum(t.files for t in run.tables),
        "rows": sum(t.rows for t in run.tables),
        "values": run.values,
        "proposed": run.proposed,
        "flagged": run.flagged,
        "on_spark": sum(t.sampled_on == "spark" for t in run.tables),
        "errors": sum(len(t.errors) for t in run.tables),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--content-tables", type=int, default=3)
    parser.add_argument("--data-tables", type=int, default=0)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    policy = default_policy()

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        warehouse = root / "warehouse"
        generated = generate_warehouse(
            warehouse,
            tasks=args.tasks,
            seed=args.seed,
            content_tables=args.content_tables,
            data_tables=args.data_tables,
        )
        catalog = Catalog.load(warehouse / "catalog.json")
        spec = ServerSpec("falkordb", "127.0.0.1", free_port(), root / "var", with_falkordb=True)
        start(spec)
        try:
            store = FalkorDBStore(spec.host, spec.port, graph="bench")
            store.ensure_schema()
            spark = spark_session(args.master)
            began = time.monotonic()
            report = run_harvest(
                spark,
                tasks=str(warehouse / "tasks"),
                catalog=catalog,
                store=store,
                out_dir=root / "harvest",
                progress=lambda _line: None,
            )
            harvest_seconds = time.monotonic() - began

            began = time.monotonic()
            local = discover(store, policy, DiscoverySettings(), derived=True, force=True)
            discover_seconds = time.monotonic() - began

            began = time.monotonic()
            on_spark = discover(
                store,
                policy,
                DiscoverySettings(discovery_spark_min_bytes=1),
                derived=True,
                force=True,
                spark=spark,
            )
            spark_discover_seconds = time.monotonic() - began
            stats = store.stats()
        finally:
            stop(spec)

    result = {
        "command": "bench/discover_warehouse_bench.py " + " ".join(sys.argv[1:]),
        "tasks": generated.tasks,
        "tables": stats.tables,
        "columns": stats.columns,
        "harvest_tasks_with_errors": report.tasks_with_errors,
        "harvest_seconds": round(harvest_seconds, 2),
        "discover_seconds": round(discover_seconds, 2),
        "spark_discover_seconds": round(spark_discover_seconds, 2),
        "discover_over_harvest": round(discover_seconds / harvest_seconds, 3),
        "spark_discover_over_harvest": round(spark_discover_seconds / harvest_seconds, 3),
        "target_ratio": TARGET_RATIO,
        "discover": summary(local),
        "spark_discover": summary(on_spark),
    }
    print(
        f"warehouse: {generated.tasks} tasks, {stats.tables} tables, {stats.columns} columns; "
        f"{result['discover']['sampled']} tables with files"
    )
    print(f"harvest: {harvest_seconds:.1f} s")
    print(
        f"discovery of the whole warehouse in process: {discover_seconds:.1f} s "
        f"({result['discover']['values']} values, {local.proposed} proposed, {local.flagged} flagged): "
        f"{result['discover_over_harvest']:.2f}x the harvest (target <= {TARGET_RATIO:.0f}x)"
    )
    print(
        f"the same on Spark: {spark_discover_seconds:.1f} s "
        f"({result['spark_discover']['values']} values, {on_spark.proposed} proposed): "
        f"{result['spark_discover_over_harvest']:.2f}x the harvest"
    )
    # one entry per command: the demo's warehouse and a larger one kept side by side
    out = ROOT / "bench" / "results" / "discover_warehouse_bench.json"
    runs = json.loads(out.read_text()) if out.exists() else {}
    runs[result["command"]] = result
    out.write_text(json.dumps(runs, indent=2) + "\n")
    print(f"results in {out}")


if __name__ == "__main__":
    main()
