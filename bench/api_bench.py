"""Steward service latency over HTTP against the same graph work done directly, and the UI's big-lineage render time.

    .venv/bin/python bench/api_bench.py [--columns 1000000] [--samples 300] [--seeds 50] [--renders 5]

Starts its own FalkorDB on a free port, loads `--columns` columns with graph_bench's
generator (8 layers) plus a fan-out giving `big.src.c` a 2,000-column downstream cone
(bench/ui_render.py), marks `--seeds` random layer-0 columns `pii` and propagates them
in this process (the `--local` code path), creates an admin and a token through the
accounts module and starts `watershed serve` (a subprocess, as in production) on that graph.

Then, for `--samples` random columns of layers 3-7 (so a 3-hop upstream walk has hops
to take), interleaved per sample:

- search: GET /search?q=<table id>.c<first digit>&kind=column (a prefix that fills a page
  of 50 by itself); "search, few": q = a whole column id (fewer prefix matches than a page,
  so the route goes on to its substring stage, a scan); direct = the graph reads that request makes, recorded once by
  running the route's function in this process and then replayed through GraphStore.read;
- column page: GET /columns/{id}; direct = GraphStore.read of the route's COLUMN query;
- 3-hop lineage: GET /lineage/{id}?direction=upstream&depth=3 (the API's default node
  limit, 500); direct = GraphStore.bounded_lineage with the same arguments;
- why: GET /nodes/{id}/tags/pii/why for columns holding a propagated pii tag; direct =
  the route's calls (node exists, GraphTagStore.tags_of, why_paths).

HTTP times run from sending the request to the last byte of the answer on one keep-alive
httpx client (the client's JSON decoding is not counted); direct times are the Python
calls on a GraphStore of this process. Also the fixed cost of a request: GET /health
(no auth, no graph) and GET /me (direct = AccountStore.authenticate, the token lookup every
request makes). All rows are measured round robin, so they meet the same machine (its 2
cores are shared with the client and FalkorDB). Last, Chromium (Playwright,
Debian's /usr/bin/chromium) logs in through the UI, opens big.src.c's column page
(downstream, depth 10, limit 5000) `--renders` times and reads the render time the
page measured itself (window.__watershed.lastRenderMs).

Prints one table (query, direct p50/p99, HTTP p50/p99, ratios, target met) and writes
bench/results/api_bench.json. Targets (issue 12): p99 < 50 ms for the column page and
3-hop lineage over HTTP, HTTP <= 1.5x the direct query, 2,000-node render < 2 s.
Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.graph_bench import LAYERS, percentile, synthetic_catalog, synthetic_tasks  # noqa: E402
from bench.ui_render import chromium, fan_out_tasks, login, measure_lineage_render  # noqa: E402
from watershed.graph.falkordb_store import FalkorDBStore  # noqa: E402
from watershed.graph.lineage import SqlTask  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402

GRAPH = "api_bench"
BIG_COLUMN = "big.src.c"
TAG = "pii"
#: the acceptance targets of issue 12
P99_TARGET_MS = 50.0
RATIO_TARGET = 1.5
RENDER_TARGET_MS = 2000.0
P99_TARGETED = {"column page", "3-hop lineage"}


def timed(fn: Callable[[], object]) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


# ------------------------------------------------------------------ the warehouse


def load_warehouse(graph: FalkorDBStore, columns: int, seed: int) -> dict[str, float]:
    items = synthetic_tasks(columns, seed)
    began = time.perf_counter()
    graph.upsert_catalog(synthetic_catalog(items, columns))
    for at in range(0, len(items), 1000):
        graph.upsert_tasks(items[at : at + 1000])
    load_seconds = time.perf_counter() - began
    from watershed.ingest.extract import extract_lineage

    fan_out = []
    for task_id, sql in fan_out_tasks(root_table="big.src", column="c").items():
        task = SqlTask(task_id=task_id, sql=sql)
        lineage = extract_lineage(task)
        if lineage.errors:
            raise SystemExit(f"fan-out task {task_id}: {lineage.errors}")
        fan_out.append((task, lineage))
    graph.upsert_tasks(fan_out)
    return {"load_seconds": load_seconds}


def seed_and_propagate(graph: FalkorDBStore, port: int, seeds: int, rng: random.Random) -> dict:
    """`pii` on `seeds` random layer-0 columns, then a full run in this process (the `propagate --local` path)."""
    from watershed.propagation.coordinator import local_runner, propagate
    from watershed.propagation.graph_store import GraphTagStore
    from watershed.propagation.policy import default_policy
    from watershed.propagation.run_state import RunState
    from watershed.propagation.settings import PropagationSettings

    policy = default_policy()
    tags = GraphTagStore(graph, policy)
    layer0 = [row[0] for row in graph.read("MATCH (c:Column) WHERE c.id STARTS WITH 'l0.' RETURN c.id")]
    chosen = rng.sample(layer0, min(seeds, len(layer0)))
    for column in chosen:
        tags.set_tag(column, TAG, ["L3"], by="bench")
    # The run's lock and record live in Redis: the FalkorDB server is one, database 1 keeps them apart.
    settings = PropagationSettings(
        falkordb_port=port, graph_name=GRAPH, celery_broker=f"redis://127.0.0.1:{port}/1"
    )
    state = RunState.from_url(settings.broker_url(), GRAPH)
    began = time.perf_counter()
    record = propagate(graph, policy, state, local_runner, full=True, settings=settings)
    seconds = time.perf_counter() - began
    return {
        "seeds": len(chosen),
        "cone": record.cone,
        "layers": len(record.layers),
        "nodes_processed": record.nodes_processed,
        "seconds": round(seconds, 2),
    }


# ------------------------------------------------------------------ the service


@dataclass
class Service:
    process: subprocess.Popen
    base_url: str
    log: Path


def start_api(falkordb_port: int, work: Path) -> Service:
    port = free_port()
    env = {
        **os.environ,
        "WATERSHED_FALKORDB_HOST": "127.0.0.1",
        "WATERSHED_FALKORDB_PORT": str(falkordb_port),
        "WATERSHED_GRAPH_NAME": GRAPH,
        "WATERSHED_CELERY_BROKER": f"redis://127.0.0.1:{falkordb_port}/1",
        "WATERSHED_DATA_DIR": str(work / "data"),
        "PYTHONPATH": str(ROOT),
    }
    watershed = Path(sys.executable).parent / "watershed"
    log = work / "api.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(watershed), "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            cwd=work,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    service = Service(process, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"watershed serve exited with {process.returncode}:\n{log.read_text()[-4000:]}")
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"{service.base_url}/api/v1/health", timeout=2) as answer,
        ):
            if answer.status == 200:
                return service
        time.sleep(0.2)
    stop_api(service)
    raise SystemExit(f"watershed serve did not answer within 120 s:\n{log.read_text()[-4000:]}")


def stop_api(service: Service) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(service.process.pid, signal.SIGTERM)
    try:
        service.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(service.process.pid, signal.SIGKILL)
        service.process.wait()


# ------------------------------------------------------------------ the queries


class RecordingGraph:
    """A GraphStore stand-in for one in-process route call: passes reads on and keeps them for replay."""

    def __init__(self, graph: FalkorDBStore) -> None:
        self.graph = graph
        self.reads: list[tuple[str, dict]] = []

    def read(self, query: str, params: dict | None = None):
        self.reads.append((query, dict(params or {})))
        return self.graph.read(query, params)


def search_reads(graph: FalkorDBStore, q: str) -> list[tuple[str, dict]]:
    """The graph reads GET /search?q=...&kind=column makes, found by running the route's function here."""
    from watershed.api.http.paging import DEFAULT_LIMIT, PageRequest
    from watershed.api.http.routers.search import search

    recorder = RecordingGraph(graph)
    search(
        q=q,
        kind="column",
        db=None,
        tag=[],
        page=PageRequest(limit=DEFAULT_LIMIT),
        _=None,
        svc=SimpleNamespace(graph=recorder, policy=None),
    )
    return recorder.reads


@dataclass
class Query:
    name: str
    #: (direct call, HTTP path) per sample
    cases: list[tuple[Callable[[], object], str]]
    #: the first this many cases only warm up (not measured)
    warmup: int
    direct: list[float] = field(default_factory=list)
    http: list[float] = field(default_factory=list)


def wide_prefix(column: str) -> str:
    """`l3.t1` for `l3.t1742.c5`: the table number's first two digits, a prefix of 50 columns or more."""
    layer, table = column.split(".")[:2]
    return f"{layer}.{table[:3]}"


def build_queries(
    graph: FalkorDBStore,
    columns: list[str],
    why_columns: list[str],
    warmup: int,
    search: int,
    few: int,
) -> list[Query]:
    from watershed.api.http.routers.tables import COLUMN
    from watershed.api.service.provenance import why_paths
    from watershed.propagation import queries as tag_queries
    from watershed.propagation.graph_store import GraphTagStore
    from watershed.propagation.policy import default_policy

    tag_store = GraphTagStore(graph, default_policy())
    exists = tag_queries.node_exists("Column")

    def search_case(q: str):
        reads = search_reads(graph, q)

        def direct() -> None:
            for query, params in reads:
                graph.read(query, params)

        return direct, f"/search?q={quote(q)}&kind=column"

    def why_direct(column: str) -> None:
        graph.read(exists, {"id": column})
        tag_store.tags_of([column])
        why_paths(tag_store, column, TAG, 20)

    return [
        Query("search", [search_case(wide_prefix(c)) for c in columns[: 3 + search]], 3),
        Query(
            "column page",
            [(lambda c=c: graph.read(COLUMN, {"id": c}), f"/columns/{quote(c, safe='')}") for c in columns],
            warmup,
        ),
        Query(
            "3-hop lineage",
            [
                (
                    lambda c=c: graph.bounded_lineage(c, "upstream", depth=3, limit=500),
                    f"/lineage/{quote(c, safe='')}?direction=upstream&depth=3",
                )
                for c in columns
            ],
            warmup,
        ),
        Query(
            "why",
            [(lambda c=c: why_direct(c), f"/nodes/{quote(c, safe='')}/tags/{TAG}/why") for c in why_columns],
            warmup,
        ),
        # a prefix with fewer matches than a page: the route goes on to its substring stage
        Query("search, few", [search_case(c) for c in columns[: 2 + few]], 2),
    ]


def measure(queries: list[Query], client) -> None:
    def get(path: str) -> None:
        answer = client.get(path)
        if answer.status_code != 200:
            raise SystemExit(f"GET {path}: {answer.status_code} {answer.text[:500]}")

    for query in queries:
        for direct, path in query.cases[: query.warmup]:
            direct()
            get(path)
    rounds = max(len(query.cases) - query.warmup for query in queries)
    print(f"measuring {', '.join(q.name for q in queries)}: {rounds} rounds", flush=True)
    # Round robin over the queries, so every row meets the same machine (the 2 cores are shared);
    # direct and HTTP alternate which goes first, so neither always meets the warmer cache.
    for i in range(rounds):
        for query in queries:
            if query.warmup + i >= len(query.cases):
                continue
            direct, path = query.cases[query.warmup + i]
            if i % 2:
                query.http.append(timed(lambda p=path: get(p)))
                query.direct.append(timed(direct))
            else:
                query.direct.append(timed(direct))
                query.http.append(timed(lambda p=path: get(p)))
        if i and i % 50 == 0:
            print(f"  {i} rounds", flush=True)


def fixed_cost_queries(graph: FalkorDBStore, token: str, samples: int, warmup: int) -> list[Query]:
    """What every request pays: /health (no auth, no graph; direct: nothing) and /me (direct: the token lookup)."""
    from watershed.api.service.accounts.store import AccountStore

    accounts = AccountStore(graph)
    count = warmup + samples
    return [
        Query("health", [(lambda: None, "/health")] * count, warmup),
        Query("me (auth)", [(lambda: accounts.authenticate(token), "/me")] * count, warmup),
    ]


def render_times(base_url: str, token: str, renders: int) -> list[dict]:
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.set_default_timeout(60_000)
        login(page, base_url, token)
        timings = []
        for _ in range(renders):
            timing = measure_lineage_render(page, base_url, BIG_COLUMN, direction="downstream", limit=5000)
            timings.append(
                {
                    "render_ms": timing.render_ms,
                    "fetch_ms": timing.fetch_ms,
                    "nodes": timing.nodes,
                    "edges": timing.edges,
                    "truncated": timing.truncated,
                }
            )
        context.close()
    return timings


# ------------------------------------------------------------------ report


def summary(query: Query) -> dict:
    d50, d99 = statistics.median(query.direct) * 1000, percentile(query.direct, 0.99) * 1000
    h50, h99 = statistics.median(query.http) * 1000, percentile(query.http, 0.99) * 1000
    if query.name == "health":  # nothing to compare with: the floor of any request
        return {"samples": len(query.http), "http_p50_ms": round(h50, 3), "http_p99_ms": round(h99, 3)}
    ratio50, ratio99 = h50 / d50, h99 / d99
    # /me has no target of its own: it is the auth share of every other row
    ratio_met = None if query.name == "me (auth)" else ratio50 <= RATIO_TARGET
    p99_met = h99 < P99_TARGET_MS if query.name in P99_TARGETED else None
    return {
        "samples": len(query.http),
        "direct_p50_ms": round(d50, 3),
        "direct_p99_ms": round(d99, 3),
        "http_p50_ms": round(h50, 3),
        "http_p99_ms": round(h99, 3),
        "ratio_p50": round(ratio50, 2),
        "ratio_p99": round(ratio99, 2),
        "http_minus_direct_p50_ms": round(h50 - d50, 3),
        "p99_target_ms": P99_TARGET_MS if query.name in P99_TARGETED else None,
        "p99_target_met": p99_met,
        "ratio_target_met": ratio_met,
    }


def print_table(rows: dict[str, dict], render: dict | None) -> None:
    head = (
        f"{'query (ms)':14} {'direct p50':>10} {'p99':>7} {'http p50':>9} {'p99':>7} "
        f"{'ratio p50':>9} {'p99':>5} {'http-direct':>11}  target"
    )
    print(head)
    print("-" * len(head))
    for name, r in rows.items():
        if "ratio_p50" not in r:
            print(f"{name:14} {'-':>10} {'-':>7} {r['http_p50_ms']:9.2f} {r['http_p99_ms']:7.2f}")
            continue
        verdicts = []
        if r["p99_target_met"] is not None:
            verdicts.append(f"p99<{P99_TARGET_MS:.0f}ms {'met' if r['p99_target_met'] else 'MISSED'}")
        if r["ratio_target_met"] is not None:
            verdicts.append(f"<={RATIO_TARGET}x {'met' if r['ratio_target_met'] else 'MISSED'}")
        verdict = ", ".join(verdicts) or "-"
        print(
            f"{name:14} {r['direct_p50_ms']:10.2f} {r['direct_p99_ms']:7.2f} {r['http_p50_ms']:9.2f} "
            f"{r['http_p99_ms']:7.2f} {r['ratio_p50']:9.2f} {r['ratio_p99']:5.2f} "
            f"{r['http_minus_direct_p50_ms']:11.2f}  {verdict}"
        )
    if render is not None:
        print(
            f"2,000-node lineage render in Chromium: median {render['median_ms']:.0f} ms, "
            f"max {render['max_ms']:.0f} ms over {render['renders']} loads ({render['nodes']} nodes, "
            f"{render['edges']} edges, lineage request {render['fetch_median_ms']:.0f} ms) -> "
            f"{'met' if render['target_met'] else 'MISSED'} (< {RENDER_TARGET_MS:.0f} ms)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--columns", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=300, help="random columns per query")
    parser.add_argument("--warmup", type=int, default=30, help="requests per query before measuring")
    parser.add_argument(
        "--search-samples", type=int, default=100, help="searches (each may scan the id index)"
    )
    parser.add_argument(
        "--few-samples", type=int, default=20, help="searches whose prefix matches under a page (slow)"
    )
    parser.add_argument("--seeds", type=int, default=50, help="layer-0 columns seeded with pii")
    parser.add_argument("--renders", type=int, default=5, help="page loads of the 2,000-node lineage")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "api_bench.json")
    args = parser.parse_args()
    # `timeout` and schedulers stop with SIGTERM: the servers started here are stopped all the same
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    import httpx

    from watershed.api.service.accounts.store import AccountStore
    from watershed.propagation.graph_store import GraphTagStore
    from watershed.propagation.policy import default_policy

    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="watershed-api-bench-"))
    spec = ServerSpec("falkordb", "127.0.0.1", free_port(), work, with_falkordb=True)
    start(spec)
    service = None
    try:
        graph = FalkorDBStore(spec.host, spec.port, graph=GRAPH)
        graph.ensure_schema()
        load = load_warehouse(graph, args.columns, args.seed)
        stats = graph.stats()
        print(
            f"graph: {stats.columns} columns, {stats.column_edges} column edges "
            f"(loaded in {load['load_seconds']:.0f} s)",
            flush=True,
        )
        propagation = seed_and_propagate(graph, spec.port, args.seeds, rng)
        print(
            f"propagation (in this process): {propagation['seeds']} layer-0 columns seeded {TAG}, "
            f"cone {propagation['cone']} nodes, {propagation['layers']} layers, {propagation['seconds']} s",
            flush=True,
        )
        accounts = AccountStore(graph)
        accounts.add("bench", "admin", None, actor="bench")
        token = accounts.create_token("bench", actor="bench").token

        deep = [
            row[0]
            for row in graph.read(
                "MATCH (c:Column) WHERE c.id STARTS WITH 'l' RETURN c.id ORDER BY c.id",
            )
            if 3 <= int(row[0][1 : row[0].index(".")]) < LAYERS
        ]
        columns = rng.sample(deep, min(args.samples + args.warmup, len(deep)))
        tag_store = GraphTagStore(graph, default_policy())
        tagged = sorted(tag_store.tagged_nodes())
        held = tag_store.tags_of(tagged)
        propagated = [
            n
            for n in tagged
            if n.count(".") == 2 and held[n].get(TAG) and held[n][TAG].origin == "propagated"
        ]
        why_columns = [propagated[rng.randrange(len(propagated))] for _ in columns] if propagated else []
        if not why_columns:
            raise SystemExit("no column holds a propagated pii tag: raise --seeds")

        service = start_api(spec.port, work)
        queries = build_queries(
            graph, columns, why_columns, args.warmup, args.search_samples, args.few_samples
        )
        with httpx.Client(
            base_url=f"{service.base_url}/api/v1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        ) as client:
            queries += fixed_cost_queries(graph, token, args.samples, args.warmup)
            measure(queries, client)
        rows = {query.name: summary(query) for query in queries}

        render = None
        if args.renders:
            timings = render_times(service.base_url, token, args.renders)
            times = [t["render_ms"] for t in timings]
            render = {
                "renders": len(timings),
                "median_ms": statistics.median(times),
                "max_ms": max(times),
                "fetch_median_ms": statistics.median(t["fetch_ms"] for t in timings),
                "nodes": timings[0]["nodes"],
                "edges": timings[0]["edges"],
                "truncated": timings[0]["truncated"],
                "target_ms": RENDER_TARGET_MS,
                "target_met": max(times) < RENDER_TARGET_MS,
                "loads": timings,
            }
        graph.close()
    finally:
        if service is not None:
            stop_api(service)
        stop(spec)
        shutil.rmtree(work, ignore_errors=True)

    print_table(rows, render)
    report = {
        "columns": stats.columns,
        "column_edges": stats.column_edges,
        "load_seconds": round(load["load_seconds"], 1),
        "propagation": propagation,
        "samples": args.samples,
        "warmup": args.warmup,
        "targets": {"p99_ms": P99_TARGET_MS, "http_over_direct": RATIO_TARGET, "render_ms": RENDER_TARGET_MS},
        "queries": rows,
        "render": render,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results written to {args.out}")


if __name__ == "__main__":
    main()
