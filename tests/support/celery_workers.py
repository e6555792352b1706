"""The Celery broker Redis and real worker processes, started once per session: a pytest plugin that
tests/conftest.py registers (`pytest_plugins`), so every folder's tests share the one Redis and the
one worker. Importing a fixture into a test module instead would make it that module's own fixture:
a session-scoped Redis would then start once per importing module."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import redis
from kombu.exceptions import OperationalError

from tests.support.paths import REPO
from watershed.api.service.celery_app import app_for, worker_argv
from watershed.graph.server import ServerSpec, free_port, start, stop
from watershed.propagation.settings import PropagationSettings

#: the environment when the plugin loads, before any test patches it
SESSION_ENVIRON = dict(os.environ)


@pytest.fixture(scope="session")
def celery_redis(tmp_path_factory):
    """A plain Redis for Celery's broker, results and the run state; the test process's Celery app uses it."""
    spec = ServerSpec(
        "redis", "127.0.0.1", free_port(), tmp_path_factory.mktemp("celery-redis"), with_falkordb=False
    )
    start(spec)
    yield spec
    stop(spec)


class Workers:
    """Worker processes of the one Celery app; each is its own process group so it can be SIGKILLed whole.

    A worker serves the queues `start` is given (default: the propagation queue only).
    """

    def __init__(self, redis_port: int, falkordb_port: int, log_dir: Path, environ=None) -> None:
        self.env = {
            **(os.environ if environ is None else environ),
            "WATERSHED_CELERY_BROKER": f"redis://127.0.0.1:{redis_port}/0",
            "WATERSHED_FALKORDB_PORT": str(falkordb_port),
            # a killed worker's unacknowledged task goes to another worker after this long
            "WATERSHED_PROPAGATION_VISIBILITY_SECONDS": "5",
            "PYTHONPATH": str(REPO),
        }
        self.log_dir = log_dir
        self.processes: list[subprocess.Popen] = []

    def app(self):
        """The one Celery app on these workers' broker (the test process sends and collects with it)."""
        return app_for(PropagationSettings(celery_broker=self.env["WATERSHED_CELERY_BROKER"]))

    def start(
        self, count: int = 1, queues: str = "propagation", loglevel: str = "WARNING"
    ) -> list[subprocess.Popen]:
        started = []
        for _ in range(count):
            name = f"w{len(self.processes)}@%h"
            log = (self.log_dir / f"worker-{len(self.processes)}.log").open("w")
            process = subprocess.Popen(
                [
                    *worker_argv(1, name=name, pool="solo", queues=queues, loglevel=loglevel),
                    "--without-heartbeat",
                ],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                start_new_session=True,
            )
            self.processes.append(process)
            started.append(process)
        try:
            self.wait_ready(len(self.live()))
        except BaseException:
            self.stop_all()  # never leave worker processes behind a failed start
            raise
        return started

    def live(self) -> list[subprocess.Popen]:
        return [p for p in self.processes if p.poll() is None]

    def wait_ready(self, count: int, timeout: float = 60.0) -> None:
        app = self.app()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if len(app.control.ping(timeout=0.5) or []) >= count:
                    return
            except (redis.ConnectionError, OperationalError):
                continue  # a broker restarted under a connection this process kept: it reconnects
        raise RuntimeError(f"{count} Celery workers did not answer within {timeout} s; see {self.log_dir}")

    def stop(self, process: subprocess.Popen) -> None:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)

    def kill(self, process: subprocess.Popen) -> None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def stop_all(self) -> None:
        for process in self.live():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        self.processes = []


@pytest.fixture(scope="session")
def workers(celery_redis, falkordb_server, tmp_path_factory):
    """One propagation worker for the session; tests may start more (and must stop those)."""
    # The environment the session began with, not that of the test that first asks for the
    # workers: a test's patched WATERSHED_BACKEND or graph would otherwise become the session's.
    pool = Workers(
        celery_redis.port, falkordb_server.port, tmp_path_factory.mktemp("workers"), SESSION_ENVIRON
    )
    try:
        pool.start(1)
        yield pool
    finally:
        pool.stop_all()
