"""The column page's latency while a full propagation runs, and what causes it (issue 16).

    .venv/bin/python bench/api_during_propagation_bench.py [--columns 300000] [--other-batches 500] [--threads 8]
        [--without-snapshots]

Builds one warehouse graph (scale_bench's generator, harvest stage, workers and API), then samples
GET /columns/{id} over HTTP (scale_bench.ColumnPageSampler) in each phase, measured in one run so
the variants share the machine's noise:

- idle: nothing else runs;
- cpu: as many busy-looping processes as the propagation keeps busy (the worker's pool processes
  plus the coordinator), no graph write: CPU contention alone;
- propagation: a full propagation (scale_bench's `propagate` stage) at the default batch size;
- propagation_batch=N: the same at each of --other-batches nodes per batch (a worker reads its batch
  in one query and writes it in one statement, so the batch bounds how long one write holds
  FalkorDB's graph lock);
- with --without-snapshots: the default batch with FalkorDB's periodic snapshots off (each one forks
  the server and writes the whole graph on a core of its own), the append-only log kept;
- all of them again, interleaved, so a change in the machine's load shows;
- with --threads: FalkorDB restarted at each THREAD_COUNT, then idle and the propagations again.

A full run clears every propagated tag at its start (in statements of its batch size), so every
run writes every tag again.

Beside the HTTP sampler a second thread times the page's own graph reads on their own connection
(the token lookup `AUTH_TOKEN` and the page's `COLUMN` query): their p99 against the page's
separates the wait in the graph from the wait in the API process. After each phase FalkorDB's
GRAPH.SLOWLOG gives its slowest queries' execution times (the longest write is the longest a
reader can queue behind it), and INFO the forks, snapshots and log rewrites the phase caused.

Ratios (phase p99 / idle p99) and everything else go to bench/results/api_during_propagation_bench.json.
Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.scale_bench import (  # noqa: E402
    COLUMNS_PER_TASK,
    DATA_TABLES,
    ColumnPageSampler,
    PeakSampler,
    bench_admin_token,
    latency,
    run_stage,
    start_chain_services,
    stop_workers,
    wait_for_workers,
)

RESULTS = REPO / "bench" / "results" / "api_during_propagation_bench.json"


class GraphReadSampler(threading.Thread):
    """The column page's graph reads, timed apart on their own connection: {query name: [seconds]}."""

    def __init__(self, port: int, graph: str, token_id: str, columns: list[str]) -> None:
        super().__init__(daemon=True)
        self.port, self.graph_name, self.token_id, self.columns = port, graph, token_id, columns
        self.times: dict[str, list[float]] = {"auth_token": [], "column": []}
        self.stopping = threading.Event()

    def run(self) -> None:
        import random

        from watershed.api.http.routers.tables import COLUMN
        from watershed.api.service.accounts.store import AUTH_TOKEN
        from watershed.graph.falkordb_store import FalkorDBStore

        graph = FalkorDBStore("127.0.0.1", self.port, graph=self.graph_name)
        rng = random.Random(13)
        while not self.stopping.is_set():
            for name, query, params in (
                ("auth_token", AUTH_TOKEN, {"id": self.token_id}),
                ("column", COLUMN, {"id": rng.choice(self.columns)}),
            ):
                began = time.perf_counter()
                graph.read(query, params)
                self.times[name].append(time.perf_counter() - began)
            self.stopping.wait(0.05)


def slowlog(port: int, graph: str) -> list[dict]:
    """FalkorDB's slowest recent queries on `graph` (its 10 slowest), slowest first; then reset."""
    import redis

    client = redis.Redis("127.0.0.1", port)
    entries = client.execute_command("GRAPH.SLOWLOG", graph)
    with contextlib.suppress(redis.ResponseError):
        client.execute_command("GRAPH.SLOWLOG", graph, "RESET")
    out = []
    for entry in entries:  # [time, command, query, ms, parameters]
        command, query, ms = entry[1], entry[2], entry[3]
        text = query.decode() if isinstance(query, bytes) else str(query)
        out.append(
            {
                "command": command.decode() if isinstance(command, bytes) else str(command),
                "ms": round(float(ms), 1),
                "query": text[:120],
            }
        )
    return sorted(out, key=lambda e: -e["ms"])


def persistence_counters(port: int) -> dict:
    """FalkorDB's fork and save counters. The server forks for a snapshot, a log rewrite and its
    indexes' garbage collector; its main thread stops for each fork (60-140 ms at 2M columns), and
    a snapshot or rewrite first waits for the running queries (its log's "Fork preparation time")."""
    import redis

    client = redis.Redis("127.0.0.1", port)
    stats, persistence = client.info("stats"), client.info("persistence")
    return {
        "forks": int(stats.get("total_forks", 0)),
        "latest_fork_ms": round(int(stats.get("latest_fork_usec", 0)) / 1000, 1),
        "snapshots": int(persistence.get("rdb_saves", 0)),
        "log_rewrites": int(persistence.get("aof_rewrites", 0)),
    }


def counted(before: dict, after: dict) -> dict:
    """What a phase added to the counters (and the latest fork's duration)."""
    return {
        **{k: after[k] - before[k] for k in ("forks", "snapshots", "log_rewrites")},
        "latest_fork_ms": after["latest_fork_ms"],
    }


def measure(name: str, run, svc, token: str, token_id: str, columns: list[str], config: dict) -> dict:
    """Sample the page over HTTP and its graph reads directly while `run()` runs; the phase's numbers."""
    slowlog(config["falkordb_port"], config["graph"])  # reset
    counters = persistence_counters(config["falkordb_port"])
    page = ColumnPageSampler(svc.base_url, token, columns)
    reads = GraphReadSampler(config["falkordb_port"], config["graph"], token_id, columns)
    page.start()
    reads.start()
    began = time.monotonic()
    extra = run() or {}
    seconds = round(time.monotonic() - began, 2)
    page.stopping.set()
    reads.stopping.set()
    page.join()
    reads.join()
    result = {
        "seconds": seconds,
        "page": latency(page.times[5:] if name == "idle" else page.times, page.errors),
        "graph_reads": {q: latency(times, 0) for q, times in reads.times.items()},
        "slowlog": slowlog(config["falkordb_port"], config["graph"])[:5],
        "persistence": counted(counters, persistence_counters(config["falkordb_port"])),
        **extra,
    }
    print(
        f"  {name}: {seconds} s, page {result['page']}, reads "
        f"{ {q: (r.get('p50_ms'), r.get('p99_ms')) for q, r in result['graph_reads'].items()} }, "
        f"slowest {[(e['ms'], e['query'][:40]) for e in result['slowlog'][:3]]}, "
        f"persistence {result['persistence']}",
        flush=True,
    )
    return result


def busy_processes(count: int, seconds: float) -> dict:
    """`count` processes spinning on the CPU for `seconds`, touching no graph."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while 1: pass"], start_new_session=True)
        for _ in range(count)
    ]
    try:
        time.sleep(seconds)
    finally:
        for process in spinners:
            process.kill()
            process.wait()
    return {"busy_processes": count}


_PRODUCT_MODULE_ARGS: tuple[str, ...] | None = None


def with_threads(threads: int | None) -> None:
    """FalkorDB's THREAD_COUNT for the servers started from now on (None: the product's own arguments)."""
    from watershed.graph import server

    global _PRODUCT_MODULE_ARGS
    if _PRODUCT_MODULE_ARGS is None:
        _PRODUCT_MODULE_ARGS = server.FALKORDB_MODULE_ARGS
    base = list(_PRODUCT_MODULE_ARGS)
    if threads is not None:
        if "THREAD_COUNT" in base:
            at = base.index("THREAD_COUNT")
            del base[at : at + 2]
        base += ["THREAD_COUNT", str(threads)]
    server.FALKORDB_MODULE_ARGS = tuple(base)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--columns", type=int, default=300000, help="warehouse columns")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=None, help="default: the product's setting")
    parser.add_argument(
        "--other-batches", default="500", help="batch sizes compared with the default, comma separated"
    )
    parser.add_argument(
        "--threads",
        default="",
        help="FalkorDB THREAD_COUNT values to measure after the product's own, comma separated "
        "(each restarts FalkorDB, the workers and the API)",
    )
    parser.add_argument(
        "--without-snapshots",
        action="store_true",
        help='also run the default batch with FalkorDB\'s periodic snapshots off (`save ""`), '
        "the append-only log kept",
    )
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument("--cpu-seconds", type=float, default=30.0)
    parser.add_argument("--stage-timeout", type=float, default=1800.0)
    parser.add_argument("--work", type=Path, default=REPO / "var" / "bench" / "api-during-propagation")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    from bench.api_bench import GRAPH, start_api, stop_api
    from bench.propagation_bench import start_workers
    from watershed.api.service.accounts import tokens as token_format
    from watershed.graph.catalog import Catalog
    from watershed.graph.falkordb_store import FalkorDBStore
    from watershed.graph.server import start, stop
    from watershed.ingest.generator import generate_warehouse, seed_apps
    from watershed.propagation.graph_store import GraphTagStore
    from watershed.propagation.policy import default_policy
    from watershed.propagation.settings import PropagationSettings

    default_batch = args.batch_size or PropagationSettings().propagation_batch_size
    other_batches = [int(b) for b in args.other_batches.split(",") if b.strip()]
    args.work.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sampler = PeakSampler()
    sampler.start()
    work = Path(tempfile.mkdtemp(prefix=f"{args.columns}-", dir=args.work))
    tasks = max(20, round(args.columns / COLUMNS_PER_TASK))
    summary = generate_warehouse(work / "warehouse", tasks=tasks, seed=args.seed, data_tables=DATA_TABLES)
    print(f"== {summary.columns} columns, {tasks} tasks, under {work}", flush=True)

    services = start_chain_services(work, args.workers, args.concurrency, default_batch)
    falkordb, redis_spec, workers = services.falkordb, services.redis, services.workers
    config = services.config
    svc = None
    result: dict = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "columns": summary.columns,
        "workers": args.workers,
        "concurrency": args.concurrency,
        "default_batch": default_batch,
        "other_batches": other_batches,
        "phases": {},
    }
    phases = result["phases"]
    try:
        result["harvest"] = run_stage("harvest", config, sampler, work, args.stage_timeout)
        graph = FalkorDBStore("127.0.0.1", falkordb.port, graph=GRAPH)
        seed_apps(GraphTagStore(graph, default_policy()), Catalog.load(work / "warehouse" / "catalog.json"))
        wait_for_workers(config, args.workers)
        token = bench_admin_token(graph)
        token_id = token_format.parse(token)[0]
        svc = start_api(falkordb.port, work)
        columns = [
            row[0]
            for row in graph.read(
                "MATCH (c:Column) WHERE c.table STARTS WITH 'dws.' RETURN c.id LIMIT 5000", {}
            )
        ]

        def propagation(batch: int):
            def run() -> dict:
                stage = run_stage(
                    "propagate",
                    {**config, "full": True, "batch_size": batch},
                    sampler,
                    work,
                    args.stage_timeout,
                )
                return {"batch_size": batch, "propagation": stage}

            return run

        def without_snapshots(run):
            def unsaved() -> dict:
                import redis

                client = redis.Redis("127.0.0.1", falkordb.port)
                saved = client.config_get("save")["save"]
                client.config_set("save", "")
                try:
                    return run()
                finally:
                    client.config_set("save", saved)

            return unsaved

        def phase(name: str, run) -> None:
            phases[name] = measure(name, run, svc, token, token_id, columns, config)
            write(result)

        phase("idle", lambda: time.sleep(args.idle_seconds))
        # the worker's pool processes and the coordinator: what a propagation keeps busy besides FalkorDB
        phase("cpu", lambda: busy_processes(args.concurrency * args.workers + 1, args.cpu_seconds))
        # each batch size twice, interleaved, so a change in the machine's load shows as a spread
        for again in ("", "_again"):
            phase(f"propagation{again}", propagation(default_batch))
            for batch in other_batches:
                phase(f"propagation_batch={batch}{again}", propagation(batch))
            if args.without_snapshots:
                phase(f"propagation_without_snapshots{again}", without_snapshots(propagation(default_batch)))
        phase("idle_after", lambda: time.sleep(args.idle_seconds))
        for threads in [int(t) for t in args.threads.split(",") if t.strip()]:
            stop_api(svc)
            svc = None
            stop_workers(workers)
            workers = []
            stop(falkordb, wait_seconds=600)
            with_threads(threads)
            start(falkordb, wait_seconds=600)
            workers = start_workers(args.workers, args.concurrency, redis_spec.port, falkordb.port, work)
            wait_for_workers(config, args.workers)
            svc = start_api(falkordb.port, work)
            phase(f"idle@threads={threads}", lambda: time.sleep(args.idle_seconds))
            phase(f"propagation@threads={threads}", propagation(default_batch))
            for batch in other_batches:
                phase(f"propagation_batch={batch}@threads={threads}", propagation(batch))
        result["finished"] = True
    finally:
        if svc is not None:
            stop_api(svc)
        stop_workers(workers)
        stop(redis_spec)
        stop(falkordb, wait_seconds=600)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        sampler.stopping.set()
        write(result)


def ratios(result: dict) -> dict:
    phases = result["phases"]
    out = {}
    for name, phase in phases.items():
        if name.startswith("idle@") or name == "idle":
            continue
        # a variant is compared with the idle phase of the same server settings
        variant = name.partition("@")[2]
        idle = phases.get(f"idle@{variant}" if variant else "idle", {})
        entry = {}
        if idle.get("page", {}).get("p99_ms") and phase.get("page", {}).get("p99_ms"):
            entry["page_p99"] = round(phase["page"]["p99_ms"] / idle["page"]["p99_ms"], 2)
        for query, stats in phase.get("graph_reads", {}).items():
            base = idle.get("graph_reads", {}).get(query, {}).get("p99_ms")
            if base and stats.get("p99_ms"):
                entry[f"{query}_p99"] = round(stats["p99_ms"] / base, 2)
        out[f"{name}/idle" + (f"@{variant}" if variant else "")] = entry
    return out


def write(result: dict) -> None:
    """This run as `latest`; the runs before it are kept under `earlier` (the machine's load varies)."""
    result["ratios"] = ratios(result)
    result.setdefault("started", time.strftime("%Y-%m-%dT%H:%M:%S"))
    earlier: list = []
    if RESULTS.exists():
        document = json.loads(RESULTS.read_text())
        earlier = document.get("earlier", [])
        if document.get("latest", {}).get("started") not in (None, result["started"]):
            earlier = [*earlier, document["latest"]]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    temporary = RESULTS.with_suffix(".tmp")
    temporary.write_text(json.dumps({"latest": result, "earlier": earlier}, indent=2) + "\n")
    os.replace(temporary, RESULTS)
    if result["ratios"]:
        name, entry = list(result["ratios"].items())[-1]
        print(f"  ratio {name}: {entry}", flush=True)


if __name__ == "__main__":
    main()
