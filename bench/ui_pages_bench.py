"""The steward UI's pages at 1M columns in a real headless Chromium: the home dashboard, search and
the impact of a root column with 2,000 downstream columns, each against the 1 s target and against
the app shell's own load in the same run.

    .venv/bin/python bench/ui_pages_bench.py [--columns 1000000] [--loads 15] [--snapshots 3]

Starts its own FalkorDB (data under /tmp), loads `--columns` columns with graph_bench's generator
plus bench/ui_render.fan_out_tasks (api_bench's `load_warehouse`: `big.src.c` gets a 2,000-column
downstream cone), seeds `pii` on `--seeds` layer-0 columns and propagates them in this process,
records a quarter of the seeded tables as protected (coverage_bench), and stores `--snapshots`
coverage snapshots on consecutive days with `coverage.refresh`, the call the nightly's coverage
step makes, so the dashboard has totals, groups and a trend to draw. Then `watershed serve`
(a subprocess) on that graph, and Chromium (Debian's /usr/bin/chromium through Playwright)
logs in through the UI and loads each page `--loads` times after `--warmup` loads, round robin:

- shell: #/ddl/<a table> until the header shows who is logged in (the modules and GET /me every
  page pays first: the baseline);
- dashboard: #/ (the home page) until the snapshot's "As of" line is drawn (GET /coverage);
- search, prefix: #/search?q=l3.t17 (a prefix filling a page) until the result count is drawn;
- search, id: #/search?q=<a whole column id> (fewer prefix matches than a page: the route goes
  on to its substring stage) until the result count is drawn;
- impact: #/impact/big.src.c (the page's default, the nearest 500 listed of 2,000) until the
  summary is drawn; impact, all: the same with ?limit=5000 (all 2,000 rows drawn).

Each load starts from about:blank, so it is a real navigation (modules from the browser's cache).
The time is the browser's: an init script watches the DOM and records performance.now() (whose
origin is the navigation's start) once the frame that first holds the page's answer element is
painted (a task queued from that frame's animation callback), so no Playwright round trip is counted. The API requests the load made are read from the
Resource Timing entries, so a slow page says which request it waited for.

Prints median and p95 per page, each against 1 s and as a ratio to the shell's median, and writes
bench/results/ui_pages_bench.json. Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.api_bench import (  # noqa: E402
    BIG_COLUMN,
    GRAPH,
    load_warehouse,
    seed_and_propagate,
    start_api,
    stop_api,
)
from bench.coverage_bench import protect_some_roots  # noqa: E402
from bench.graph_bench import percentile  # noqa: E402
from bench.ui_render import chromium, login, measure_page_load, page_marks_script  # noqa: E402
from watershed.graph.falkordb_store import FalkorDBStore  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402

TARGET_MS = 1000.0

SHELL = "[data-testid=role]"


def pages(shell_table: str, prefix: str, column_id: str) -> dict[str, tuple[str, str]]:
    """page name -> (hash route, the selector drawn when its answer is on screen)"""
    big = quote(BIG_COLUMN, safe="")
    return {
        "shell (GET /me)": (f"#/ddl/{quote(shell_table, safe='')}", SHELL),
        "dashboard": ("#/", "[data-testid=coverage-as-of]"),
        "search, prefix": (f"#/search?q={quote(prefix)}", "[data-testid=search-count]"),
        "search, id": (f"#/search?q={quote(column_id)}", "[data-testid=search-count]"),
        "impact": (f"#/impact/{big}", "[data-testid=impact-summary]"),
        "impact, all": (f"#/impact/{big}?limit=5000", "[data-testid=impact-summary]"),
    }


def summarise(loads: list[dict], shell_median: float | None) -> dict:
    times = [load["answer"] for load in loads]
    shells = [load["marks"][SHELL] for load in loads if load["marks"].get(SHELL)]
    median, p95 = statistics.median(times), percentile(times, 0.95)
    requests: dict[str, list[float]] = {}
    for load in loads:
        for request in load["requests"]:
            requests.setdefault(request["path"], []).append(request["ms"])
    return {
        "loads": len(times),
        "median_ms": round(median, 1),
        "p95_ms": round(p95, 1),
        "max_ms": round(max(times), 1),
        "shell_in_load_median_ms": round(statistics.median(shells), 1) if shells else None,
        "target_ms": TARGET_MS,
        "target_met": p95 < TARGET_MS,
        "over_shell_median": round(median / shell_median, 2) if shell_median else None,
        "requests_median_ms": {path: statistics.median(ms) for path, ms in requests.items()},
        # from the last API answer's arrival to the answer drawn: the browser's own share
        "after_last_answer_median_ms": round(
            statistics.median(
                load["answer"] - max(r["start_ms"] + r["ms"] for r in load["requests"]) for load in loads
            ),
            1,
        ),
        "answer_text": loads[-1]["text"],
        "times_ms": [round(t, 1) for t in times],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--columns", type=int, default=1_000_000)
    parser.add_argument("--seeds", type=int, default=50, help="layer-0 columns seeded with pii")
    parser.add_argument("--snapshots", type=int, default=3, help="coverage snapshots (days) stored")
    parser.add_argument("--loads", type=int, default=15, help="measured loads per page")
    parser.add_argument("--warmup", type=int, default=2, help="loads per page before measuring")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "ui_pages_bench.json")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    from watershed.api.service import coverage
    from watershed.api.service.accounts.store import AccountStore
    from watershed.propagation.policy import default_policy

    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="watershed-ui-pages-bench-", dir="/tmp"))
    spec = ServerSpec("falkordb", "127.0.0.1", free_port(), work, with_falkordb=True)
    start(spec)
    service = None
    try:
        graph = FalkorDBStore(spec.host, spec.port, graph=GRAPH)
        graph.ensure_schema()
        load = load_warehouse(graph, args.columns, args.seed)
        stats = graph.stats()
        print(f"graph: {stats.columns} columns (loaded in {load['load_seconds']:.0f} s)", flush=True)
        propagation = seed_and_propagate(graph, spec.port, args.seeds, rng)
        protected_tables = protect_some_roots(graph, rng)
        policy = default_policy()
        computes = []
        for day in range(args.snapshots):
            began = time.perf_counter()
            snapshot = coverage.refresh(graph, policy, f"2026-01-{day + 1:02d}")
            computes.append(round(time.perf_counter() - began, 2))
        totals = snapshot.totals.model_dump()
        print(
            f"propagation cone {propagation['cone']}; {protected_tables} tables protected; "
            f"coverage computes {computes} s; totals {totals}",
            flush=True,
        )
        downstream = graph.read(
            "MATCH (:Column {id: $id})-[:FLOWS_TO*1..3]->(d:Column) RETURN count(DISTINCT d)",
            {"id": BIG_COLUMN},
        )[0][0]

        accounts = AccountStore(graph)
        accounts.add("bench", "admin", None, actor="bench")
        token = accounts.create_token("bench", actor="bench").token
        deep = [
            row[0]
            for row in graph.read("MATCH (c:Column) WHERE c.id STARTS WITH 'l3.' RETURN c.id LIMIT 5000")
        ]
        column_id = deep[rng.randrange(len(deep))]
        shell_table = column_id.rsplit(".", 1)[0]
        prefix = "l3.t17"
        service = start_api(spec.port, work)
        routes = pages(shell_table, prefix, column_id)
        loads: dict[str, list[dict]] = {name: [] for name in routes}
        with chromium() as browser:
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.add_init_script(page_marks_script({s for _, s in routes.values()}))
            page = context.new_page()
            page.set_default_timeout(60_000)
            login(page, service.base_url, token)
            for i in range(args.warmup + args.loads):
                # round robin: every page meets the same machine (2 cores shared with the server and FalkorDB)
                for name, (route, selector) in routes.items():
                    result = measure_page_load(page, f"{service.base_url}/{route}", selector, SHELL)
                    if i >= args.warmup:
                        loads[name].append(result)
                print(f"  round {i + 1}/{args.warmup + args.loads}", flush=True)
            context.close()
        graph.close()
    finally:
        if service is not None:
            stop_api(service)
        stop(spec)
        shutil.rmtree(work, ignore_errors=True)

    shell = summarise(loads["shell (GET /me)"], None)
    rows = {name: summarise(results, shell["median_ms"]) for name, results in loads.items()}
    head = f"{'page (ms from navigation)':28} {'median':>7} {'p95':>7} {'max':>7} {'x shell':>8}  < {TARGET_MS:.0f} ms (p95)"
    print(head)
    print("-" * len(head))
    for name, row in rows.items():
        print(
            f"{name:28} {row['median_ms']:7.0f} {row['p95_ms']:7.0f} {row['max_ms']:7.0f} "
            f"{row['over_shell_median']:8.2f}  {'met' if row['target_met'] else 'MISSED'}"
        )
        for path, ms in row["requests_median_ms"].items():
            print(f"{'':4}{path[:70]:70} {ms:7.0f}")
    report = {
        "command": " ".join([".venv/bin/python bench/ui_pages_bench.py", *sys.argv[1:]]),
        "columns": stats.columns,
        "column_edges": stats.column_edges,
        "load_seconds": round(load["load_seconds"], 1),
        "propagation": propagation,
        "protected_tables": protected_tables,
        "coverage_compute_seconds": computes,
        "coverage_totals": totals,
        "impact_root": BIG_COLUMN,
        "impact_root_downstream_columns": downstream,
        "search_queries": {"prefix": prefix, "id": column_id},
        "target_ms": TARGET_MS,
        "pages": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results written to {args.out}")


if __name__ == "__main__":
    main()
