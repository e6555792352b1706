"""FalkorDB and Neo4j side by side on the same generated warehouse (issue 37, "Measure").

    .venv/bin/python bench/backends_bench.py [--columns 100000] [--samples 300] [--seeds 50]
        [--neo4j-heap 2g] [--neo4j-pagecache 1g] [--warmup-columns 5000]

One run, both backends, each on its own server started here on free ports under a temporary data
directory: FalkorDB through graph/server.py (as scale_bench), the local Neo4j as `watershed
services up` starts it (graph/services.py), with the heap and page cache given. A plain Redis
holds the propagation runs' state for both.

The warehouse is graph_bench's generator (8 layers, one task per table) at `--columns`. Each
server first runs the whole sequence below once on a small warehouse (`--warmup-columns`), which
is then cleared: the figures are those of a running server, not of a process's first statements
(a fresh JVM plans and compiles every statement the first time: at 20,000 columns Neo4j's first
catalog load took 21 s, the same load on the same server after a clear 6.7 s, then 4.0 s). The
warm-up's own figures are kept in the results (`warmup`). Per backend, in this order:

- load: the catalog, then the tasks through `upsert_tasks` in chunks of 1000 (the harvest's
  graph load): FLOWS_TO edges/s; then the same tasks again (an idempotent re-harvest: every
  version known, nothing written), edges/s over the same edge count;
- propagation: `pii` on `--seeds` layer-0 columns, a full run in this process (`local_runner`,
  the `propagate --local` path); then one more seed and an incremental run, and once more (the
  second incremental run: `incremental_again_propagation_s`);
- API: for `--samples` columns of layers 3-7, the store calls the routers make: the column page
  (GET /columns/{id}: GraphStore.read of the route's COLUMN query) and the 3-hop upstream lineage
  (GET /lineage/{id}?depth=3: GraphStore.bounded_lineage, limit 500), p50/p99, and beside it the
  shared hop-by-hop walk (`GraphStore.bounded_lineage` itself, a statement per hop; Neo4j answers
  in one statement), interleaved on the same server;
- a one-row write through `execute` (with the data stamp's move), 200 times, p50/p99;
- Neo4j only: the database's files after a checkpoint, MB (`store_mb`: the page cache it needs);
- gateway: `AuthzService.rewrite` with reads kept under the data stamp (authz_bench's service and
  measure: best of 3 per query, so the measured check is a warm one) over one SELECT per sampled
  table, p50/p99.

Prints each figure per backend and the ratio neo4j/falkordb (target <= 2x, issue 37), and
writes bench/results/backends_bench.json with the command. Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.authz_bench import authz_service  # noqa: E402
from bench.authz_bench import measure as measure_checks  # noqa: E402
from bench.graph_bench import percentile, synthetic_catalog, synthetic_tasks, timed  # noqa: E402
from watershed.graph.neo4j_store import Neo4jStore  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402
from watershed.graph.settings import GraphSettings  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "backends_bench.json"
GRAPH = "backends_bench"
TAG = "pii"
#: tasks per upsert_tasks call, as the harvest loads them
TASKS_PER_LOAD = 1000
RATIO_TARGET = 2.0
#: the figures compared, and whether a larger value is the better one
FIGURES = {
    "load_edges_per_s": True,
    "reload_edges_per_s": True,
    "full_propagation_s": False,
    "incremental_propagation_s": False,
    "incremental_again_propagation_s": False,
    "column_page_p50_ms": False,
    "column_page_p99_ms": False,
    "lineage_3hop_p50_ms": False,
    "lineage_3hop_p99_ms": False,
    "one_row_execute_p50_ms": False,
    "warm_check_p50_ms": False,
    "warm_check_p99_ms": False,
}


def latency_ms(times: list[float]) -> tuple[float, float]:
    return round(percentile(times, 0.5) * 1000, 2), round(percentile(times, 0.99) * 1000, 2)


def load(graph, items, catalog) -> dict:
    catalog_seconds = timed(lambda: graph.upsert_catalog(catalog))
    load_seconds = 0.0
    for at in range(0, len(items), TASKS_PER_LOAD):
        load_seconds += timed(lambda at=at: graph.upsert_tasks(items[at : at + TASKS_PER_LOAD]))
    stats = graph.stats()
    reload_seconds = timed(lambda: graph.upsert_tasks(items))
    if graph.stats() != stats:
        raise SystemExit("re-loading the same task versions changed the graph")
    return {
        "columns": stats.columns,
        "flows_to_edges": stats.column_edges,
        "catalog_seconds": round(catalog_seconds, 2),
        "load_seconds": round(load_seconds, 2),
        "reload_seconds": round(reload_seconds, 2),
        "load_edges_per_s": round(stats.column_edges / load_seconds),
        "reload_edges_per_s": round(stats.column_edges / reload_seconds),
    }


def propagation(graph, redis_url: str, seeds: list[str], extra_seeds: list[str]) -> dict:
    from watershed.propagation.coordinator import local_runner, propagate
    from watershed.propagation.graph_store import GraphTagStore
    from watershed.propagation.policy import default_policy
    from watershed.propagation.run_state import RunState
    from watershed.propagation.settings import PropagationSettings

    policy = default_policy()
    tags = GraphTagStore(graph, policy)
    for column in seeds:
        tags.set_tag(column, TAG, ["L3"], by="bench")
    settings = PropagationSettings(graph_name=GRAPH, celery_broker=redis_url)
    state = RunState.from_url(redis_url, GRAPH)
    began = time.perf_counter()
    full = propagate(graph, policy, state, local_runner, full=True, settings=settings)
    full_seconds = time.perf_counter() - began
    incremental_times = []
    # the first incremental run after the full one, then one more: Neo4j re-plans statements
    # whose graph statistics the full run moved on their next run (once), FalkorDB has no such step
    for extra_seed in extra_seeds:
        tags.set_tag(extra_seed, TAG, ["L3"], by="bench")
        began = time.perf_counter()
        incremental = propagate(graph, policy, state, local_runner, full=False, settings=settings)
        incremental_times.append(time.perf_counter() - began)
    incremental_seconds = incremental_times[0]
    return {
        "full_propagation_s": round(full_seconds, 2),
        "full_cone": full.cone,
        "full_nodes_processed": full.nodes_processed,
        "full_tags_changed": full.tags_changed,
        "incremental_propagation_s": round(incremental_seconds, 3),
        "incremental_again_propagation_s": round(incremental_times[-1], 3),
        "incremental_cone": incremental.cone,
        "incremental_nodes_processed": incremental.nodes_processed,
    }


def api_reads(graph, columns: list[str]) -> dict:
    from watershed.api.http.routers.tables import COLUMN
    from watershed.graph.store import GraphStore

    page, lineage, walked = [], [], []
    # a few unmeasured rounds first: both backends' first queries plan and warm their caches
    for column in columns[:10]:
        graph.read(COLUMN, {"id": column})
        graph.bounded_lineage(column, "upstream", depth=3, limit=500)
    for i, column in enumerate(columns):
        # alternate which goes first, so neither always meets the warmer cache
        calls = [
            (page, lambda c=column: graph.read(COLUMN, {"id": c})),
            (lineage, lambda c=column: graph.bounded_lineage(c, "upstream", depth=3, limit=500)),
            # the shared hop-by-hop walk (a statement per hop), which a backend may answer otherwise
            (walked, lambda c=column: GraphStore.bounded_lineage(graph, c, "upstream", depth=3, limit=500)),
        ]
        for times, call in calls if i % 2 else reversed(calls):
            times.append(timed(call))
    page_p50, page_p99 = latency_ms(page)
    lineage_p50, lineage_p99 = latency_ms(lineage)
    walked_p50, walked_p99 = latency_ms(walked)
    return {
        "samples": len(columns),
        "column_page_p50_ms": page_p50,
        "column_page_p99_ms": page_p99,
        "lineage_3hop_p50_ms": lineage_p50,
        "lineage_3hop_p99_ms": lineage_p99,
        "lineage_3hop_hop_by_hop_p50_ms": walked_p50,
        "lineage_3hop_hop_by_hop_p99_ms": walked_p99,
    }


def one_row_writes(graph, count: int = 200) -> dict:
    """`execute` of a one-row write (a MERGE of one probe node), with the data stamp's move."""
    times = [
        timed(lambda i=i: graph.execute("MERGE (p:BenchProbe {id: 1}) SET p.n = $n", {"n": i}))
        for i in range(count)
    ]
    graph.execute("MATCH (p:BenchProbe) DELETE p")
    p50, p99 = latency_ms(times)
    return {"one_row_execute_p50_ms": p50, "one_row_execute_p99_ms": p99}


def warm_checks(graph, catalog, tables: list[str]) -> dict:
    from watershed.propagation.policy import default_policy

    service = authz_service(graph, default_policy(), catalog, 60.0)
    queries = [f"SELECT c0, upper(c1), c2 FROM {table} WHERE c3 IS NOT NULL" for table in tables]

    def check(sql: str, dialect: str):
        rewrite = service.rewrite("bench_analyst", sql, dialect)
        if not rewrite.decision.allowed:
            raise SystemExit(f"denied: {sql}: {rewrite.decision.error}")
        return rewrite

    result = measure_checks("warm check", queries, "spark", check, 3)
    return {
        "queries": len(queries),
        "warm_check_p50_ms": round(result["check_ms"]["p50"], 2),
        "warm_check_p99_ms": round(result["check_ms"]["p99"], 2),
    }


def run_backend(name: str, graph, items, catalog, redis_url: str, args) -> dict:
    print(f"== {name}", flush=True)
    rng = random.Random(args.seed)
    out: dict = {}
    out.update(load(graph, items, catalog))
    print(f"  load: {json.dumps(out)}", flush=True)
    layer0 = sorted(
        c for c in (row[0] for row in graph.read("MATCH (c:Column) RETURN c.id")) if c.startswith("l0.")
    )
    chosen = rng.sample(layer0, min(args.seeds + 2, len(layer0)))
    out.update(propagation(graph, redis_url, chosen[:-2], chosen[-2:]))
    print(
        f"  propagation: full {out['full_propagation_s']} s, incremental {out['incremental_propagation_s']} s",
        flush=True,
    )
    deep = sorted(
        row[0]
        for row in graph.read("MATCH (c:Column) RETURN c.id")
        if row[0].split(".")[0] in {"l3", "l4", "l5", "l6", "l7"}
    )
    sampled = rng.sample(deep, min(args.samples, len(deep)))
    out.update(api_reads(graph, sampled))
    out.update(one_row_writes(graph))
    tables = sorted({".".join(c.split(".")[:2]) for c in sampled})[: args.checks]
    out.update(warm_checks(graph, catalog, tables))
    return out


def start_neo4j(data_dir: Path, heap: str, pagecache: str):
    from watershed.graph.services import neo4j_spec, start_spec

    settings = GraphSettings(
        backend="neo4j",
        data_dir=data_dir,
        neo4j_uri=f"bolt://127.0.0.1:{free_port()}",
        neo4j_heap=heap,
        neo4j_pagecache=pagecache,
    )
    spec = neo4j_spec(settings)
    start_spec(spec, settings)
    return spec, Neo4jStore.from_settings(settings)


def neo4j_store_mb(data_dir: Path, database: str = "neo4j") -> float:
    """The size of the stopped Neo4j's database files (store and indexes, which the shutdown's
    checkpoint wrote): what its page cache needs to answer from memory."""
    files = (data_dir / "neo4j" / "data" / "databases" / database).rglob("*")
    return round(sum(f.stat().st_size for f in files if f.is_file()) / 2**20, 1)


def ratios(results: dict) -> dict:
    """neo4j/falkordb per figure, as 'how many times worse' (a rate's inverse), and whether <= 2x."""
    out = {}
    falkordb, neo4j = results.get("falkordb", {}), results.get("neo4j", {})
    for figure, higher_is_better in FIGURES.items():
        a, b = falkordb.get(figure), neo4j.get(figure)
        if not a or not b:
            continue
        times_slower = a / b if higher_is_better else b / a
        out[figure] = {"times_slower": round(times_slower, 2), "within_target": times_slower <= RATIO_TARGET}
    return out


def print_table(results: dict, compared: dict) -> None:
    print(f"\n{'figure':28} {'falkordb':>12} {'neo4j':>12} {'neo4j/falkordb':>16}")
    for figure in FIGURES:
        a, b = results.get("falkordb", {}).get(figure), results.get("neo4j", {}).get(figure)
        ratio = compared.get(figure)
        mark = (
            ""
            if ratio is None
            else f"{ratio['times_slower']:.2f}x {'ok' if ratio['within_target'] else '> 2x'}"
        )
        print(f"{figure:28} {a!s:>12} {b!s:>12} {mark:>16}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--columns", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=300, help="columns for the API reads")
    parser.add_argument(
        "--checks", type=int, default=100, help="tables (one SELECT each) for the warm checks"
    )
    parser.add_argument(
        "--seeds", type=int, default=50, help="layer-0 columns tagged pii before the full run"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--neo4j-heap", default="2g")
    parser.add_argument("--neo4j-pagecache", default="1g")
    parser.add_argument("--backends", default="falkordb,neo4j")
    parser.add_argument(
        "--warmup-columns",
        type=int,
        default=5000,
        help="columns of the warehouse each server runs everything on once before the measured run (0: none)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    args.backends = args.backends.split(",")
    # a plain `kill` stops the servers this run started (the finally blocks run)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    from watershed.graph.falkordb_store import FalkorDBStore

    items = synthetic_tasks(args.columns, args.seed)
    catalog = synthetic_catalog(items, args.columns)
    warmup = None
    if args.warmup_columns:
        warm_items = synthetic_tasks(args.warmup_columns, args.seed + 1)
        warmup = (warm_items, synthetic_catalog(warm_items, args.warmup_columns))
    settings = GraphSettings()
    results: dict = {}
    warmups: dict = {}
    with tempfile.TemporaryDirectory(prefix="backends-bench-") as tmp:
        work = Path(tmp)
        redis = ServerSpec("redis", "127.0.0.1", free_port(), work, with_falkordb=False)
        start(redis)
        try:
            for name in args.backends:
                redis_url = f"redis://127.0.0.1:{redis.port}/{len(results)}"
                if name == "falkordb":
                    spec = ServerSpec("falkordb", "127.0.0.1", free_port(), work, with_falkordb=True)
                    start(spec)
                    graph = FalkorDBStore(
                        spec.host, spec.port, graph=GRAPH, batch_size=settings.load_batch_size
                    )
                else:
                    spec, graph = start_neo4j(work, args.neo4j_heap, args.neo4j_pagecache)
                try:
                    graph.ensure_schema()
                    if warmup is not None:
                        # a Redis database of its own: the measured run's propagation starts afresh
                        warm_url = f"redis://127.0.0.1:{redis.port}/{len(results) + len(args.backends)}"
                        warmups[name] = run_backend(f"{name} (warm-up)", graph, *warmup, warm_url, args)
                        graph.clear()
                        graph.ensure_schema()  # FalkorDB's indexes go with its graph
                    results[name] = run_backend(name, graph, items, catalog, redis_url, args)
                    # after each backend: a run cut short keeps the figures it has
                    write(results, warmups, args, settings)
                    graph.close()
                finally:
                    stop(spec, wait_seconds=600)
                if name == "neo4j":
                    # after the shutdown's checkpoint (Community has no db.checkpoint())
                    results[name]["store_mb"] = neo4j_store_mb(work)
                    write(results, warmups, args, settings)
        finally:
            stop(redis)

    print_table(results, ratios(results))


def write(results: dict, warmups: dict, args, settings: GraphSettings) -> None:
    compared = ratios(results)
    document = {
        "command": shlex.join([".venv/bin/python", "bench/backends_bench.py", *sys.argv[1:]]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"{os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GiB",
        "generated_columns": args.columns,
        "load_batch_size": settings.load_batch_size,
        "neo4j": {"heap": args.neo4j_heap, "pagecache": args.neo4j_pagecache},
        "warmup_columns": args.warmup_columns,
        "results": results,
        "warmup": warmups,
        "neo4j_over_falkordb": compared,
        "ratio_target": RATIO_TARGET,
        "median_of_ratios": round(statistics.median(r["times_slower"] for r in compared.values()), 2)
        if compared
        else None,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"results written to {args.out}", flush=True)


if __name__ == "__main__":
    main()
