"""The gateway's points walk against the parse of the same query, per query, old code and new
in one run.

    .venv/bin/python bench/points_bench.py [--old DIR] [--rounds 3] [--repeat 5]
        [--corpus tpcds --corpus tpch] [--out bench/results/points_bench.json]
        [--authz BEFORE.json AFTER.json]

Per query of the vendored TPC corpora (bench/corpora, tables in `default` as
bench/authz_bench.py loads them, checked in Spark SQL):
  parse  `sqlglot.parse_one(sql, read="spark")` (the parse authz_bench divides by),
  walk   `ingest.points.query_points` on the statement `parse_query` returned (the points of a
         warm gateway check: no graph read, the catalog in memory),
each the best of `--repeat` calls in CPU time of the process (the machine is shared: other
work's share of the cores does not count) with the collector off (as authz_bench measures),
and walk / parse of the same query; p50 and p99 of that ratio over the queries. `--old DIR` names a directory holding the code before as a `watershed`
package (`git worktree add --detach /tmp/old/main <commit>` and a symlink
`DIR/watershed -> /tmp/old/main`): each round measures the old code, then this tree's, each in a
child process, so both see the same machine; a query's figures are its best over the rounds.
`--authz BEFORE AFTER` (repeatable) puts the per-query check / parse figures of two authz_bench
results (the code before and this code, run one after the other) beside them.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "points_bench.json"


def measure(corpora: list[str], repeat: int) -> dict:
    """In this process: per corpus and query, (parse ms, walk ms), each the best of `repeat`."""
    import sqlglot

    from bench.lineage_bench import CORPORA, read_queries
    from watershed.graph.catalog import Catalog, CatalogColumn, CatalogTable
    from watershed.ingest.points import parse_query, query_points

    found = {}
    gc.disable()
    for corpus in corpora:
        schema = json.loads((CORPORA / f"{corpus}_schema.json").read_text())
        catalog = Catalog(
            tables={
                f"default.{t}": CatalogTable(
                    name=f"default.{t}", columns=[CatalogColumn(name=c, type=k) for c, k in cols.items()]
                )
                for t, cols in schema.items()
            }
        )
        rows = []
        for sql in read_queries(CORPORA / f"{corpus}.sql"):
            gc.collect()
            statement = parse_query(sql)
            rows.append(
                (
                    best(lambda s=sql: sqlglot.parse_one(s, read="spark"), repeat),
                    best(lambda s=statement, c=catalog: query_points(s, c), repeat),
                )
            )
        found[corpus] = rows
    gc.enable()
    return found


def best(fn, repeat: int) -> float:
    fastest = float("inf")
    for _ in range(repeat):
        began = time.process_time()
        fn()
        fastest = min(fastest, time.process_time() - began)
    return 1000 * fastest


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def child(corpora: list[str], repeat: int, package_dir: str | None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_dir, str(ROOT)) if p)
    command = [sys.executable, __file__, "--child", "--repeat", str(repeat)]
    for corpus in corpora:
        command += ["--corpus", corpus]
    done = subprocess.run(command, env=env, cwd="/", capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def summary(rounds: list[dict], corpus: str) -> dict:
    per_round = [r[corpus] for r in rounds]
    parse = [min(r[i][0] for r in per_round) for i in range(len(per_round[0]))]
    walk = [min(r[i][1] for r in per_round) for i in range(len(per_round[0]))]
    ratios = [w / p for p, w in zip(parse, walk, strict=True)]
    slowest = sorted(range(len(ratios)), key=lambda i: -ratios[i])[:8]
    return {
        "queries": len(ratios),
        "parse_ms": {"p50": round(percentile(parse, 0.5), 3), "p99": round(percentile(parse, 0.99), 3)},
        "walk_ms": {"p50": round(percentile(walk, 0.5), 3), "p99": round(percentile(walk, 0.99), 3)},
        "walk_over_parse_p50": round(percentile(ratios, 0.5), 2),
        "walk_over_parse_p99": round(percentile(ratios, 0.99), 2),
        "walk_ms_total": round(sum(walk), 1),
        "slowest": [
            {
                "query": i + 1,
                "ratio": round(ratios[i], 2),
                "parse_ms": round(parse[i], 3),
                "walk_ms": round(walk[i], 3),
            }
            for i in slowest
        ],
    }


def authz_figures(path: Path) -> dict:
    """The per-query check / parse figures of an authz_bench result, with its command."""
    found = json.loads(path.read_text())
    figures: dict = {"command": found.get("command"), "graph": found.get("graph")}
    for mode in ("service", "service_repeat", "service_fresh"):
        for corpus, result in (found.get(mode) or {}).items():
            if isinstance(result, dict) and "per_query_ratio_p50" in result:
                figures[f"{mode} {corpus}"] = {
                    "check_ms": {k: round(v, 3) for k, v in result["check_ms"].items()},
                    "parse_ms": {k: round(v, 3) for k, v in result["parse_ms"].items()},
                    "per_query_ratio_p50": round(result["per_query_ratio_p50"], 2),
                    "per_query_ratio_p99": round(result["per_query_ratio_p99"], 2),
                    "slowest_per_query": result["slowest_per_query"][:3],
                }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--old", help="a directory holding the code before as a `watershed` package")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--corpus", action="append", choices=["tpcds", "tpch"])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--authz",
        nargs=2,
        type=Path,
        action="append",
        metavar=("BEFORE", "AFTER"),
        help="two bench/authz_bench.py results (the code before, this code) whose per-query figures "
        "go beside (repeatable: one pair per pair of runs)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    corpora = args.corpus or ["tpcds", "tpch"]
    if args.child:
        sys.path.insert(0, str(ROOT))
        print(json.dumps(measure(corpora, args.repeat)))
        return
    codes = {"old": args.old, "new": None} if args.old else {"new": None}
    rounds: dict[str, list[dict]] = {name: [] for name in codes}
    for number in range(args.rounds):
        for name, package_dir in codes.items():
            rounds[name].append(child(corpora, args.repeat, package_dir))
        print(f"round {number + 1}/{args.rounds} done", flush=True)
    results = {
        "command": "bench/points_bench.py " + " ".join(sys.argv[1:]),
        "machine": "shared with other sessions' work while it ran: ratios are within one run",
        "rounds": args.rounds,
        "repeat": args.repeat,
    }
    for name in codes:
        results[name] = {corpus: summary(rounds[name], corpus) for corpus in corpora}
        for corpus in corpora:
            s = results[name][corpus]
            slowest = ", ".join(f"q{q['query']} {q['ratio']}x" for q in s["slowest"][:4])
            print(
                f"{name} {corpus}: {s['queries']} queries  parse p50 {s['parse_ms']['p50']:.2f} ms"
                f"  walk p50 {s['walk_ms']['p50']:.2f} ms p99 {s['walk_ms']['p99']:.2f} ms"
                f"  walk/parse per query p50 {s['walk_over_parse_p50']:.2f}x"
                f" p99 {s['walk_over_parse_p99']:.2f}x  slowest {slowest}"
            )
    if args.authz:
        results["authz_bench"] = [
            {
                # the machine's load moves between runs: which ran first says which way it may lean
                "ran_first": "old" if before.stat().st_mtime < after.stat().st_mtime else "new",
                "old": authz_figures(before),
                "new": authz_figures(after),
            }
            for before, after in args.authz
        ]
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
