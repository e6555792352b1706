"""The embedded KMS as a background service of `watershed services up|down|status`.

It runs `watershed kms serve` as its own process (its own session, so a
terminal's Ctrl-C does not reach it), records its pid in `DIR/kms.pid`, logs
to `DIR/kms.log`, and counts as up once its HTTP port answers. It is only
started when there is something to serve: a keystore file and its passphrase.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from orc_crypto.keys.embedded import KeystoreSettings
from orc_crypto.kms.server import KmsSettings


class KmsServiceError(RuntimeError):
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

    def pid(self) -> int | None:
        """The pid `up` recorded, if that process still lives."""
        try:
            pid = int(self.pid_file.read_text().strip())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return None
        return pid

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
                    "api.cli",
                    "kms",
                    "serve",
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
        self.pid_file.write_text(f"{process.pid}\n")
        return True

    def stop(self, wait_seconds: float = 10.0) -> bool:
        """Stop the KMS that `start` started (by its pid file); False when none ran."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + wait_seconds
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reap it when this process started it
            try:
                os.kill(pid, 0)
            except OSError:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)
        return True
