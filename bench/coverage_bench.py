"""The coverage dashboard's cost: the nightly compute of a snapshot, and reading one over HTTP
against the column page on the same warehouse.

    .venv/bin/python bench/coverage_bench.py [--columns 100000] [--seeds 50] [--samples 200]

Starts its own FalkorDB, loads `--columns` columns with graph_bench's generator (api_bench's
`load_warehouse`), seeds `pii` on `--seeds` layer-0 columns and propagates them in this process,
records a quarter of the seeded tables as protected (a TableProtection record holding the seeded
column with the policy's key and mask), so that the snapshot has protected roots and unprotected
columns below them. Then:

- compute: `coverage.refresh` (what the nightly `coverage` step runs), `--computes` times;
- GET /api/v1/coverage (the dashboard's one request) against GET /api/v1/columns/{id} (the column
  page's, a random layer 3-7 column each time), interleaved, `--samples` each after a warm-up,
  on one keep-alive client of `watershed serve` (a subprocess);
- GET /api/v1/coverage/columns?list=unprotected&limit=50 (a click on "not yet protected").

Prints p50/p99 and the ratio of the dashboard's read to the column page's, and writes
bench/results/coverage.json. Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.api_bench import GRAPH, load_warehouse, seed_and_propagate, start_api, stop_api  # noqa: E402
from bench.graph_bench import LAYERS, percentile  # noqa: E402
from watershed.graph.falkordb_store import FalkorDBStore  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402


def protect_some_roots(graph: FalkorDBStore, rng: random.Random) -> int:
    """A quarter of the tables holding a seeded column recorded as protected, as an apply records."""
    from watershed.graph.protection import ColumnKey, TableProtection
    from watershed.orc_crypto.protect import records

    rows = graph.read(
        "MATCH (c:Column) WHERE c.id STARTS WITH 'l0.' AND c.tags IS NOT NULL RETURN c.table, c.name"
    )
    by_table: dict[str, list[str]] = {}
    for table, name in rows:
        by_table.setdefault(table, []).append(name)
    chosen = rng.sample(sorted(by_table), max(1, len(by_table) // 4)) if by_table else []
    for table in chosen:
        records.save_table(
            graph,
            TableProtection(
                table=table,
                columns={name: ColumnKey(key="pii", mask="nullify") for name in by_table[table]},
                at="2026-01-01T00:00:00+00:00",
                run="coverage-bench",
            ),
        )
    return len(chosen)


def ms(seconds: list[float]) -> dict:
    values = sorted(s * 1000 for s in seconds)
    return {
        "samples": len(values),
        "p50_ms": round(statistics.median(values), 2),
        "p99_ms": round(percentile(values, 99), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--columns", type=int, default=100_000)
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--computes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "coverage.json")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    import httpx

    from watershed.api.service import coverage
    from watershed.api.service.accounts.store import AccountStore
    from watershed.propagation.policy import default_policy

    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="watershed-coverage-bench-"))
    spec = ServerSpec("falkordb", "127.0.0.1", free_port(), work, with_falkordb=True)
    start(spec)
    service = None
    try:
        graph = FalkorDBStore(spec.host, spec.port, graph=GRAPH)
        graph.ensure_schema()
        load = load_warehouse(graph, args.columns, args.seed)
        stats = graph.stats()
        propagation = seed_and_propagate(graph, spec.port, args.seeds, rng)
        protected_tables = protect_some_roots(graph, rng)
        print(
            f"graph: {stats.columns} columns (loaded in {load['load_seconds']:.0f} s); "
            f"propagation cone {propagation['cone']}; {protected_tables} tables recorded protected",
            flush=True,
        )

        policy = default_policy()
        computes = []
        for _ in range(args.computes):
            began = time.perf_counter()
            snapshot = coverage.refresh(graph, policy)
            computes.append(time.perf_counter() - began)
        totals = snapshot.totals.model_dump()
        print(f"compute: median {statistics.median(computes):.2f} s; totals {totals}", flush=True)

        accounts = AccountStore(graph)
        accounts.add("bench", "admin", None, actor="bench")
        token = accounts.create_token("bench", actor="bench").token
        deep = [
            row[0]
            for row in graph.read("MATCH (c:Column) WHERE c.id STARTS WITH 'l' RETURN c.id")
            if 3 <= int(row[0][1 : row[0].index(".")]) < LAYERS
        ]
        service = start_api(spec.port, work)
        times: dict[str, list[float]] = {"coverage": [], "column page": [], "coverage columns": []}
        with httpx.Client(
            base_url=f"{service.base_url}/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=60
        ) as client:

            def get(path: str) -> float:
                began = time.perf_counter()
                answer = client.get(path)
                elapsed = time.perf_counter() - began
                if answer.status_code != 200:
                    raise SystemExit(f"GET {path}: {answer.status_code} {answer.text[:300]}")
                return elapsed

            for i in range(args.warmup + args.samples):
                column = deep[rng.randrange(len(deep))]
                row = {
                    "coverage": get("/coverage"),
                    "column page": get(f"/columns/{column}"),
                    "coverage columns": get("/coverage/columns?list=unprotected&limit=50"),
                }
                if i >= args.warmup:
                    for name, seconds in row.items():
                        times[name].append(seconds)
        rows = {name: ms(values) for name, values in times.items()}
        ratio = round(rows["coverage"]["p50_ms"] / rows["column page"]["p50_ms"], 2)
        for name, row in rows.items():
            print(f"{name:>18}: p50 {row['p50_ms']:7.2f} ms  p99 {row['p99_ms']:7.2f} ms", flush=True)
        print(f"GET /coverage p50 / column page p50: {ratio}x", flush=True)
        result = {
            "columns": stats.columns,
            "seeds": propagation["seeds"],
            "propagation_cone": propagation["cone"],
            "protected_tables": protected_tables,
            "totals": totals,
            "compute_seconds": [round(s, 2) for s in computes],
            "http": rows,
            "coverage_over_column_page_p50": ratio,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.out}")
    finally:
        if service is not None:
            stop_api(service)
        stop(spec)


if __name__ == "__main__":
    main()
