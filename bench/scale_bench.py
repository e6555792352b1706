"""The nightly chain at warehouse scale (issues 16 and 41): every stage's seconds and memory per size,
on FalkorDB or Neo4j, with the API's and the gateway's latency idle and during a propagation.

    .venv/bin/python bench/scale_bench.py [--sizes 500000,2000000] [--backend falkordb|neo4j]
        [--neo4j-heap 4g] [--neo4j-pagecache 4g] [--workers 1] [--concurrency 2]
        [--out bench/results/scale_bench.json] [--resume] [--idle-seconds 20]

For each size (warehouse columns; the generator makes about 46 per task, so 10,000,000 columns
is about 217,000 tasks) it starts its own graph server (FalkorDB, or the local Neo4j as `watershed
services up` starts it, with the heap and page cache given), Redis (broker and run state), Celery
workers and the API (`watershed serve`), all opened from the WATERSHED_* settings set here, and
runs the chain as the product runs it, every stage through the same GraphStore:

- generate: the warehouse (with ORC data for a few ODS tables), written task by task to files;
- harvest: `run_harvest` on `spark_session("local[2]")` (extraction and graph load timed apart);
- seed: stewards' app values on the ODS tables (propagation_bench's seeding);
- full propagation: `propagate(full=True)` on the Celery workers, while one client asks the probes
  in turn over HTTP, as it did idle before: GET /columns/{id} (the column page), GET
  /lineage/{id}?depth=3 (the UI's lineage, GraphStore.bounded_lineage), GET /search?q= (id
  prefixes, whole column names and words: the id index and the description index) and POST
  /authz/rewrite for an analyst (the gateway's call): p50/p99/max and the slowest five per probe;
- incremental: 10 tasks' `.sql` files rewritten, the harvest run again (only those load), then
  `propagate()`; the re-harvest and the propagation are timed apart;
- TTL advice: `ttl_advisor.tasks.advise_and_store` (the Celery task's function);
- protection plan: `plan_protection` with the default policy's protection rules.

Each stage runs in its own Python process (this script with `--stage`), so its peak RSS (VmHWM)
is that stage's alone, and this process holds no part of the warehouse (a 5,000-column sample for
the probes). A sampler thread keeps the peak of every descendant (the Spark JVM, workers and their
pool children, the API); `processes` gives the peak per Watershed process kind, the graph server's
own (`graph_server`: FalkorDB's used_memory and RDB after a SAVE, or Neo4j's store and
transaction files after its shutdown checkpoint, and the server's peak RSS) apart.

Results are merged into `--out` (keys `backend/columns`) after every stage, so a run cut short
keeps what finished; `--resume` skips the sizes the file holds finished. Per backend it writes
each figure's size exponent (the least-squares slope of log figure on log columns over every size,
and per pair of consecutive sizes), and per size the issue's targets, each met or missed with its
value. Nothing here asserts a timing; a stage that fails or runs out of time is recorded as such.
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import itertools
import json
import math
import os
import platform
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

RESULTS = REPO / "bench" / "results" / "scale_bench.json"
#: warehouse columns per generated task (bench/results/harvest_bench.json: 460k columns from 10k tasks)
COLUMNS_PER_TASK = 46
CHANGED_TASKS = 10
DATA_TABLES = 8
TARGETS = {"full_propagation_s": 600.0, "incremental_propagation_s": 5.0, "column_page_p99_ms": 50.0}


# ------------------------------------------------------------------ memory


def status_kib(field: str, pid: int | str = "self") -> int | None:
    """A memory figure of /proc/PID/status in KiB (`VmHWM` the peak resident set, `VmRSS` the
    current one), None when the process is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
    return int(found.group(1)) if found else None


def vm_hwm_kib(pid: int | str = "self") -> int | None:
    """Peak resident set size (VmHWM) of a process in KiB, None when it is gone."""
    return status_kib("VmHWM", pid)


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _name(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    words = [a.decode(errors="replace") for a in argv if a]
    if not words:
        return "?"
    if "--stage" in words:
        return f"stage:{words[words.index('--stage') + 1]}"
    if "celery" in words:
        return "celery-worker"
    if "serve" in words:
        return "api"
    base = Path(words[0]).name
    return "falkordb" if base == "redis-server" and any("falkordb" in w for w in words) else base


class PeakSampler(threading.Thread):
    """Every half second, the VmHWM of each descendant of this process: {pid: (name, ancestors, kib)}."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peaks: dict[int, tuple[str, list[int], int]] = {}
        self.stopping = threading.Event()
        self.lock = threading.Lock()

    def run(self) -> None:
        me = os.getpid()
        while not self.stopping.wait(0.5):
            parents = {}
            for entry in Path("/proc").iterdir():
                if entry.name.isdigit():
                    parent = _parent(int(entry.name))
                    if parent is not None:
                        parents[int(entry.name)] = parent
            for pid in parents:
                chain, at = [], pid
                while at in parents and at != me and len(chain) < 20:
                    at = parents[at]
                    chain.append(at)
                if at != me:
                    continue
                kib = vm_hwm_kib(pid)
                if kib is None:
                    continue
                # read the name every time: spark-submit's bash execs the JVM under the same pid
                name = _name(pid)
                with self.lock:
                    known = self.peaks.get(pid)
                    self.peaks[pid] = (name, chain, max(kib, known[2] if known else 0))

    def under(self, root: int) -> dict[str, int]:
        """Peak KiB per process name among `root` and its descendants (the largest process per name)."""
        out: dict[str, int] = {}
        with self.lock:
            for pid, (name, chain, kib) in self.peaks.items():
                if pid == root or root in chain:
                    out[name] = max(out.get(name, 0), kib)
        return out


def mib(kib: int | None) -> float | None:
    return None if kib is None else round(kib / 1024, 1)


# ------------------------------------------------------------------ the stages (each in its own process)


def _graph(config: dict):
    """The stages' graph, opened as every command opens it: from the WATERSHED_* settings this
    script put in the environment (the backend, its server, the data directory of its password)."""
    from watershed.graph.backends import open_store
    from watershed.graph.settings import GraphSettings

    return open_store(GraphSettings())


def stage_generate(config: dict) -> dict:
    """The generator in a process of its own: its peak is the generate stage's, not the bench's."""
    from watershed.ingest.generator import generate_warehouse

    began = time.monotonic()
    summary = generate_warehouse(
        Path(config["warehouse"]), tasks=config["tasks"], seed=config["seed"], data_tables=DATA_TABLES
    )
    return {
        "seconds": round(time.monotonic() - began, 2),
        "tables": summary.tables,
        "columns": summary.columns,
        "broken": summary.broken,
    }


def stage_seed(config: dict) -> dict:
    """Stewards' app values on the ODS tables, as propagation_bench seeds them (reads the catalog)."""
    from watershed.graph.catalog import Catalog
    from watershed.ingest.generator import seed_apps
    from watershed.propagation.graph_store import GraphTagStore
    from watershed.propagation.policy import default_policy

    began = time.monotonic()
    seeded = seed_apps(
        GraphTagStore(_graph(config), default_policy()),
        Catalog.load(Path(config["warehouse"]) / "catalog.json"),
    )
    return {"seconds": round(time.monotonic() - began, 2), "seeded_ods_tables": seeded}


def stage_harvest(config: dict) -> dict:
    from watershed.graph.catalog import Catalog
    from watershed.ingest.harvest import run_harvest, spark_session

    warehouse = Path(config["warehouse"])
    spark = spark_session("local[2]")
    try:
        began = time.monotonic()
        report = run_harvest(
            spark,
            tasks=str(warehouse / "tasks"),
            catalog=Catalog.load(warehouse / "catalog.json"),
            store=_graph(config),
            out_dir=Path(config["work"]) / "harvest",
            batch_size=1000,
            progress=lambda _line: None,
        )
        seconds = time.monotonic() - began
    finally:
        spark.stop()
    return {
        "seconds": round(seconds, 2),
        "extract_seconds": round(report.extract_seconds, 2),
        "load_seconds": round(report.load_seconds, 2),
        "tasks": report.tasks,
        "loaded": report.loaded,
        "unchanged": report.unchanged,
        "tasks_with_errors": report.tasks_with_errors,
    }


def stage_propagate(config: dict) -> dict:
    from watershed.api.service.celery_app import app_for
    from watershed.propagation.coordinator import celery_runner, propagate
    from watershed.propagation.policy import default_policy
    from watershed.propagation.run_state import RunState
    from watershed.propagation.settings import PropagationSettings

    graph = _graph(config)
    policy = default_policy()
    settings = PropagationSettings()
    state = RunState.from_url(settings.broker_url(), config["graph"])
    runner = celery_runner(settings, policy, app=app_for(settings))
    began = time.monotonic()
    record = propagate(
        graph, policy, state, runner, full=config["full"], settings=settings, batch_size=config["batch_size"]
    )
    seconds = time.monotonic() - began
    return {
        "seconds": round(seconds, 2),
        "nodes_processed": record.nodes_processed,
        "cone": record.cone,
        "layers": len(record.layers),
        "tags_changed": record.tags_changed,
    }


def stage_ttl(config: dict) -> dict:
    # advise_and_store opens the graph from the WATERSHED_* environment, as the Celery task does
    from watershed.ttl_advisor.tasks import advise_and_store

    began = time.monotonic()
    summary = advise_and_store()
    return {"seconds": round(time.monotonic() - began, 2), **summary}


def stage_plan(config: dict) -> dict:
    from watershed.orc_crypto.protect.plan import plan_protection
    from watershed.propagation.policy import default_policy

    protection = default_policy().protection
    began = time.monotonic()
    plan = plan_protection(_graph(config), protection)
    seconds = time.monotonic() - began
    return {
        "seconds": round(seconds, 2),
        "rules": len(protection.rules),
        "tables_planned": len(plan.tables),
        "files_planned": sum(len(t.files) for t in plan.tables),
    }


STAGES = {
    "generate": stage_generate,
    "seed": stage_seed,
    "harvest": stage_harvest,
    "propagate": stage_propagate,
    "ttl": stage_ttl,
    "plan": stage_plan,
}


def run_stage_here(name: str, config_text: str) -> None:
    """The `--stage` entry: run one stage and print its result, with this process's peak RSS, as the last line."""
    result = STAGES[name](json.loads(config_text))
    result["process_peak_mib"] = mib(vm_hwm_kib())
    print("STAGE-RESULT " + json.dumps(result), flush=True)


def run_stage(name: str, config: dict, sampler: PeakSampler, log_dir: Path, timeout: float) -> dict:
    """Run a stage in a child process; its result plus the peak RSS of the child and its descendants."""
    log = log_dir / f"{name}-{time.strftime('%H%M%S')}.log"
    began = time.monotonic()
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, __file__, "--stage", name, "--config", json.dumps(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            raise
    wall = round(time.monotonic() - began, 2)
    peaks = {k: mib(v) for k, v in sampler.under(process.pid).items()}
    found = [
        line for line in log.read_text(errors="replace").splitlines() if line.startswith("STAGE-RESULT ")
    ]
    if process.returncode == 0 and found:
        result = json.loads(found[-1].removeprefix("STAGE-RESULT "))
    else:
        tail = log.read_text(errors="replace")[-1500:]
        result = {
            "failed": f"exit {process.returncode}" if process.returncode != -signal.SIGKILL else "timed out",
            "log_tail": tail,
        }
    result.update(wall_seconds=wall, processes_peak_mib=peaks)
    print(f"  {name}: {json.dumps({k: v for k, v in result.items() if k != 'log_tail'})}", flush=True)
    return result


# ------------------------------------------------------------------ the chain at one size


def change_tasks(warehouse: Path, count: int) -> list[str]:
    """Rewrite `count` DWD tasks' files as propagation_bench changes one (SELECT DISTINCT, a comment)."""
    changed = []
    for path in sorted((warehouse / "tasks" / "dwd").glob("*.sql")):
        text = path.read_text()
        if "SELECT " not in text or "SELECT DISTINCT" in text:
            continue
        path.write_text(text.replace("SELECT ", "SELECT DISTINCT ", 1) + "\n-- changed by scale_bench\n")
        changed.append(path.stem)
        if len(changed) == count:
            break
    return changed


@dataclass
class Probes:
    """What the probes ask, drawn once from the graph: columns for the page and the lineage, search
    words, and one gateway query per sampled table."""

    columns: list[str]
    searches: list[str]
    queries: list[str]

    @classmethod
    def drawn(cls, graph, count: int = 5000) -> Probes:
        rows = graph.read(
            "MATCH (c:Column) WHERE c.table STARTS WITH 'dws.' RETURN c.id, c.table LIMIT $n", {"n": count}
        )
        columns = [row[0] for row in rows]
        by_table: dict[str, list[str]] = {}
        for column, table in rows:
            by_table.setdefault(table, []).append(column.rsplit(".", 1)[1])
        tables = sorted(by_table)
        rng = random.Random(5)
        # an id prefix (the table's, cut short), a whole column name, and words of column names
        # (the id substring and the description index): the mix the search box gets
        prefixes = [table[: max(6, len(table) - 1)] for table in rng.sample(tables, min(20, len(tables)))]
        names = [column.rsplit(".", 1)[1] for column in rng.sample(columns, min(20, len(columns)))]
        words = ["email", "user", "amount", "app", "region", "payload page"]
        queries = [
            f"SELECT {', '.join(names_[:3])} FROM {table} WHERE {names_[0]} IS NOT NULL"
            for table, names_ in ((t, by_table[t]) for t in rng.sample(tables, min(50, len(tables))))
        ]
        return cls(columns, prefixes + names + words, queries)


#: the probes, asked in turn by one client: GET /columns/{id} (the column page), GET /lineage/{id}
#: with the route's defaults (both directions, depth 3, limit 500: GraphStore.bounded_lineage),
#: GET /search?q= (kind=column), and POST /authz/rewrite for the bench's analyst (the gateway's call)
PROBES = ("column_page", "lineage_3hop", "search", "gateway")


class ProbeSampler(threading.Thread):
    """The probes in turn on one keep-alive client until stopped: the seconds of each, per probe."""

    def __init__(self, base_url: str, token: str, probes: Probes, pause: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.base_url, self.token, self.probes, self.pause = base_url, token, probes, pause
        self.times: dict[str, list[float]] = {name: [] for name in PROBES}
        self.errors: dict[str, int] = dict.fromkeys(PROBES, 0)
        self.last_error: dict[str, str] = {}
        self.slowest: dict[str, list[tuple[float, str]]] = {name: [] for name in PROBES}
        self.stopping = threading.Event()

    def request(self, client, name: str, rng: random.Random):
        """The probe's request and what it asked (a column id, a search, a query)."""
        if name in ("column_page", "lineage_3hop"):
            column = rng.choice(self.probes.columns)
            path = "columns" if name == "column_page" else "lineage"
            return client.get(
                f"/{path}/{quote(column, safe='')}", params={"depth": 3} if path == "lineage" else None
            ), column
        if name == "search":
            q = rng.choice(self.probes.searches)
            return client.get("/search", params={"q": q, "kind": "column"}), q
        sql = rng.choice(self.probes.queries)
        return client.post("/authz/rewrite", json={"sql": sql, "dialect": "spark", "user": ANALYST}), sql

    def run(self) -> None:
        import httpx

        rng = random.Random(11)
        with httpx.Client(
            base_url=f"{self.base_url}/api/v1", headers={"Authorization": f"Bearer {self.token}"}, timeout=60
        ) as client:
            for name in itertools.cycle(PROBES):
                if self.stopping.is_set():
                    break
                began = time.perf_counter()
                try:
                    answer, asked = self.request(client, name, rng)
                except httpx.HTTPError as exc:  # the API gone or timed out: counted, and the probes go on
                    self.errors[name] += 1
                    self.last_error[name] = f"{type(exc).__name__}: {exc}"[:200]
                    self.stopping.wait(1.0)
                    continue
                seconds = time.perf_counter() - began
                self.times[name].append(seconds)
                # the slowest few with what they asked: which search or query makes the tail
                heapq.heappush(self.slowest[name], (seconds, asked))
                if len(self.slowest[name]) > 5:
                    heapq.heappop(self.slowest[name])
                if answer.status_code != 200 or (name == "gateway" and not answer.json().get("sql")):
                    self.errors[name] += 1
                    self.last_error[name] = f"{answer.status_code} {answer.text[:200]}"
                self.stopping.wait(self.pause)

    def summary(self, skip: int = 0) -> dict:
        return {
            name: {
                **latency(self.times[name][skip:], self.errors[name]),
                "slowest": [
                    {"ms": round(seconds * 1000, 1), "asked": asked[:160]}
                    for seconds, asked in sorted(self.slowest[name], reverse=True)
                ],
                "last_error": self.last_error.get(name),
            }
            for name in PROBES
        }


class ColumnPageSampler(threading.Thread):
    """GET /columns/{id} alone in a loop on one keep-alive client until stopped (api_during_propagation_bench's probe)."""

    def __init__(self, base_url: str, token: str, columns: list[str]) -> None:
        super().__init__(daemon=True)
        self.base_url, self.token, self.columns = base_url, token, columns
        self.times: list[float] = []
        self.errors = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        import httpx

        rng = random.Random(11)
        with httpx.Client(
            base_url=f"{self.base_url}/api/v1", headers={"Authorization": f"Bearer {self.token}"}, timeout=30
        ) as client:
            while not self.stopping.is_set():
                column = rng.choice(self.columns)
                began = time.perf_counter()
                answer = client.get(f"/columns/{quote(column, safe='')}")
                self.times.append(time.perf_counter() - began)
                if answer.status_code != 200:
                    self.errors += 1
                self.stopping.wait(0.05)


def latency(times: list[float], errors: int) -> dict:
    from bench.graph_bench import percentile

    if not times:
        return {"samples": 0, "errors": errors}
    return {
        "samples": len(times),
        "errors": errors,
        "p50_ms": round(percentile(times, 0.5) * 1000, 1),
        "p99_ms": round(percentile(times, 0.99) * 1000, 1),
        "max_ms": round(max(times) * 1000, 1),
    }


ANALYST = "scale_analyst"


def grant_analyst(graph) -> None:
    """The gateway probe's user: select on every generated database, unmask on pii<=L2 (authz_bench's)."""
    from watershed.api.service.accounts.rights import Me
    from watershed.api.service.authz import AuthzService
    from watershed.graph.authz import Grant
    from watershed.propagation.policy import default_policy

    grants = AuthzService(graph, default_policy()).grants
    admin = Me(name="bench", role="admin")
    grants.add_role(admin, "analyst")
    grants.assign(admin, "analyst", "user", ANALYST)
    for database in ("ods", "dwd", "dws", "ads"):
        grants.grant(admin, Grant(id="", role="analyst", actions=["select"], database=database))
    grants.grant(admin, Grant(id="", role="analyst", actions=["unmask"], tag="pii<=L2"))


@dataclass
class ChainServices:
    """What the chain runs against: the graph server (schema in place), Redis (broker and run
    state), the Celery workers, and the stages' config. Every process this script starts finds
    them through the WATERSHED_* variables set here in its environment."""

    graph_spec: object
    redis: object
    graph_pid: int
    redis_pid: int
    workers: list
    config: dict

    @property
    def falkordb(self):
        return self.graph_spec


def graph_environment(args, work: Path, spec) -> dict[str, str]:
    """The WATERSHED_* settings of the chain's graph: what `watershed serve`, the workers and the
    stages open it with (a Neo4j's password is the file its first start wrote under DATA_DIR)."""
    from bench.api_bench import GRAPH

    env = {
        "WATERSHED_BACKEND": args.backend,
        "WATERSHED_GRAPH_NAME": GRAPH,
        "WATERSHED_DATA_DIR": str(work / "data"),
    }
    if args.backend == "neo4j":
        env.update(
            WATERSHED_NEO4J_URI=f"bolt://127.0.0.1:{spec.port}",
            WATERSHED_NEO4J_HEAP=args.neo4j_heap,
            WATERSHED_NEO4J_PAGECACHE=args.neo4j_pagecache,
        )
    else:
        env.update(WATERSHED_FALKORDB_HOST="127.0.0.1", WATERSHED_FALKORDB_PORT=str(spec.port))
    return env


def start_chain_services(work: Path, workers: int, concurrency: int, batch_size: int) -> ChainServices:
    """The chain's services on FalkorDB (api_during_propagation_bench's entry)."""
    args = argparse.Namespace(
        backend="falkordb", workers=workers, concurrency=concurrency, batch_size=batch_size, seed=7
    )
    return start_graph_chain(args, work)


def start_graph_chain(args, work: Path) -> ChainServices:
    from bench.api_bench import GRAPH
    from bench.propagation_bench import start_workers
    from watershed.graph.server import ServerSpec, free_port, start
    from watershed.graph.services import neo4j_spec, start_spec
    from watershed.graph.settings import GraphSettings

    redis = ServerSpec("redis", "127.0.0.1", free_port(), work / "servers", with_falkordb=False)
    if args.backend == "neo4j":
        # the local Neo4j as `watershed services up` starts it, its database under work/data/neo4j
        settings = GraphSettings(
            backend="neo4j",
            data_dir=work / "data",
            neo4j_uri=f"bolt://127.0.0.1:{free_port()}",
            neo4j_heap=args.neo4j_heap,
            neo4j_pagecache=args.neo4j_pagecache,
        )
        spec = neo4j_spec(settings)
        graph_pid = start_spec(spec, settings)
    else:
        spec = ServerSpec("falkordb", "127.0.0.1", free_port(), work / "servers", with_falkordb=True)
        graph_pid = start(spec)
    redis_pid = start(redis)
    broker = f"redis://127.0.0.1:{redis.port}/0"
    os.environ.update(graph_environment(args, work, spec), WATERSHED_CELERY_BROKER=broker)
    # the indexes first, as `watershed harvest` (open_graph) makes them
    _graph({}).ensure_schema()
    # start_workers names FalkorDB's port: on Neo4j the variable is unused (WATERSHED_BACKEND wins)
    started = start_workers(args.workers, args.concurrency, redis.port, spec.port, work)
    config = {
        "graph": GRAPH,
        "broker": broker,
        "warehouse": str(work / "warehouse"),
        "work": str(work),
        "batch_size": args.batch_size,
        "seed": args.seed,
    }
    if args.backend == "falkordb":
        config["falkordb_port"] = spec.port
    return ChainServices(spec, redis, graph_pid, redis_pid, started, config)


def stop_workers(workers: list) -> None:
    """SIGTERM each Celery worker's process group, SIGKILL one still there after 30 s."""
    for process in workers:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)


def wait_for_workers(config: dict, count: int, timeout: float = 60.0) -> None:
    """Until `count` Celery workers of the stages' broker answer a ping (at most `timeout` s)."""
    from watershed.api.service.celery_app import app_for
    from watershed.propagation.settings import PropagationSettings

    app = app_for(PropagationSettings())
    deadline = time.monotonic() + timeout
    while len(app.control.ping(timeout=0.5) or []) < count and time.monotonic() < deadline:
        pass


def bench_admin_token(graph) -> str:
    """A new admin `bench` and its API token, for the probes."""
    from watershed.api.service.accounts.store import AccountStore

    accounts = AccountStore(graph)
    accounts.add("bench", "admin", None, actor="bench")
    return accounts.create_token("bench", actor="bench").token


def start_api(args, redis_port: int, work: Path):
    """`watershed serve` on the chain's graph (api_bench's start, with this run's WATERSHED_* environment)."""
    from bench.api_bench import start_api as start_falkordb_api

    # api_bench's start sets FalkorDB's port and the broker from its argument: on Neo4j the port
    # is unused (WATERSHED_BACKEND=neo4j), so the chain's Redis serves as both
    return start_falkordb_api(
        int(os.environ["WATERSHED_FALKORDB_PORT"]) if args.backend == "falkordb" else redis_port, work
    )


def run_size(columns: int, args, sampler: PeakSampler, checkpoint) -> dict:
    """The chain at one size; `checkpoint(result)` after every stage, so a run cut short keeps its numbers.

    This process holds no part of the warehouse: the generator, the seeding (which reads the
    catalog) and every stage run in processes of their own; here only the probes' sample (at most
    5,000 column ids) and their timings."""
    from bench.api_bench import stop_api
    from watershed.graph.server import stop

    tasks = max(20, round(columns / COLUMNS_PER_TASK))
    work = Path(tempfile.mkdtemp(prefix=f"scale-bench-{args.backend}-{columns}-", dir=args.work))
    result: dict = {
        "backend": args.backend,
        "target_columns": columns,
        "tasks": tasks,
        "work": str(work),
        "stages": {},
        "finished": False,
    }
    if args.backend == "neo4j":
        result["neo4j_settings"] = {"heap": args.neo4j_heap, "pagecache": args.neo4j_pagecache}
    stages = result["stages"]
    print(f"== {args.backend}, {columns} columns: {tasks} tasks, under {work}", flush=True)
    timeout = args.stage_timeout

    services = start_graph_chain(args, work)
    workers, config = services.workers, services.config
    service = None
    try:
        stages["generate"] = run_stage("generate", {**config, "tasks": tasks}, sampler, work, timeout)
        generated = stages["generate"]
        if "failed" in generated:
            raise RuntimeError(f"generate failed: {generated['failed']}")
        result["warehouse"] = {k: generated[k] for k in ("tables", "columns", "broken")}
        checkpoint(result)

        # the graph is opened after the harvest: the stages' processes load it, this one reads
        stages["harvest"] = run_stage("harvest", config, sampler, work, timeout)
        checkpoint(result)
        if "failed" in stages["harvest"]:
            raise RuntimeError(f"harvest failed ({stages['harvest']['failed']}): the chain needs its graph")

        graph = _graph(config)
        stats = graph.stats()
        result["graph"] = {
            "columns": stats.columns,
            "column_edges": stats.column_edges,
            "tables": stats.tables,
        }
        print(f"  graph: {result['graph']}", flush=True)
        stages["seed"] = run_stage("seed", config, sampler, work, timeout)

        wait_for_workers(config, args.workers)
        token = bench_admin_token(graph)
        grant_analyst(graph)
        service = start_api(args, services.redis.port, work)
        probes = Probes.drawn(graph)
        idle = ProbeSampler(service.base_url, token, probes)
        idle.start()
        # at least --idle-seconds, and until every probe has 20 measured answers (a fresh Neo4j's
        # first rounds, planning every statement, can take that long), within ten times that
        began = time.monotonic()
        while time.monotonic() - began < args.idle_seconds or (
            min(len(t) for t in idle.times.values()) < 22
            and time.monotonic() - began < 10 * args.idle_seconds
        ):
            time.sleep(1.0)
        idle.stopping.set()
        idle.join()
        # the first round of each probe plans its queries on a fresh server: not an idle figure
        result["probes_idle"] = idle.summary(skip=2)

        busy = ProbeSampler(service.base_url, token, probes)
        busy.start()
        stages["full_propagation"] = run_stage("propagate", {**config, "full": True}, sampler, work, timeout)
        busy.stopping.set()
        busy.join()
        result["probes_during_propagation"] = busy.summary()
        checkpoint(result)
        for when in ("probes_idle", "probes_during_propagation"):
            shown = {
                k: {m: v[m] for m in ("samples", "errors", "p50_ms", "p99_ms") if m in v}
                for k, v in result[when].items()
            }
            print(f"  {when}: {json.dumps(shown)}", flush=True)
        result["tagged_nodes"] = graph.read(
            "MATCH (c:Column) WHERE c.tags IS NOT NULL AND c.tags <> '{}' RETURN count(c)", {}
        )[0][0]

        result["changed_tasks"] = change_tasks(work / "warehouse", CHANGED_TASKS)
        stages["reharvest"] = run_stage("harvest", config, sampler, work, timeout)
        checkpoint(result)
        stages["incremental_propagation"] = run_stage(
            "propagate", {**config, "full": False}, sampler, work, timeout
        )
        checkpoint(result)
        stages["ttl"] = run_stage("ttl", config, sampler, work, timeout)
        checkpoint(result)
        stages["plan"] = run_stage("plan", config, sampler, work, timeout)
        checkpoint(result)
        if args.backend == "falkordb":
            result["graph_server"] = falkordb_memory(services.graph_spec)
        graph.close()
        result["finished"] = True
    finally:
        if service is not None:
            result["api_peak_mib"] = {k: mib(v) for k, v in sampler.under(service.process.pid).items()}
            stop_api(service)
        result["workers_peak_mib"] = {
            str(i): {k: mib(v) for k, v in sampler.under(p.pid).items()} for i, p in enumerate(workers)
        }
        server = result.setdefault("graph_server", {})
        server["peak_rss_mib"] = mib(
            max(vm_hwm_kib(services.graph_pid) or 0, *sampler.under(services.graph_pid).values(), 0)
        )
        result["redis_peak_mib"] = mib(vm_hwm_kib(services.redis_pid))
        stop_workers(workers)
        stop(services.redis)
        stop(services.graph_spec, wait_seconds=600)
        if args.backend == "neo4j":
            from bench.backends_bench import neo4j_store_mb

            # after the shutdown's checkpoint (Community has no db.checkpoint()): the page cache it needs
            server["store_mib"] = neo4j_store_mb(work / "data")
            server["transactions_mib"] = directory_mib(work / "data" / "neo4j" / "data" / "transactions")
        result["processes"] = process_kinds(result)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    result["bench_process_peak_mib"] = mib(vm_hwm_kib())
    return result


def directory_mib(path: Path) -> float | None:
    if not path.is_dir():
        return None
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20, 1)


def falkordb_memory(spec) -> dict:
    """The server's used_memory, then SAVE and the RDB file's size (the graph's size on disk)."""
    import redis as redis_client

    client = redis_client.Redis(spec.host, spec.port, socket_timeout=1800)
    info = client.info("memory")
    began = time.monotonic()
    client.save()
    save_seconds = time.monotonic() - began
    rdb = spec.directory / client.config_get("dbfilename")["dbfilename"]
    aof_dir = spec.directory / client.config_get("appenddirname").get("appenddirname", "appendonlydir")
    aof = sum(f.stat().st_size for f in aof_dir.glob("*")) if aof_dir.is_dir() else None
    return {
        "used_memory_mib": round(info["used_memory"] / 2**20, 1),
        "used_memory_peak_mib": round(info["used_memory_peak"] / 2**20, 1),
        "rdb_mib": round(rdb.stat().st_size / 2**20, 1) if rdb.exists() else None,
        "aof_dir_mib": round(aof / 2**20, 1) if aof is not None else None,
        "save_seconds": round(save_seconds, 2),
    }


#: the Watershed process kinds: (the stages whose processes they are, the process name under it)
PROCESS_KINDS = {
    "generate": (("generate",), "stage:generate"),
    "harvest_driver": (("harvest", "reharvest"), "stage:harvest"),
    # Spark local: the executors are threads of the driver's JVM, so this is driver + executors
    "spark_jvm": (("harvest", "reharvest"), "java"),
    "seed": (("seed",), "stage:seed"),
    "propagation_coordinator": (("full_propagation", "incremental_propagation"), "stage:propagate"),
    "ttl": (("ttl",), "stage:ttl"),
    "plan": (("plan",), "stage:plan"),
}


def process_kinds(size: dict) -> dict:
    """Peak MiB per Watershed process kind over the size's run, and the graph server's apart."""
    stages = size.get("stages", {})
    out: dict = {}
    for kind, (names, process) in PROCESS_KINDS.items():
        peaks = [stages[n].get("processes_peak_mib", {}).get(process) for n in names if n in stages]
        peaks += [
            stages[n].get("process_peak_mib") for n in names if n in stages and process.startswith("stage:")
        ]
        peaks = [p for p in peaks if p is not None]
        if peaks:
            out[kind] = max(peaks)
    workers = [p for w in size.get("workers_peak_mib", {}).values() for p in w.values()]
    if workers:
        out["celery_worker"] = max(workers)
    if size.get("api_peak_mib"):
        out["api"] = max(size["api_peak_mib"].values())
    if size.get("bench_process_peak_mib") is not None:
        out["bench"] = size["bench_process_peak_mib"]
    return out


# ------------------------------------------------------------------ growth, targets and the file


def stage_figures(size: dict) -> dict[str, float]:
    """Each stage's seconds (and the harvest's extract/load parts) and peak MiB (`name.peak_mib`:
    the largest process of the stage: its own, or the Spark JVM under it)."""
    out = {}
    for name, stage in size.get("stages", {}).items():
        if "seconds" not in stage or "failed" in stage:
            continue
        out[f"{name}.seconds"] = stage["seconds"]
        for part in ("extract_seconds", "load_seconds"):
            if part in stage:
                out[f"{name}.{part}"] = stage[part]
        peaks = [p for p in (stage.get("processes_peak_mib") or {}).values() if p]
        if stage.get("process_peak_mib"):
            peaks.append(stage["process_peak_mib"])
        if peaks:
            out[f"{name}.peak_mib"] = max(peaks)
    server = size.get("graph_server", {})
    for figure in ("peak_rss_mib", "used_memory_mib", "rdb_mib", "store_mib"):
        if server.get(figure):
            out[f"graph_server.{figure}"] = server[figure]
    return out


def done_sizes(sizes: dict, backend: str) -> list[dict]:
    return sorted(
        (
            s
            for s in sizes.values()
            if s.get("backend", "falkordb") == backend and s.get("warehouse") and s.get("stages")
        ),
        key=lambda s: s["warehouse"]["columns"],
    )


def exponents(sizes: dict, backend: str) -> dict:
    """Growth of every figure with warehouse columns: per pair of consecutive sizes done,
    log(f_big/f_small)/log(n_big/n_small); and over all sizes, the least-squares slope of log f on
    log n (`fit`, with the sizes it used). 1.0 is linear."""
    done = done_sizes(sizes, backend)
    pairs = {}
    for small, big in itertools.pairwise(done):
        n = math.log(big["warehouse"]["columns"] / small["warehouse"]["columns"])
        f_small, f_big = stage_figures(small), stage_figures(big)
        pairs[f"{small['warehouse']['columns']}->{big['warehouse']['columns']}"] = {
            name: round(math.log(f_big[name] / f_small[name]) / n, 2)
            for name in f_small
            if name in f_big and f_small[name] > 0 and f_big[name] > 0
        }
    fit = {}
    figures = [stage_figures(s) for s in done]
    for name in sorted({n for f in figures for n in f}):
        points = [
            (math.log(s["warehouse"]["columns"]), math.log(f[name]))
            for s, f in zip(done, figures, strict=True)
            if f.get(name, 0) > 0
        ]
        if len(points) >= 2:
            mean_x = sum(x for x, _ in points) / len(points)
            mean_y = sum(y for _, y in points) / len(points)
            spread = sum((x - mean_x) ** 2 for x, _ in points)
            if spread > 0:
                fit[name] = {
                    "exponent": round(sum((x - mean_x) * (y - mean_y) for x, y in points) / spread, 2),
                    "sizes": len(points),
                }
    return {"pairs": pairs, "fit": fit}


#: issue 41's targets (at 10M columns; at a smaller size they show the trend, marked with the size)
TARGETS = {
    "full_propagation_s": 1800.0,
    "incremental_propagation_s": 2.0,
    "incremental_vs_smallest": 2.0,
    "column_page_p99_ms": 50.0,
    "lineage_3hop_p99_ms": 50.0,
    "search_p99_ms": 50.0,
    "process_peak_mib": 4096.0,
    "exponent": 1.1,
}


def targets(size: dict, smallest: dict | None, growth: dict) -> dict:
    """Each target, met or missed, with its value (None: not measured in this size's run)."""

    def mark(value, target, at_most=True) -> dict:
        met = None if value is None else (value <= target if at_most else value >= target)
        return {"value": value, "target": target, "met": met}

    stages = size.get("stages", {})
    busy = size.get("probes_during_propagation", {})
    incremental = stages.get("incremental_propagation", {}).get("seconds")
    first = (smallest or {}).get("stages", {}).get("incremental_propagation", {}).get("seconds")
    kinds = size.get("processes", {})
    watershed = {k: v for k, v in kinds.items() if k != "bench"}
    largest = max(watershed, key=watershed.get) if watershed else None
    # the exponent target is "from 2M to 10M": the pair ending at this size, and the fit
    # over every size beside it (the graph server's figures are reported apart)
    columns = size.get("warehouse", {}).get("columns")
    last_pair = next((p for k, p in growth.get("pairs", {}).items() if k.endswith(f"->{columns}")), {})
    fitted = {n: f["exponent"] for n, f in growth.get("fit", {}).items()}

    def steepest(exponents: dict) -> dict:
        kept = {n: e for n, e in exponents.items() if not n.startswith("graph_server")}
        worst = max(kept, key=kept.get) if kept else None
        return {**mark(kept.get(worst), TARGETS["exponent"]), "figure": worst}

    out = {
        "full_propagation_s": mark(
            stages.get("full_propagation", {}).get("seconds"), TARGETS["full_propagation_s"]
        ),
        "incremental_propagation_s": mark(incremental, TARGETS["incremental_propagation_s"]),
        "incremental_vs_smallest": mark(
            round(incremental / first, 2) if incremental and first else None,
            TARGETS["incremental_vs_smallest"],
        ),
        "column_page_p99_ms_during_propagation": mark(
            # files written before the probes kept the column page's alone
            (busy.get("column_page") or size.get("column_page_during_propagation", {})).get("p99_ms"),
            TARGETS["column_page_p99_ms"],
        ),
        "lineage_3hop_p99_ms_during_propagation": mark(
            busy.get("lineage_3hop", {}).get("p99_ms"), TARGETS["lineage_3hop_p99_ms"]
        ),
        "search_p99_ms_during_propagation": mark(
            busy.get("search", {}).get("p99_ms"), TARGETS["search_p99_ms"]
        ),
        "search_p99_ms_idle": mark(
            size.get("probes_idle", {}).get("search", {}).get("p99_ms"), TARGETS["search_p99_ms"]
        ),
        "largest_watershed_process_mib": {
            **mark(watershed.get(largest), TARGETS["process_peak_mib"]),
            "process": largest,
        },
        "largest_exponent_to_this_size": steepest(last_pair),
        "largest_exponent_fit_over_sizes": steepest(fitted),
    }
    return out


def write(sizes: dict, args) -> None:
    """Merge this run's sizes into the results file (keyed backend/columns) and rewrite it whole:
    exponents and targets per backend over every size the file holds."""
    existing = json.loads(args.out.read_text()) if args.out.exists() else {}
    merged = {}
    for key, size in {**existing.get("sizes", {}), **sizes}.items():
        # files written before `--backend` keyed FalkorDB's sizes by columns alone
        backend = size.setdefault("backend", "falkordb")
        merged[key if "/" in key else f"{backend}/{key}"] = size
    growth = {}
    for backend in sorted({s["backend"] for s in merged.values()}):
        growth[backend] = exponents(merged, backend)
        done = done_sizes(merged, backend)
        for size in done:
            size["processes"] = process_kinds(size)
            size["targets"] = targets(size, done[0] if done else None, growth[backend])
    commands = existing.get("commands", [])
    command = ".venv/bin/python bench/scale_bench.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    if command not in commands:
        commands.append(command)
    document = {
        "commands": commands,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GiB",
        "workers": args.workers,
        "concurrency": args.concurrency,
        "sizes": merged,
        "exponents": growth,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    temporary = args.out.with_suffix(".tmp")
    temporary.write_text(json.dumps(document, indent=2) + "\n")
    os.replace(temporary, args.out)
    print(f"results written to {args.out}", flush=True)


def print_growth(path: Path) -> None:
    document = json.loads(path.read_text())
    for backend, growth in document.get("exponents", {}).items():
        print(f"== {backend}: size exponents (least squares over the sizes; 1.0 is linear)")
        for name, fit in sorted(growth.get("fit", {}).items()):
            pairs = "  ".join(f"{p}: {v[name]}" for p, v in growth["pairs"].items() if name in v)
            print(f"  {name:40} {fit['exponent']:6}   {pairs}")
        for key, size in document["sizes"].items():
            if size.get("backend") == backend and size.get("targets"):
                print(f"  targets at {key}:")
                for name, target in size["targets"].items():
                    state = {True: "met", False: "MISSED", None: "not measured"}[target["met"]]
                    print(f"    {name:42} {target['value']!s:>10} (target {target['target']}) {state}")


def main() -> None:
    from watershed.propagation.settings import PropagationSettings

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="500000,2000000", help="warehouse columns, comma separated")
    parser.add_argument("--backend", choices=("falkordb", "neo4j"), default="falkordb")
    parser.add_argument("--neo4j-heap", default="4g", help="the local Neo4j's heap (WATERSHED_NEO4J_HEAP)")
    parser.add_argument(
        "--neo4j-pagecache", default="4g", help="the local Neo4j's page cache (WATERSHED_NEO4J_PAGECACHE)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument(
        "--batch-size",
        type=int,
        default=PropagationSettings().propagation_batch_size,
        help="propagation batch size (default: the setting's)",
    )
    parser.add_argument(
        "--stage-timeout", type=float, default=3600.0, help="seconds before a stage is killed"
    )
    parser.add_argument("--idle-seconds", type=float, default=20.0, help="how long the probes run idle")
    parser.add_argument("--work", type=Path, default=REPO / "var" / "bench" / "scale")
    parser.add_argument("--out", type=Path, default=RESULTS, help="the results file (merged into)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="skip the sizes the results file holds finished for this backend",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory (graph, logs)")
    parser.add_argument("--stage", choices=sorted(STAGES), help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        run_stage_here(args.stage, args.config)
        return
    args.out = args.out.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    # a plain `kill` stops the servers and workers this run started (the finally blocks run)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    finished = set()
    if args.resume and args.out.exists():
        held = json.loads(args.out.read_text()).get("sizes", {})
        finished = {
            k for k, s in held.items() if s.get("finished") and s.get("backend", "falkordb") == args.backend
        }
    sampler = PeakSampler()
    sampler.start()
    sizes: dict = {}
    for columns in (int(text) for text in args.sizes.split(",")):
        key = f"{args.backend}/{columns}"
        if key in finished:
            print(f"== {key}: finished in {args.out.name}, skipped (--resume)", flush=True)
            continue

        def checkpoint(partial: dict, key: str = key) -> None:
            sizes[key] = partial
            write(sizes, args)

        try:
            sizes[key] = run_size(columns, args, sampler, checkpoint)
        except Exception as exc:  # a size that fails keeps what finished; the next still runs
            sizes[key] = {
                **sizes.get(key, {"backend": args.backend, "target_columns": columns}),
                "failed": f"{type(exc).__name__}: {exc}"[:2000],
            }
            print(f"  size {columns} failed: {exc}", flush=True)
        write(sizes, args)
    sampler.stopping.set()
    print_growth(args.out)


if __name__ == "__main__":
    main()
