"""The embedded KMS as a background service of `watershed services up|down|status`.

It runs the KMS server (`python -m watershed.orc_crypto.kms`) as its own process (its own session, so a
terminal's Ctrl-C does not reach it), records its pid in `DIR/kms.pid`, logs
to `DIR/kms.log`, and counts as up once its HTTP port answers. It is only
started when there is something to serve: a keystore file and its passphrase.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from watershed.graph import processes
from watershed.graph.errors import WatershedError
from watershed.orc_crypto.keys.embedded import KeystoreSettings
from watershed.orc_crypto.kms.settings import KmsSettings


class KmsServiceError(WatershedError, RuntimeError):
    """The KMS could not be started (a taken port, a server that never answered)."""


@dataclass
class KmsService:
    host: str
    port: int
    directory: Path
    keystore: Path

    @classmethod
    def from_settings(cls, data_dir: Path) -> KmsService:
        settings = KmsSettings()
        return cls(settings.kms_host, settings.kms_port, data_dir / "kms", KeystoreSettings().keystore_path)

    @property
    def pid_file(self) -> Path:
        return self.directory / "kms.pid"

    @property
    def log_file(self) -> Path:
        return self.directory / "kms.log"

    def _record(self) -> processes.ProcessRecord | None:
        """The recorded process, when it is still the KMS started here (never a reused pid)."""
        record = processes.read_record(self.pid_file)
        if record is None:
            return None
        if processes.is_same(record):
            return record
        if not record.verifiable:
            # A bare pid from before process records: ours only if it is a KMS on our port.
            live = processes.describe(record.pid)
            if live is not None and self._is_our_command(live.cmdline or []):
                return live
        return None

    def _is_our_command(self, cmdline: list[str]) -> bool:
        text = " ".join(cmdline)
        return "watershed.orc_crypto.kms" in text and f"--port {self.port}" in text

    def pid(self) -> int | None:
        """The pid `up` recorded, if that very process still runs (same start time and command line)."""
        record = self._record()
        return record.pid if record is not None else None

    def stale_note(self) -> str | None:
        """Why the pid file is not trusted, or None (no pid file, or its process is the KMS)."""
        record = processes.read_record(self.pid_file)
        if record is None or self._record() is not None:
            return None
        return f"pid {record.pid} in {self.pid_file} is gone or now another process (stale pid file)"

    def answers(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def why_not_started(self) -> str | None:
        """Why `up` leaves the KMS off, or None when it can start it."""
        if not self.keystore.exists():
            return f"no keystore at {self.keystore} (create one with `watershed kms create-key NAME`)"
        settings = KeystoreSettings()
        if not settings.keystore_passphrase and settings.keystore_passphrase_file is None:
            return "no WATERSHED_KEYSTORE_PASSPHRASE or WATERSHED_KEYSTORE_PASSPHRASE_FILE"
        return None

    def start(self, wait_seconds: float = 20.0) -> bool:
        """Start the KMS unless it already runs; False when there is nothing to serve."""
        if self.pid() is not None and self.answers():
            return True
        if self.why_not_started() is not None:
            return False
        if self.answers():
            raise KmsServiceError(
                f"port {self.host}:{self.port} is taken by another process (set WATERSHED_KMS_PORT)"
            )
        self.directory.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "watershed.orc_crypto.kms",
                    "--host",
                    self.host,
                    "--port",
                    str(self.port),
                    "--keystore",
                    str(self.keystore),
                    "--audit-log",
                    str(self.directory / "audit.log"),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + wait_seconds
        while not self.answers():
            if process.poll() is not None:
                raise KmsServiceError(f"the KMS exited with code {process.returncode}; see {self.log_file}")
            if time.monotonic() > deadline:
                process.kill()
                raise KmsServiceError(f"the KMS did not answer on port {self.port} in {wait_seconds:.0f} s")
            time.sleep(0.1)
        processes.write_record(self.pid_file, process.pid)
        return True

    def stop(self, wait_seconds: float = 10.0) -> bool:
        """Stop the KMS that `start` started (by its pid file); False when none ran.

        Only the very process `start` recorded is signalled: a pid reused by another
        process (after a reboot or a kill -9) is left alone and the stale file removed.
        """
        record = self._record()
        if record is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        stopped = processes.terminate(record, wait_seconds)
        self.pid_file.unlink(missing_ok=True)
        return stopped
