"""End-to-end harvest of a generated warehouse on Spark local[2]: tasks/s for extraction and for loading.

    .venv/bin/python bench/harvest_bench.py [--tasks 10000] [--seed 7] [--master local[2]] [--ttl]

Generates the warehouse, starts its own FalkorDB on a free port, harvests the
`.sql` directory with Spark, and reports extraction and loading rates
separately (the loading time is the driver's time inside GraphStore writes).
With `--ttl` it then runs the TTL advisor over the loaded graph and reports
its time and how many columns got a TTL shorter than their table's.
Results go to bench/results/harvest_bench.json.
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

from watershed.graph.catalog import Catalog  # noqa: E402
from watershed.graph.falkordb_store import FalkorDBStore  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402
from watershed.ingest.generator import generate_warehouse  # noqa: E402
from watershed.ingest.harvest import run_harvest, spark_session  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=10_000)
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
            spark = spark_session(args.master)
            catalog = Catalog.load(root / "warehouse" / "catalog.json")
            report = run_harvest(
                spark,
                tasks=str(root / "warehouse" / "tasks"),
                catalog=catalog,
                store=store,
                out_dir=root / "harvest",
                batch_size=1000,
                progress=lambda _line: None,
            )
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
        finally:
            stop(spec)

    result = {
        "tasks": report.tasks,
        "master": args.master,
        "generate_seconds": generate_seconds,
        "extract_seconds": report.extract_seconds,
        "load_seconds": report.load_seconds,
        "extract_tasks_per_s": report.tasks / report.extract_seconds if report.extract_seconds else None,
        "load_tasks_per_s": report.loaded / report.load_seconds if report.load_seconds else None,
        "tasks_with_errors": report.tasks_with_errors,
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
