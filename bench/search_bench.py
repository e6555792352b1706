"""Search at a million columns: this tree's search against the one of commit `OLD` (before the typo
stage asked the id-word index and a first page ranked what two pages hold), in one run on one graph.

    .venv/bin/python bench/search_bench.py [--columns 250000,1000000] [--reps 40]

Starts its own FalkorDB (data under /tmp), loads each of `--columns` columns in turn (the graph
grows: the smaller size's tables are the larger's first) with graph_bench's generator
(tables `l<layer>.t<i>`, 40 columns `c0`..`c39` each; the catalog only: search reads nodes), then
times `search_nodes` (the steward service's search, what GET /search and `watershed graph search`
call; no HTTP; a page of 50) per query kind, `--reps` queries each on different tables, round
robin, with this tree's api/service/search.py ("now") and with the one of commit `OLD` ("before":
a first page ranked 500 hits; the typo stage scanned the label) on the same graph:

- name: `c17`, a common word: a column name (25,000 matches at 1M, every one an exact name);
- words: `t17.c5`, two words of ids (a few dozen matches);
- whole id: `l3.t17.c5` (one prefix match, then the other stages: the api_bench "few" case);
- rare: `t3117`, one table's word (320 columns);
- nothing: `zzzq`, nothing matches, nor anything one edit away (the typo stage finds nothing);
- typo: `t3117x`, tables and columns: nothing matches, the 8 tables `t3117` are one edit away
  (the typo stage's first ask, words starting with `t31`, finds hundreds of tables' ids and
  thousands of columns', of which it reads 500 per label).

Each query's rows are counted too (what the graph answered to the search's reads, the index's
candidates included; a scan's server-side reads are not counted).
Prints p50/p99 per kind and stage, and the ratio before / now; writes bench/results/search_bench.json
with the command. The machine may be shared: the ratio is the figure, not the milliseconds.
Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.graph_bench import COLUMNS_PER_TABLE, LAYERS, percentile, synthetic_catalog  # noqa: E402
from watershed.graph.falkordb_store import FalkorDBStore  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402

GRAPH = "search_bench"
#: the last commit whose typo stage scanned the label and whose first page ranked 500 hits
OLD = "c6a7e9a"


def old_search_module(work: Path):
    """api/service/search.py as of `OLD`, imported beside this tree's (its copy under `work`)."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{OLD}:api/service/search.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = work / "old_search.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_search", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic's generic models look their module up
    spec.loader.exec_module(module)
    return module


class Counting:
    """The graph as search reads it, counting the rows each read and index lookup answered."""

    def __init__(self, graph: FalkorDBStore) -> None:
        self.graph = graph
        self.rows = 0

    def read(self, query: str, params: dict | None = None):
        rows = self.graph.read(query, params)
        self.rows += len(rows)
        return rows

    def description_matches(self, *args):
        found = self.graph.description_matches(*args)
        self.rows += len(found)
        return found

    def id_word_matches(self, *args, **kwargs):
        found = self.graph.id_word_matches(*args, **kwargs)
        self.rows += len(found)
        return found


KINDS = ["name", "words", "whole id", "rare", "nothing", "typo"]
#: what each kind searches (`search_nodes`'s kind): the typo's table names are the long ones
SEARCHED = {"typo": None}


def queries(kind: str, tables: int, rng: random.Random) -> str:
    layer, table, column = rng.randrange(LAYERS), rng.randrange(tables), rng.randrange(COLUMNS_PER_TABLE)
    return {
        "name": f"c{column}",
        "words": f"t{table}.c{column}",
        "whole id": f"l{layer}.t{table}.c{column}",
        "rare": f"t{rng.randrange(tables // 2, tables)}",
        "nothing": "zzzq",
        "typo": f"t{rng.randrange(tables // 2, tables)}x",
    }[kind]


def measure(graph, stages: dict, policy, tables: int, reps: int, seed: int) -> dict[str, dict]:
    """Every kind's queries on the graph as loaded, with each stage's search, round robin."""
    counting = Counting(graph)
    results: dict[str, dict] = {}
    for kind in KINDS:
        rng = random.Random(f"{seed}/{kind}")
        asked = [queries(kind, tables, rng) for _ in range(reps)]
        times: dict[str, list[float]] = {name: [] for name in stages}
        rows: dict[str, list[int]] = {name: [] for name in stages}
        hits: dict[str, list[int]] = {name: [] for name in stages}
        for q in asked:
            for name, module in stages.items():  # round robin: a busy moment costs both
                counting.rows = 0
                began = time.perf_counter()
                page = module.search_nodes(counting, policy, q=q, kind=SEARCHED.get(kind, "column"))
                times[name].append((time.perf_counter() - began) * 1000)
                rows[name].append(counting.rows)
                hits[name].append(page.total)
        line: dict = {"example": asked[0]}
        for name in stages:
            line[name] = {
                "p50_ms": round(percentile(times[name], 0.5), 1),
                "p99_ms": round(percentile(times[name], 0.99), 1),
                "rows_read_p50": int(percentile(rows[name], 0.5)),
                "rows_read_max": max(rows[name]),
                "matches_p50": int(percentile(hits[name], 0.5)),
            }
        line["before_over_now_p50"] = round(line["before"]["p50_ms"] / max(line["now"]["p50_ms"], 0.1), 1)
        line["before_over_now_p99"] = round(line["before"]["p99_ms"] / max(line["now"]["p99_ms"], 0.1), 1)
        results[kind] = line
        print(
            f"{kind:9} {line['example']!r:14} now p50 {line['now']['p50_ms']:7.1f} p99 "
            f"{line['now']['p99_ms']:7.1f} ms ({line['now']['rows_read_max']} rows) | before p50 "
            f"{line['before']['p50_ms']:7.1f} p99 {line['before']['p99_ms']:7.1f} ms "
            f"({line['before']['rows_read_max']} rows) | before/now p50 {line['before_over_now_p50']}x "
            f"p99 {line['before_over_now_p99']}x",
            flush=True,
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--columns", default="250000,1000000", help="sizes, ascending: the graph grows from one to the next"
    )
    parser.add_argument("--reps", type=int, default=40, help="queries per kind and stage")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "search_bench.json")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    from watershed.api.service import search as new_search
    from watershed.propagation.policy import default_policy

    policy = default_policy()
    work = Path(tempfile.mkdtemp(prefix="watershed-search-bench-", dir="/tmp"))
    stages = {"now": new_search, "before": old_search_module(work)}
    spec = ServerSpec("falkordb", "127.0.0.1", free_port(), work, with_falkordb=True)
    start(spec)
    try:
        graph = FalkorDBStore(spec.host, spec.port, graph=GRAPH)
        graph.ensure_schema()
        sizes = []
        for columns in sorted(int(size) for size in args.columns.split(",")):
            # the generator's tables of a smaller size are the first ones of a larger: it only adds
            began = time.perf_counter()
            graph.upsert_catalog(synthetic_catalog([], columns))
            load_seconds = time.perf_counter() - began
            stats = graph.stats()
            print(
                f"graph: {stats.tables} tables, {stats.columns} columns (loaded in {load_seconds:.0f} s)",
                flush=True,
            )
            tables = max(1, -(-columns // (LAYERS * COLUMNS_PER_TABLE)))
            sizes.append(
                {
                    "columns": stats.columns,
                    "tables": stats.tables,
                    "load_seconds": round(load_seconds, 1),
                    "kinds": measure(graph, stages, policy, tables, args.reps, args.seed),
                }
            )
        out = {
            "command": "python bench/search_bench.py " + " ".join(sys.argv[1:]),
            "reps": args.reps,
            "old_commit": OLD,
            "machine": f"{platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} cores "
            f"shared with other sessions (load average {os.getloadavg()[0]:.1f} at the end): compare the ratios "
            "and the rows read",
            "sizes": sizes,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {args.out}")
    finally:
        stop(spec)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
