"""The nightly chain at warehouse scale (issue 16): every stage's seconds and memory at two sizes.

    .venv/bin/python bench/scale_bench.py [--sizes 500000,2000000] [--workers 1] [--concurrency 2]

For each size (warehouse columns; the generator makes about 46 per task) it generates a
warehouse (with ORC data for a few ODS tables), starts its own FalkorDB, Redis (broker), Celery
workers and the API (`watershed serve`), and runs the chain as the product runs it:

- harvest: `run_harvest` on `spark_session("local[2]")` (extraction and graph load timed apart);
- full propagation: `propagate(full=True)` on the Celery workers, while a thread samples
  GET /columns/{id} (the column page) over HTTP: its p50/p99 during the run, and idle before it;
- incremental: 10 tasks' `.sql` files rewritten, the harvest run again (only those load), then
  `propagate()`; the re-harvest and the propagation are timed apart;
- TTL advice: `ttl_advisor.tasks.advise_and_store` (the Celery task's function);
- protection plan: `plan_protection` with the default policy's protection rules.

Each stage runs in its own Python process (this script with `--stage`), so its peak RSS
(VmHWM) is that stage's alone; a sampler thread keeps the peak of every descendant process
(the Spark JVM, workers and their pool children, FalkorDB, Redis, the API). Last the graph is
saved (SAVE) and the RDB file's size and the server's used_memory are read.

Results (merged per size, written as each size finishes) go to bench/results/scale_bench.json,
with each stage's growth exponent log(t_big/t_small)/log(n_big/n_small) over warehouse columns.
Nothing here asserts a timing; a stage that fails or runs out of time is recorded as such.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import platform
import random
import re
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
    from watershed.graph.falkordb_store import FalkorDBStore

    return FalkorDBStore("127.0.0.1", config["falkordb_port"], graph=config["graph"])


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
    settings = PropagationSettings(
        falkordb_port=config["falkordb_port"], graph_name=config["graph"], celery_broker=config["broker"]
    )
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
    os.environ.update(
        WATERSHED_BACKEND="falkordb",
        WATERSHED_FALKORDB_HOST="127.0.0.1",
        WATERSHED_FALKORDB_PORT=str(config["falkordb_port"]),
        WATERSHED_GRAPH_NAME=config["graph"],
    )
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


STAGES = {"harvest": stage_harvest, "propagate": stage_propagate, "ttl": stage_ttl, "plan": stage_plan}


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


class ColumnPageSampler(threading.Thread):
    """GET /columns/{id} in a loop on one keep-alive client until stopped; the seconds of each."""

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


@dataclass
class ChainServices:
    """What the chain runs against: FalkorDB (schema in place) and Redis on free ports, the Celery
    workers, and the stages' config."""

    falkordb: object
    redis: object
    falkordb_pid: int
    redis_pid: int
    workers: list
    config: dict


def start_chain_services(work: Path, workers: int, concurrency: int, batch_size: int) -> ChainServices:
    from bench.api_bench import GRAPH
    from bench.propagation_bench import start_workers
    from watershed.graph.falkordb_store import FalkorDBStore
    from watershed.graph.server import ServerSpec, free_port, start

    falkordb = ServerSpec("falkordb", "127.0.0.1", free_port(), work / "servers", with_falkordb=True)
    redis = ServerSpec("redis", "127.0.0.1", free_port(), work / "servers", with_falkordb=False)
    falkordb_pid = start(falkordb)
    redis_pid = start(redis)
    # the indexes first, as `watershed harvest` (open_graph) makes them
    FalkorDBStore("127.0.0.1", falkordb.port, graph=GRAPH).ensure_schema()
    broker = f"redis://127.0.0.1:{redis.port}/0"
    os.environ["WATERSHED_CELERY_BROKER"] = broker
    started = start_workers(workers, concurrency, redis.port, falkordb.port, work)
    config = {
        "falkordb_port": falkordb.port,
        "graph": GRAPH,
        "broker": broker,
        "warehouse": str(work / "warehouse"),
        "work": str(work),
        "batch_size": batch_size,
    }
    return ChainServices(falkordb, redis, falkordb_pid, redis_pid, started, config)


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

    app = app_for(
        PropagationSettings(
            falkordb_port=config["falkordb_port"], graph_name=config["graph"], celery_broker=config["broker"]
        )
    )
    deadline = time.monotonic() + timeout
    while len(app.control.ping(timeout=0.5) or []) < count and time.monotonic() < deadline:
        pass


def bench_admin_token(graph) -> str:
    """A new admin `bench` and its API token, for the column page samplers."""
    from watershed.api.service.accounts.store import AccountStore

    accounts = AccountStore(graph)
    accounts.add("bench", "admin", None, actor="bench")
    return accounts.create_token("bench", actor="bench").token


def run_size(columns: int, args, sampler: PeakSampler, checkpoint) -> dict:
    """The chain at one size; `checkpoint(result)` after every stage, so a run cut short keeps its numbers."""
    from bench.api_bench import GRAPH, start_api, stop_api
    from watershed.graph.server import stop
    from watershed.ingest.generator import generate_warehouse, seed_apps
    from watershed.propagation.graph_store import GraphTagStore
    from watershed.propagation.policy import default_policy

    tasks = max(20, round(columns / COLUMNS_PER_TASK))
    work = Path(tempfile.mkdtemp(prefix=f"scale-bench-{columns}-", dir=args.work))
    result: dict = {
        "target_columns": columns,
        "tasks": tasks,
        "work": str(work),
        "stages": {},
        "finished": False,
    }
    stages = result["stages"]
    print(f"== {columns} columns: {tasks} tasks, under {work}", flush=True)

    began = time.monotonic()
    summary = generate_warehouse(work / "warehouse", tasks=tasks, seed=args.seed, data_tables=DATA_TABLES)
    stages["generate"] = {"seconds": round(time.monotonic() - began, 2)}
    result["warehouse"] = {"tables": summary.tables, "columns": summary.columns, "broken": summary.broken}
    print(f"  generated: {result['warehouse']} in {stages['generate']['seconds']} s", flush=True)

    from watershed.graph.falkordb_store import FalkorDBStore

    services = start_chain_services(work, args.workers, args.concurrency, args.batch_size)
    falkordb, redis, falkordb_pid, redis_pid = (
        services.falkordb,
        services.redis,
        services.falkordb_pid,
        services.redis_pid,
    )
    workers, config = services.workers, services.config
    service = None
    timeout = args.stage_timeout
    try:
        # the graph is opened after the harvest, in the stages' processes: this one holds no lineage
        stages["harvest"] = run_stage("harvest", config, sampler, work, timeout)
        checkpoint(result)

        graph = FalkorDBStore("127.0.0.1", falkordb.port, graph=GRAPH)
        stats = graph.stats()
        result["graph"] = {
            "columns": stats.columns,
            "column_edges": stats.column_edges,
            "tables": stats.tables,
        }
        print(f"  graph: {result['graph']}", flush=True)
        from watershed.graph.catalog import Catalog

        # stewards' app values on the ODS tables, as propagation_bench seeds them
        result["seeded_ods_tables"] = seed_apps(
            GraphTagStore(graph, default_policy()), Catalog.load(work / "warehouse" / "catalog.json")
        )

        wait_for_workers(config, args.workers)
        token = bench_admin_token(graph)
        service = start_api(falkordb.port, work)
        sample_ids = [
            row[0]
            for row in graph.read(
                "MATCH (c:Column) WHERE c.table STARTS WITH 'dws.' RETURN c.id LIMIT 5000", {}
            )
        ]
        idle = ColumnPageSampler(service.base_url, token, sample_ids)
        idle.start()
        time.sleep(15)
        idle.stopping.set()
        idle.join()
        result["column_page_idle"] = latency(idle.times[5:], idle.errors)

        busy = ColumnPageSampler(service.base_url, token, sample_ids)
        busy.start()
        stages["full_propagation"] = run_stage("propagate", {**config, "full": True}, sampler, work, timeout)
        busy.stopping.set()
        busy.join()
        result["column_page_during_propagation"] = latency(busy.times, busy.errors)
        checkpoint(result)
        print(f"  column page idle {result['column_page_idle']}", flush=True)
        print(f"  column page during propagation {result['column_page_during_propagation']}", flush=True)
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

        memory = graph_memory(falkordb)
        result["falkordb"] = memory
        result["finished"] = True
        print(f"  falkordb: {memory}", flush=True)
    finally:
        if service is not None:
            result["api_peak_mib"] = {k: mib(v) for k, v in sampler.under(service.process.pid).items()}
            stop_api(service)
        result["workers_peak_mib"] = {
            str(i): {k: mib(v) for k, v in sampler.under(p.pid).items()} for i, p in enumerate(workers)
        }
        result["falkordb_peak_mib"] = mib(
            max(vm_hwm_kib(falkordb_pid) or 0, sampler.under(falkordb_pid).get("falkordb", 0))
        )
        result["redis_peak_mib"] = mib(vm_hwm_kib(redis_pid))
        stop_workers(workers)
        stop(redis)
        stop(falkordb, wait_seconds=600)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    result["bench_process_peak_mib"] = mib(vm_hwm_kib())
    return result


def graph_memory(spec) -> dict:
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


# ------------------------------------------------------------------ growth and the file


def stage_seconds(size: dict) -> dict[str, float]:
    out = {}
    for name, stage in size.get("stages", {}).items():
        if "seconds" in stage and "failed" not in stage:
            out[name] = stage["seconds"]
            for part in ("extract_seconds", "load_seconds"):
                if part in stage:
                    out[f"{name}.{part.removesuffix('_seconds')}"] = stage[part]
    return out


def exponents(sizes: dict) -> dict:
    """Per pair of consecutive sizes done: log(t_big/t_small)/log(n_big/n_small) over warehouse columns."""
    done = sorted(
        (s for s in sizes.values() if s.get("warehouse") and s.get("stages")),
        key=lambda s: s["warehouse"]["columns"],
    )
    out = {}
    for small, big in itertools.pairwise(done):
        n = math.log(big["warehouse"]["columns"] / small["warehouse"]["columns"])
        t_small, t_big = stage_seconds(small), stage_seconds(big)
        pair = {
            name: round(math.log(t_big[name] / t_small[name]) / n, 2)
            for name in t_small
            if name in t_big and t_small[name] > 0 and t_big[name] > 0
        }
        out[f"{small['warehouse']['columns']}->{big['warehouse']['columns']}"] = pair
    return out


def targets(size: dict) -> dict:
    stages = size.get("stages", {})
    full = stages.get("full_propagation", {}).get("seconds")
    incremental = stages.get("incremental_propagation", {}).get("seconds")
    p99 = size.get("column_page_during_propagation", {}).get("p99_ms")
    return {
        "full_propagation_s": {"value": full, "target": TARGETS["full_propagation_s"]},
        "incremental_propagation_s": {"value": incremental, "target": TARGETS["incremental_propagation_s"]},
        "column_page_p99_ms": {"value": p99, "target": TARGETS["column_page_p99_ms"]},
    }


def write(sizes: dict, args) -> None:
    existing = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    merged = {**existing.get("sizes", {}), **sizes}
    for size in merged.values():
        size["targets"] = targets(size)
    document = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GiB",
        "workers": args.workers,
        "concurrency": args.concurrency,
        "sizes": merged,
        "exponents": exponents(merged),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    temporary = RESULTS.with_suffix(".tmp")
    temporary.write_text(json.dumps(document, indent=2) + "\n")
    os.replace(temporary, RESULTS)
    print(f"results written to {RESULTS.relative_to(REPO)}", flush=True)


def main() -> None:
    from watershed.propagation.settings import PropagationSettings

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="500000,2000000", help="warehouse columns, comma separated")
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
    parser.add_argument("--work", type=Path, default=REPO / "var" / "bench" / "scale")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (graph, logs)")
    parser.add_argument("--stage", choices=sorted(STAGES), help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        run_stage_here(args.stage, args.config)
        return
    args.work.mkdir(parents=True, exist_ok=True)
    # a plain `kill` stops the servers and workers this run started (the finally blocks run)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sampler = PeakSampler()
    sampler.start()
    sizes: dict = {}
    for columns in (int(text) for text in args.sizes.split(",")):
        try:
            sizes[str(columns)] = run_size(
                columns, args, sampler, lambda partial, key=str(columns): write({**sizes, key: partial}, args)
            )
        except Exception as exc:  # a size that fails is recorded, the next still runs
            sizes[str(columns)] = {"target_columns": columns, "failed": f"{type(exc).__name__}: {exc}"[:2000]}
            print(f"  size {columns} failed: {exc}", flush=True)
        write(sizes, args)
    sampler.stopping.set()


if __name__ == "__main__":
    main()
