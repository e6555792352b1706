"""Where a Neo4j warm check's time goes (issue 37, "profile it before accepting it").

    .venv/bin/python bench/neo4j_warm_check_bench.py [--columns 3000] [--samples 400] [--warmup 100]

One local Neo4j started here (as `services up` starts it, bench/backends_bench.py `start_neo4j`)
under a temporary data directory, graph_bench's generated warehouse at `--columns`, and the
gateway's service as authz_bench and backends_bench build it (reads kept under the data stamp).
After `--warmup` unmeasured rounds, `--samples` rounds, each of these in turn (interleaved, so
the machine's load falls on all alike):

- `falkordb_rewrite`: the same check on a FalkorDB started beside it (graph/server.py, as
  backends_bench), loaded alike, its `queue_record` timed apart too (`falkordb_rewrite_python`:
  the same backend-independent work, measured on the other backend);
- `rewrite`: `AuthzService.rewrite` of one SELECT (a warm check: its reads are kept), whole;
  inside it, the `queue_record` call it makes is timed apart (`rewrite_queue_record`), and the
  rest (`rewrite_python`: the backend-independent work, the same code as on FalkorDB);
- `queue_record`: the store's call alone with an audit row of the same shape and the stamp now;
- `statement`: the same statement text and parameters run on a kept WRITE session directly;
- `statement_no_write`: the same statement whose stamp check fails (nothing written, nothing to
  commit): the stamp check and the round trip;
- `entry_alone`: the audit entry's MERGE alone (audit.QUEUED_ENTRIES), auto-commit: the write;
- `set_alone`: a one-property SET of one probe node, auto-commit (backends_bench's one-row
  write without the stamp's move): a commit that creates no node and touches no index;
- `return_1`: an auto-commit `RETURN 1` on the same kept WRITE session (a round trip's floor);
- `read_stamp`: the stamp check alone as an auto-commit read (`change_stamp`), no write.

The parts run on the kept session keep the server's `result_available_after` and
`result_consumed_after` from their summaries (whole milliseconds: read their means). Each
part's client CPU (this process's `process_time`) is kept beside its wall time: what of a
round trip is the Python driver's own work. The statement's text is read off the wire (three
`queue_record` calls, one text: the bench stops if they differ).
Then the statement's `PROFILE` plan (operators, db hits, rows) and the planning check: the same
text run again (cached) against new texts (a comment varied per run, so each is planned anew).
Writes bench/results/neo4j_warm_check_bench.json with the command. The machine is shared: read
the ratios inside the run, not the absolute times. Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.authz_bench import BENCH_USER, authz_service  # noqa: E402
from bench.backends_bench import start_neo4j  # noqa: E402
from bench.graph_bench import synthetic_catalog, synthetic_tasks  # noqa: E402
from watershed.api.service.audit import QUEUED_ENTRIES, audit_params  # noqa: E402
from watershed.graph.falkordb_store import FalkorDBStore  # noqa: E402
from watershed.graph.kept import DATA_STAMP  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402
from watershed.propagation.policy import default_policy  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "neo4j_warm_check_bench.json"
PROBE_SET = "MERGE (p:BenchProbe {id: 1}) SET p.n = $n"
PARTS = [
    "falkordb_rewrite",
    "rewrite",
    "queue_record",
    "statement",
    "statement_no_write",
    "entry_alone",
    "set_alone",
    "return_1",
    "read_stamp",
]


def summary_ms(values: list[float]) -> dict:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 3),
        "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 3),
        "mean": round(statistics.fmean(ordered), 3),
    }


def plan_rows(profile, depth: int = 0) -> list[dict]:
    """A PROFILE plan as rows, parent first: operator, db hits, rows, and its details."""
    args = profile.get("args", {})
    rows = [
        {
            "depth": depth,
            "operator": profile.get("operatorType"),
            "db_hits": profile.get("dbHits"),
            "rows": profile.get("rows"),
            "details": args.get("Details"),
        }
    ]
    for child in profile.get("children", []):
        rows += plan_rows(child, depth + 1)
    return rows


def entry_row(n: int) -> dict:
    return audit_params(BENCH_USER, "bench.warm_check", f"bench:{n}:{uuid.uuid4().hex}", None, {"n": n})


class _Recording:
    """The store's driver, with the text of each statement its sessions run recorded."""

    def __init__(self, driver, texts: list[str]) -> None:
        self.driver, self.texts = driver, texts

    def session(self, **kwargs):
        session = self.driver.session(**kwargs)
        run, texts = session.run, self.texts

        def recorded(query, params=None, **kw):
            texts.append(query)
            return run(query, params, **kw)

        session.run = recorded
        return session

    def __getattr__(self, name):
        return getattr(self.driver, name)


def queued_statement(graph, stamp: str) -> str:
    """The statement text `queue_record` sends (the store builds it; read here off the wire), the
    same for three entries: a text that varied per check would be planned per check."""
    texts: list[str] = []
    driver = graph.driver
    graph.driver = _Recording(driver, texts)
    try:
        for n in range(3):
            graph.queue_record(QUEUED_ENTRIES, entry_row(-2 - n), stamp=stamp)
    finally:
        graph.driver = driver
    if len(texts) != 3 or len(set(texts)) != 1:
        raise SystemExit(
            f"queue_record sent {len(set(texts))} texts in {len(texts)} statements for 3 entries"
        )
    return texts[0]


def timing_queue_record(graph, inner: list[float]):
    """`graph.queue_record` timed into `inner` from now on; the untimed method."""
    queue_record = graph.queue_record

    def timed(*args, **kwargs):
        began = time.perf_counter()
        try:
            return queue_record(*args, **kwargs)
        finally:
            inner.append(time.perf_counter() - began)

    graph.queue_record = timed
    return queue_record


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--columns", type=int, default=3000)
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--tables", type=int, default=20, help="tables, one SELECT each, cycled through")
    parser.add_argument("--replans", type=int, default=30, help="new statement texts in the planning check")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--neo4j-heap", default="512m")
    parser.add_argument("--neo4j-pagecache", default="128m")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    load_before = os.getloadavg()
    items = synthetic_tasks(args.columns, args.seed)
    catalog = synthetic_catalog(items, args.columns)
    with tempfile.TemporaryDirectory(prefix="neo4j-warm-check-") as tmp:
        # FalkorDB beside it: the same service's warm check, interleaved, for the split of the
        # whole into the backend-independent work and the store's call on each backend
        falkordb = ServerSpec("falkordb", "127.0.0.1", free_port(), Path(tmp), with_falkordb=True)
        start(falkordb)
        spec = None
        try:
            fgraph = FalkorDBStore(falkordb.host, falkordb.port, graph="neo4j_warm_check_bench")
            fgraph.ensure_schema()
            fgraph.upsert_catalog(catalog)
            fgraph.upsert_tasks(items)
            fservice = authz_service(fgraph, default_policy(), catalog, 3600.0)
            finner: list[float] = []
            timing_queue_record(fgraph, finner)
            falkordb_inner_ms: list[float] = []
            spec, graph = start_neo4j(Path(tmp), args.neo4j_heap, args.neo4j_pagecache)
            graph.ensure_schema()
            graph.clear()  # as backends_bench after its warm-up: the epoch's stamp node exists
            graph.upsert_catalog(catalog)
            graph.upsert_tasks(items)
            service = authz_service(graph, default_policy(), catalog, 3600.0)
            tables = sorted(t for t in catalog.tables if not t.startswith("filler"))[: args.tables]
            sqls = [f"SELECT c0, upper(c1), c2 FROM {t} WHERE c3 IS NOT NULL" for t in tables]
            stamp = graph.change_stamp(DATA_STAMP)
            query = queued_statement(graph, stamp)
            # a session kept for the whole run, as the store keeps one per thread
            session = graph.driver.session(database=graph.database, default_access_mode="WRITE")

            # queue_record as the service calls it, timed apart inside the rewrite
            inner: list[float] = []
            queue_record = timing_queue_record(graph, inner)
            times: dict[str, list[float]] = {p: [] for p in PARTS}
            cpu_times: dict[str, list[float]] = {p: [] for p in PARTS}
            inner_ms: list[float] = []
            #: the server's own times of the parts run on the kept session (whole ms, as Bolt reports)
            server: dict[str, dict[str, list[int]]] = {}

            def part(name: str, keep: bool, fn):
                """fn() timed: wall clock, and this process's CPU (the client's own work)."""
                began, cpu = time.perf_counter(), time.process_time()
                out = fn()
                if keep:
                    times[name].append(time.perf_counter() - began)
                    cpu_times[name].append(time.process_time() - cpu)
                    if hasattr(out, "result_available_after"):
                        kept = server.setdefault(name, {"available_after": [], "consumed_after": []})
                        kept["available_after"].append(out.result_available_after)
                        kept["consumed_after"].append(out.result_consumed_after)
                return out

            def falkordb_check(sql: str, keep: bool) -> None:
                finner.clear()
                part("falkordb_rewrite", keep, lambda: fservice.rewrite(BENCH_USER, sql, "spark"))
                if len(finner) != 1:
                    raise SystemExit(f"a FalkorDB warm check made {len(finner)} queue_record calls, not 1")
                if keep:
                    falkordb_inner_ms.append(finner[0])

            def neo4j_check(sql: str, keep: bool) -> None:
                inner.clear()
                rewrite = part("rewrite", keep, lambda: service.rewrite(BENCH_USER, sql, "spark"))
                if not rewrite.decision.allowed:
                    raise SystemExit(f"denied: {sql}: {rewrite.decision.error}")
                if len(inner) != 1:
                    raise SystemExit(f"a warm check made {len(inner)} queue_record calls, not 1")
                if keep:
                    inner_ms.append(inner[0])

            def once(n: int, keep: bool) -> None:
                sql = sqls[n % len(sqls)]
                # the backends' checks of one text in turns, each first every other round: the
                # second runs with the text's parse warm in the core's caches
                for check in (falkordb_check, neo4j_check) if n % 2 else (neo4j_check, falkordb_check):
                    check(sql, keep)
                row = entry_row(n)
                if (
                    part("queue_record", keep, lambda: queue_record(QUEUED_ENTRIES, row, stamp=stamp))
                    is not None
                ):
                    raise SystemExit("the data stamp moved during the bench")
                params = {"rows": [entry_row(n)], "stamp_name": DATA_STAMP, "stamp": stamp}
                part("statement", keep, lambda: session.run(query, params).consume())
                # the stamp check finding another stamp: the same statement, nothing written
                params = {"rows": [entry_row(n)], "stamp_name": DATA_STAMP, "stamp": "another"}
                part("statement_no_write", keep, lambda: session.run(query, params).consume())
                # the entry's MERGE alone, no stamp check
                rows = {"rows": [entry_row(n)]}
                part("entry_alone", keep, lambda: session.run(QUEUED_ENTRIES, rows).consume())
                # a write that creates nothing: one property of one node, the commit's floor
                part("set_alone", keep, lambda: session.run(PROBE_SET, {"n": n}).consume())
                part("return_1", keep, lambda: session.run("RETURN 1").consume())
                part("read_stamp", keep, lambda: graph.change_stamp(DATA_STAMP))

            gc.disable()
            try:
                for n in range(args.warmup):
                    once(n, keep=False)
                for n in range(args.samples):
                    once(args.warmup + n, keep=True)
            finally:
                gc.enable()
            graph.queue_record = queue_record

            result: dict = {p: summary_ms([1000 * t for t in times[p]]) for p in PARTS}
            result["client_cpu"] = {p: summary_ms([1000 * t for t in cpu_times[p]]) for p in PARTS}
            result["rewrite_queue_record"] = summary_ms([1000 * t for t in inner_ms])
            result["rewrite_python"] = summary_ms(
                [1000 * (w - q) for w, q in zip(times["rewrite"], inner_ms, strict=True)]
            )
            result["falkordb_rewrite_queue_record"] = summary_ms([1000 * t for t in falkordb_inner_ms])
            result["falkordb_rewrite_python"] = summary_ms(
                [1000 * (w - q) for w, q in zip(times["falkordb_rewrite"], falkordb_inner_ms, strict=True)]
            )
            for name, kept in server.items():
                for key, values in kept.items():
                    result[f"server_{name}_{key}"] = summary_ms([float(v) for v in values])

            session.run("MATCH (p:BenchProbe) DELETE p").consume()
            # the plan: PROFILE runs the statement (one more entry written)
            params = {"rows": [entry_row(-1)], "stamp_name": DATA_STAMP, "stamp": stamp}
            profiled = session.run("PROFILE " + query, params).consume()
            plan = plan_rows(profiled.profile)
            planner = {k: profiled.profile.get("args", {}).get(k) for k in ("planner", "runtime", "version")}

            # planning: the cached text against a new text per run (a varied comment)
            cached, fresh = [], []
            for n in range(args.replans):
                params = {"rows": [entry_row(10**6 + n)], "stamp_name": DATA_STAMP, "stamp": stamp}
                began = time.perf_counter()
                session.run(query, params).consume()
                cached.append(time.perf_counter() - began)
                params = {"rows": [entry_row(2 * 10**6 + n)], "stamp_name": DATA_STAMP, "stamp": stamp}
                began = time.perf_counter()
                session.run(f"/* warm check {uuid.uuid4().hex} */ " + query, params).consume()
                fresh.append(time.perf_counter() - began)
            planning = {
                "same_text_ms": summary_ms([1000 * t for t in cached]),
                "new_text_each_run_ms": summary_ms([1000 * t for t in fresh]),
            }
            session.close()
            graph.close()
            fgraph.close()
        finally:
            if spec is not None:
                stop(spec)
            stop(falkordb)

    out = {
        "command": " ".join(
            [
                ".venv/bin/python",
                shlex.quote("bench/neo4j_warm_check_bench.py"),
                *map(shlex.quote, sys.argv[1:]),
            ]
        ),
        "platform": platform.platform(),
        "columns": args.columns,
        "samples": args.samples,
        "warmup": args.warmup,
        "statement": query,
        "timings_ms": result,
        "planning": planning,
        "profile": {"planner": planner, "operators": plan},
        "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "note": "one server, interleaved; the machine was shared with other engineers' tests and a benchmark",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    for name, value in result.items():
        if name == "client_cpu":
            for part_name, cpu in value.items():
                print(
                    f"cpu {part_name:32} p50 {cpu['p50']:8.3f}  p90 {cpu['p90']:8.3f}  mean {cpu['mean']:8.3f}"
                )
            continue
        print(f"{name:36} p50 {value['p50']:8.3f}  p90 {value['p90']:8.3f}  mean {value['mean']:8.3f}")
    for name, value in planning.items():
        print(f"{name:36} p50 {value['p50']:8.3f}  p90 {value['p90']:8.3f}")
    print(json.dumps(planner))
    for row in plan:
        print(
            f"{'  ' * row['depth']}{row['operator']}  db hits {row['db_hits']}  rows {row['rows']}  {row['details']}"
        )


if __name__ == "__main__":
    main()
