"""FalkorDB load rate and lineage query latency on a synthetic layered column graph.

    .venv/bin/python bench/graph_bench.py [--columns 200000] [--starts 200] [--depth 10]

Builds `--columns` columns in 8 layers (each table reads one or two
neighbouring tables of the layer below, each column is fed by one or two of
their columns; one task per target table), loads them through the GraphStore
in batches, and reports FLOWS_TO edges/s. Then, for `--starts` random columns,
times the depth-limited upstream and downstream queries that return the whole
subgraph with properties, against a bare Cypher count over the same traversal
from the same column, in the same run; prints medians, p99s and their ratio.
Starts its own FalkorDB on a free port; results go to bench/results/.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from watershed.graph import queries  # noqa: E402
from watershed.graph.catalog import Catalog, CatalogColumn, CatalogTable  # noqa: E402
from watershed.graph.falkordb_store import FalkorDBStore  # noqa: E402
from watershed.graph.lineage import ColumnLineage, SourceColumn, SqlTask, TableEdge, TableRead, TaskLineage  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402

LAYERS = 8
COLUMNS_PER_TABLE = 40


def synthetic_tasks(columns: int, seed: int, fan_in: int = 2) -> list[tuple[SqlTask, TaskLineage]]:
    rng = random.Random(seed)
    tables_per_layer = max(1, math.ceil(columns / (LAYERS * COLUMNS_PER_TABLE)))
    layers = [[f"l{layer}.t{i}" for i in range(tables_per_layer)] for layer in range(LAYERS)]
    items = []
    for layer in range(1, LAYERS):
        for position, table in enumerate(layers[layer]):
            # Locality, as in a real warehouse: a table reads one or two neighbours of its own domain.
            below = layers[layer - 1]
            neighbourhood = below[max(0, position - 2) : position + 3] or below
            sources = rng.sample(neighbourhood, min(rng.randint(1, 2), len(neighbourhood)))
            column_lineage = []
            for c in range(COLUMNS_PER_TABLE):
                picks = [
                    SourceColumn(
                        column=f"{rng.choice(sources)}.c{rng.randrange(COLUMNS_PER_TABLE)}",
                        kind=rng.choice(["direct", "expression", "aggregate"]),
                        functions=["upper"] if rng.random() < 0.3 else [],
                    )
                    for _ in range(rng.randint(1, fan_in))
                ]
                column_lineage.append(ColumnLineage(target=f"{table}.c{c}", sources=picks))
            task_id = f"task_{table}"
            lineage = TaskLineage(
                task_id=task_id,
                dialect="hive",
                version="1",
                reads=[
                    TableRead(table=s, partition_window_days=rng.choice([1, 7, 30, None])) for s in sources
                ],
                writes=[table],
                columns=column_lineage,
                table_edges=[TableEdge(source=s, target=table) for s in sources],
            )
            items.append((SqlTask(task_id=task_id, sql=f"-- synthetic {table}", version="1"), lineage))
    return items


def synthetic_catalog(items: list[tuple[SqlTask, TaskLineage]], columns: int) -> Catalog:
    """Every table of the layers with all its columns (also the unread ones of layer 0)."""
    tables_per_layer = max(1, math.ceil(columns / (LAYERS * COLUMNS_PER_TABLE)))
    names = [f"l{layer}.t{i}" for layer in range(LAYERS) for i in range(tables_per_layer)]
    return Catalog(
        tables={
            name: CatalogTable(
                name=name,
                columns=[CatalogColumn(name=f"c{c}", type="string") for c in range(COLUMNS_PER_TABLE)],
                layer=name.split(".")[0],
            )
            for name in names
        }
    )


def timed(fn) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--columns", type=int, default=200_000)
    parser.add_argument("--starts", type=int, default=200)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--batch", type=int, default=10000, help="rows per UNWIND statement")
    parser.add_argument("--tasks-per-load", type=int, default=1000, help="tasks per upsert_tasks call")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--fan-in", type=int, default=2, help="most source columns per written column (denser lineage)"
    )
    args = parser.parse_args()

    items = synthetic_tasks(args.columns, args.seed, args.fan_in)
    edges = sum(len(c.sources) for _, lineage in items for c in lineage.columns)
    with tempfile.TemporaryDirectory() as data:
        spec = ServerSpec("falkordb", "127.0.0.1", free_port(), Path(data), with_falkordb=True)
        start(spec)
        try:
            store = FalkorDBStore(spec.host, spec.port, graph="bench", batch_size=args.batch)
            store.ensure_schema()
            catalog = synthetic_catalog(items, args.columns)
            catalog_seconds = timed(lambda: store.upsert_catalog(catalog))
            load_seconds = 0.0
            for start_index in range(0, len(items), args.tasks_per_load):
                load_seconds += timed(
                    lambda i=start_index: store.upsert_tasks(items[i : i + args.tasks_per_load])
                )
            stats = store.stats()
            before_reload = stats
            reload_seconds = timed(lambda: store.upsert_tasks(items))
            if store.stats() != before_reload:
                raise SystemExit("re-loading the same task versions changed the graph")
            rng = random.Random(args.seed)
            column_ids = [row[0] for row in store.read("MATCH (c:Column) RETURN c.id")]
            starts = rng.sample(column_ids, min(args.starts, len(column_ids)))
            results: dict[str, dict[str, float]] = {}
            for direction in ("upstream", "downstream"):
                full, bare, sizes = [], [], []
                count_query = queries.lineage_count("Column", direction, args.depth)
                for column in starts:
                    bare.append(timed(lambda c=column, q=count_query: store.read(q, {"id": c})))
                    subgraph = None

                    def fetch(c=column, d=direction):
                        nonlocal subgraph
                        subgraph = store.lineage(c, d, args.depth)

                    full.append(timed(fetch))
                    sizes.append(len(subgraph.edges))
                results[direction] = {
                    "median_ms": statistics.median(full) * 1000,
                    "p99_ms": percentile(full, 0.99) * 1000,
                    "count_median_ms": statistics.median(bare) * 1000,
                    "count_p99_ms": percentile(bare, 0.99) * 1000,
                    "ratio_median": statistics.median(full) / statistics.median(bare),
                    "median_edges": statistics.median(sizes),
                }
            store.close()
        finally:
            stop(spec)

    report = {
        "columns": stats.columns,
        "flows_to_edges": stats.column_edges,
        "edges_generated": edges,
        "catalog_seconds": catalog_seconds,
        "catalog_columns_per_s": stats.columns / catalog_seconds,
        "load_seconds": load_seconds,
        "flows_to_edges_per_s": stats.column_edges / load_seconds,
        "flows_to_edges_per_s_including_catalog": stats.column_edges / (load_seconds + catalog_seconds),
        "reload_unchanged_seconds": reload_seconds,
        "batch": args.batch,
        "tasks_per_load": args.tasks_per_load,
        "fan_in": args.fan_in,
        "depth": args.depth,
        "starts": len(starts),
        "queries": results,
    }
    print(f"graph: {stats.columns} columns, {stats.column_edges} FLOWS_TO edges")
    print(
        f"catalog: {stats.tables} tables, {stats.columns} columns in {catalog_seconds:.1f} s "
        f"({report['catalog_columns_per_s']:.0f} columns/s)"
    )
    print(
        f"load: {report['flows_to_edges_per_s']:.0f} new FLOWS_TO edges/s ({load_seconds:.1f} s, "
        f"{args.tasks_per_load} tasks per upsert, UNWIND batches of {args.batch}); "
        f"{report['flows_to_edges_per_s_including_catalog']:.0f}/s counting the catalog load too"
    )
    print(f"re-load of the same versions: {reload_seconds:.2f} s, no change in counts")
    for direction, r in results.items():
        print(
            f"{direction:10} depth {args.depth}: median {r['median_ms']:.2f} ms (p99 {r['p99_ms']:.2f}) vs bare count "
            f"{r['count_median_ms']:.2f} ms (p99 {r['count_p99_ms']:.2f}) -> ratio {r['ratio_median']:.2f}; "
            f"median subgraph {r['median_edges']:.0f} edges"
        )
    out = ROOT / "bench" / "results" / "graph_bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
