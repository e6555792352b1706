"""Neo4j's graph load alone, for two versions of the code and several batch sizes, on one server.

    .venv/bin/python bench/neo4j_load_bench.py [--columns 20000] [--batch-sizes 5000,10000,20000]
        [--rounds 2] [--before /tmp/old] [--falkordb]

The load figures of bench/backends_bench.py (its `load`: the catalog through `upsert_catalog`,
the tasks through `upsert_tasks` in chunks of 1000, then the same tasks again) without the
propagation, API and gateway figures, so that load statements can be compared in minutes. One
Neo4j is started here (as backends_bench starts it); each load runs in a child process on it,
after `clear`, with the store's `batch_size` (rows a statement) set: the code under test is the
`watershed` the child imports, this tree's, and with `--before DIR` also DIR's (a directory
holding a `watershed` link to an older tree: PYTHONPATH=DIR), the two alternating in each round
so neither always meets the warmer server. A first load on a small warehouse (`--warmup-columns`,
not reported) plans the statements. With `--falkordb`, this tree's load on a FalkorDB started here
too, once per round (the same statements' denominator in backends_bench's ratios).

Per load: `catalog_seconds` (the columns are created there: the catalog comes first in a
harvest), `load_seconds` (the tasks: backends_bench's "first load"), `reload_seconds`, FLOWS_TO
edges/s of the load, of the catalog and load together (`first_harvest_edges_per_s`) and of the
re-load. Writes bench/results/neo4j_load_bench.json with the command; the medians per (code,
batch size) are printed. The machine's load average at the start and end of each load is kept
(shared machine: compare within a run). Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "results" / "neo4j_load_bench.json"


def child(args) -> None:
    """One load on the server the environment names, printed as one JSON line."""
    from bench.backends_bench import load
    from bench.graph_bench import synthetic_catalog, synthetic_tasks
    from watershed.graph.settings import GraphSettings

    settings = GraphSettings()
    if settings.backend == "neo4j":
        from watershed.graph.neo4j_store import Neo4jStore

        graph = Neo4jStore.from_settings(settings)
    else:
        from watershed.graph.falkordb_store import FalkorDBStore

        graph = FalkorDBStore.from_settings(settings)
    graph.batch_size = args.batch
    items = synthetic_tasks(args.columns, args.seed)
    catalog = synthetic_catalog(items, args.columns)
    try:
        graph.clear()
        graph.ensure_schema()
        before = os.getloadavg()[0]
        out = load(graph, items, catalog)
        out["first_harvest_edges_per_s"] = round(
            out["flows_to_edges"] / (out["catalog_seconds"] + out["load_seconds"])
        )
        out["loadavg"] = [round(before, 1), round(os.getloadavg()[0], 1)]
        import watershed

        out["code_path"] = str(Path(watershed.__path__[0]).resolve())
        print(json.dumps(out), flush=True)
    finally:
        graph.close()


def run_child(env: dict, columns: int, batch: int, seed: int) -> dict:
    command = [sys.executable, __file__, "--child", "--columns", str(columns), "--batch", str(batch)]
    done = subprocess.run(
        [*command, "--seed", str(seed)], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"a load failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--columns", type=int, default=20_000)
    parser.add_argument("--batch-sizes", default="5000,10000,20000")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--before", type=Path, help="a directory whose `watershed` is the code before")
    parser.add_argument("--falkordb", action="store_true")
    parser.add_argument("--warmup-columns", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--neo4j-heap", default="2g")
    parser.add_argument("--neo4j-pagecache", default="1g")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, default=10_000, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    from bench.backends_bench import start_neo4j
    from watershed.graph.server import ServerSpec, free_port, start, stop

    batches = [int(b) for b in args.batch_sizes.split(",")]
    codes = {"after": os.environ.get("PYTHONPATH", "")}
    if args.before is not None:
        codes = {"before": str(args.before), **codes}
    loads: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="neo4j-load-bench-") as tmp:
        work = Path(tmp)
        spec, graph = start_neo4j(work, args.neo4j_heap, args.neo4j_pagecache)
        graph.close()
        falkordb = None
        try:
            neo4j_env = {
                **os.environ,
                "WATERSHED_BACKEND": "neo4j",
                "WATERSHED_DATA_DIR": str(work),
                "WATERSHED_NEO4J_URI": spec_uri(spec),
            }
            if args.warmup_columns:
                for path in codes.values():
                    run_child(
                        {**neo4j_env, "PYTHONPATH": path}, args.warmup_columns, batches[0], args.seed + 1
                    )
            envs = {code: {**neo4j_env, "PYTHONPATH": path} for code, path in codes.items()}
            if args.falkordb:
                falkordb = ServerSpec("falkordb", "127.0.0.1", free_port(), work, with_falkordb=True)
                start(falkordb)
                envs["falkordb"] = {
                    **os.environ,
                    "WATERSHED_BACKEND": "falkordb",
                    "WATERSHED_FALKORDB_HOST": falkordb.host,
                    "WATERSHED_FALKORDB_PORT": str(falkordb.port),
                }
            for at in range(args.rounds):
                order = list(envs) if at % 2 == 0 else list(reversed(envs))
                for batch in batches:
                    for code in order:
                        if code == "falkordb" and batch != batches[0]:
                            continue
                        out = {"round": at, "code": code, "batch": batch}
                        out.update(run_child(envs[code], args.columns, batch, args.seed))
                        print(json.dumps(out), flush=True)
                        loads.append(out)
                        write(args, loads)
        finally:
            if falkordb is not None:
                stop(falkordb)
            stop(spec, wait_seconds=600)
    for (code, batch), runs in sorted(medians(loads).items()):
        print(code, batch, json.dumps(runs))


def spec_uri(spec) -> str:
    return f"bolt://{spec.host}:{spec.port}"


FIGURES = (
    "catalog_seconds",
    "load_seconds",
    "reload_seconds",
    "load_edges_per_s",
    "first_harvest_edges_per_s",
)


def medians(loads: list[dict]) -> dict:
    grouped: dict = {}
    for out in loads:
        grouped.setdefault((out["code"], out["batch"]), []).append(out)
    return {
        key: {figure: statistics.median(run[figure] for run in runs) for figure in FIGURES}
        for key, runs in grouped.items()
    }


def write(args, loads: list[dict]) -> None:
    document = {
        "command": shlex.join([".venv/bin/python", "bench/neo4j_load_bench.py", *sys.argv[1:]]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, shared with other engineers' tests",
        "generated_columns": args.columns,
        "neo4j": {"heap": args.neo4j_heap, "pagecache": args.neo4j_pagecache},
        "loads": loads,
        "medians": {f"{code} batch {batch}": figures for (code, batch), figures in medians(loads).items()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
