"""Analysis time of one statement against its size, and how fast the limits refuse one too large.

    .venv/bin/python bench/analysis_bench.py [--terms 1000,10000,100000] [--repeat 3]

The statements are issue 35 item 7's, `SELECT uid || uid || ... FROM t` (a chain of `--terms`
operands), and the same chain alternating two operators of one family, `uid + uid - uid + ...`
(each term was one more level of recursion: a RecursionError from about 500 terms), timed on the
two paths that analyse a statement:
  authz    what /authz/check runs before it reads grants and tags: `parse_query` (the limits,
           then sqlglot's parse), `catalog_for` (the tables named, fetched from an in-memory
           catalog here) and `query_points` (outputs traced to base columns, rows, cells);
  lineage  what `watershed lineage` and the harvest run: `extract_lineage` of
           `INSERT INTO o SELECT <chain> AS x FROM t`.
The limits are raised for these runs (a 100,000-term statement is 700,000 characters and
200,000 tokens, beyond the defaults). Each size runs `--repeat` times; the best counts (the
machine is shared). The growth is linear when seconds(100k) / seconds(10k) <= 15 (it was
quadratic: 2,500 terms 0.6 s, 10,000 terms 8.3 s, 20,000 terms 55 s at /authz/check).

Then, under the default limits, the time each path takes to refuse: a statement of 1 MiB (the
body limit), one of 60,000 tokens within the length limit, one nested 50,000 brackets deep, one
nested 20,000 NOTs deep (analysis_max_depth, before the parser) and one nested 20,000 IS NULLs
deep (analysis_max_nesting, in the resolver).
Results: bench/results/analysis_bench.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from itertools import product
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from watershed.graph.catalog import Catalog  # noqa: E402
from watershed.graph.lineage import SqlTask  # noqa: E402
from watershed.ingest.extract import extract_lineage  # noqa: E402
from watershed.ingest.limits import AnalysisLimitError, AnalysisLimits, analysis_limits  # noqa: E402
from watershed.ingest.points import catalog_for, parse_query, query_points  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "analysis_bench.json"
CATALOG = Catalog.from_dict({"tables": {"default.t": {"columns": ["uid", "a"]}}})
#: high enough for the largest statement of the bench
RAISED = AnalysisLimits(analysis_max_chars=10_000_000, analysis_max_tokens=10_000_000, analysis_seconds=600)


def chain(terms: int) -> str:
    return " || ".join(["uid"] * terms)


def alternating(terms: int) -> str:
    return "uid" + "".join(" + uid" if i % 2 else " - uid" for i in range(1, terms))


#: the chains timed, by the name their rows print
CHAINS = {"||": chain, "+ -": alternating}


def authz_path(sql: str) -> None:
    statement = parse_query(sql, dialect="spark")
    catalog = catalog_for(statement, lambda wanted: {t: CATALOG.get(t) for t in wanted if CATALOG.get(t)})
    points = query_points(statement, catalog, dialect="spark")
    assert {s.column for s in points.columns[0].sources} == {"default.t.uid"}


def lineage_path(sql: str) -> None:
    result = extract_lineage(SqlTask(task_id="bench", sql=sql, dialect="spark"), CATALOG)
    assert not result.errors and result.columns[0].sources[0].id == "default.t.uid", result.errors


PATHS = {
    "authz": (authz_path, lambda expression: f"SELECT {expression} AS x FROM t"),
    "lineage": (lineage_path, lambda expression: f"INSERT INTO o SELECT {expression} AS x FROM t"),
}


def best_of(repeat: int, run, sql: str, deadline: bool = True) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()  # each run starts from the same heap, not the previous run's garbage
        began = time.perf_counter()
        with analysis_limits(RAISED, deadline="analysis_seconds" if deadline else None):
            run(sql)
        times.append(time.perf_counter() - began)
    return min(times)


def refusals(repeat: int) -> dict[str, dict[str, float | str]]:
    """Seconds each path takes to refuse an oversized statement under the default limits."""
    oversized = {
        "1 MiB": "SELECT uid FROM t WHERE a = '" + "x" * (1 << 20) + "'",
        "60,000 tokens": "SELECT uid || " + "||".join(["1"] * 30_000) + " FROM t",
        "50,000 brackets deep": "SELECT " + "(" * 50_000 + "uid" + ")" * 50_000 + " FROM t",
        "20,000 NOTs deep": "SELECT " + "NOT " * 20_000 + "uid FROM t",
        "20,000 IS NULLs deep": "SELECT uid" + " IS NULL" * 20_000 + " FROM t",
    }
    answers: dict[str, dict[str, float | str]] = {}
    for name, sql in oversized.items():
        for path, (run, _) in PATHS.items():
            times, setting = [], ""
            for _ in range(repeat):
                began = time.perf_counter()
                try:
                    with analysis_limits(deadline="analysis_seconds"):
                        run(sql if path == "authz" else "INSERT INTO o " + sql)
                except AnalysisLimitError as exc:
                    setting = exc.setting
                else:
                    raise SystemExit(f"{path}: {name} was not refused")
                times.append(time.perf_counter() - began)
            answers[f"{path}: {name}"] = {"seconds": round(min(times), 4), "limit": setting}
    return answers


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--terms", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(t) for t in args.terms.split(",")]

    growth: dict[str, dict] = {}
    for (path, (run, statement)), (name, expression) in product(PATHS.items(), CHAINS.items()):
        row = f"{path} {name}"
        run(statement(expression(10)))  # warm: the dialect's tokenizer and parser
        seconds = {terms: best_of(args.repeat, run, statement(expression(terms))) for terms in sizes}
        growth[row] = {"seconds": {str(t): round(s, 4) for t, s in seconds.items()}}
        print(f"{row:12s}" + "".join(f"  {t:>7,} terms {s:8.4f} s" for t, s in seconds.items()))
        if 10_000 in seconds and 100_000 in seconds:
            ratio = seconds[100_000] / seconds[10_000]
            growth[row]["ratio_100k_10k"] = round(ratio, 2)
            print(f"{'':12s}  100k / 10k = {ratio:.2f} (target <= 15: linear)")

    refused = refusals(args.repeat)
    for name, answer in refused.items():
        print(f"refused  {name:34s} {answer['seconds']:.4f} s  ({answer['limit']})")

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "commit": commit,
                "statements": {
                    "||": "SELECT uid || uid || ... FROM t",
                    "+ -": "SELECT uid + uid - uid + ... FROM t",
                },
                "repeat": args.repeat,
                "growth": growth,
                "target_ratio_100k_10k": 15,
                "refusal_seconds": refused,
                "refusal_max_seconds": max(a["seconds"] for a in refused.values()),
            },
            indent=2,
        )
        + "\n"
    )
    print(f"results: {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
