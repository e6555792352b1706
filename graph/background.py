"""Recorded background processes of `watershed services up|down|status` (the KMS, the API, a worker).

Each runs in its own session (a terminal's Ctrl-C does not reach it), its pid recorded with its
start time and command line in DIR/NAME.pid (graph/processes.py: a reused pid is never
signalled), its output in DIR/NAME.log. One with a port counts as up once the port answers;
a port another process holds is an error naming it.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from watershed.graph import processes
from watershed.graph.errors import WatershedError


class ServiceStartError(WatershedError, RuntimeError):
    """A background service could not be started (a taken port, a process that exited)."""


@dataclass
class BackgroundProcess:
    """One recorded background process: started in its own session, its identity in `DIR/NAME.pid`."""

    name: str
    argv: list[str]
    directory: Path
    host: str | None = None
    port: int | None = None
    env: dict[str, str] | None = field(default=None, repr=False)
    #: for a bare pid recorded before process records existed: is this command line ours?
    legacy_match: Callable[[list[str]], bool] | None = field(default=None, repr=False)

    @property
    def pid_file(self) -> Path:
        return self.directory / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return self.directory / f"{self.name}.log"

    def _record(self) -> processes.ProcessRecord | None:
        """The recorded process, when it is still the one started here (never a reused pid)."""
        record = processes.read_record(self.pid_file)
        if record is None:
            return None
        if processes.is_same(record):
            return record
        if not record.verifiable and self.legacy_match is not None:
            live = processes.describe(record.pid)
            if live is not None and self.legacy_match(live.cmdline or []):
                return live
        return None

    def pid(self) -> int | None:
        record = self._record()
        return record.pid if record is not None else None

    def stale_note(self) -> str | None:
        record = processes.read_record(self.pid_file)
        if record is None or self._record() is not None:
            return None
        return f"pid {record.pid} in {self.pid_file} is gone or now another process (stale pid file)"

    def answers(self) -> bool:
        if self.port is None:
            return self.pid() is not None
        try:
            with socket.create_connection((self.host or "127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def start(self, wait_seconds: float = 30.0) -> bool:
        """Start unless already running; returns True when this call started it."""
        if self.pid() is not None:
            return False
        if self.port is not None and self.answers():
            raise ServiceStartError(
                f"{self.name}: port {self.host}:{self.port} is taken by another process "
                f"(set WATERSHED_{self.name.upper()}_PORT)"
            )
        self.directory.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            process = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=self.env
            )
        deadline = time.monotonic() + wait_seconds
        while self.port is not None and not self.answers():
            if process.poll() is not None:
                raise ServiceStartError(
                    f"{self.name} exited with code {process.returncode}; see {self.log_file}"
                )
            if time.monotonic() > deadline:
                process.kill()
                raise ServiceStartError(
                    f"{self.name} did not answer on port {self.port} in {wait_seconds:.0f} s"
                )
            time.sleep(0.1)
        # The record must hold the started program's command line, never the forking parent's.
        while (live := processes.describe(process.pid)) is None or live.cmdline != self.argv:
            if process.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        if process.poll() is not None:
            raise ServiceStartError(f"{self.name} exited with code {process.returncode}; see {self.log_file}")
        processes.write_record(self.pid_file, process.pid)
        return True

    def stop(self, wait_seconds: float = 20.0) -> bool:
        record = self._record()
        if record is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        stopped = processes.terminate(record, wait_seconds)
        self.pid_file.unlink(missing_ok=True)
        return stopped
