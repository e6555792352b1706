"""The embedded KMS as a background service of `watershed services up|down|status`.

It runs the KMS server (`python -m watershed.orc_crypto.kms`) as its own process (its own session, so a
terminal's Ctrl-C does not reach it), records its pid in `DIR/kms.pid`, logs
to `DIR/kms.log`, and counts as up once its HTTP port answers. It is only
started when there is something to serve: a keystore file and its passphrase.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from watershed.graph.background import BackgroundProcess
from watershed.orc_crypto.keys.embedded import KeystoreSettings
from watershed.orc_crypto.kms.settings import KmsSettings


@dataclass
class KmsService:
    """The embedded KMS as a recorded background process (graph/background.py) that only starts
    when there is something to serve."""

    host: str
    port: int
    directory: Path
    keystore: Path
    process: BackgroundProcess = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.process = BackgroundProcess(
            "kms",
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
            self.directory,
            self.host,
            self.port,
            legacy_match=self._is_our_command,
        )

    @classmethod
    def from_settings(cls, data_dir: Path) -> KmsService:
        settings = KmsSettings()
        return cls(settings.kms_host, settings.kms_port, data_dir / "kms", KeystoreSettings().keystore_path)

    @property
    def pid_file(self) -> Path:
        return self.process.pid_file

    @property
    def log_file(self) -> Path:
        return self.process.log_file

    def _is_our_command(self, cmdline: list[str]) -> bool:
        # a bare pid from before process records: ours only if it is a KMS on our port
        text = " ".join(cmdline)
        return ("watershed.orc_crypto.kms" in text or "kms serve" in text) and f"--port {self.port}" in text

    def pid(self) -> int | None:
        """The pid `up` recorded, if that very process still runs (same start time and command line)."""
        return self.process.pid()

    def stale_note(self) -> str | None:
        """Why the pid file is not trusted, or None (no pid file, or its process is the KMS)."""
        return self.process.stale_note()

    def answers(self) -> bool:
        return self.process.answers()

    def why_not_started(self) -> str | None:
        """Why `up` leaves the KMS off, or None when it can start it."""
        if not self.keystore.exists():
            return f"no keystore at {self.keystore} (create one with `watershed kms create-key NAME`)"
        settings = KeystoreSettings()
        if not settings.keystore_passphrase and settings.keystore_passphrase_file is None:
            return "no WATERSHED_KEYSTORE_PASSPHRASE or WATERSHED_KEYSTORE_PASSPHRASE_FILE"
        return None

    def start(self, wait_seconds: float = 20.0) -> bool:
        """Start the KMS unless it already runs (True); False when there is nothing to serve.

        A taken port or a KMS that exits or never answers is a ServiceStartError naming it.
        """
        if self.pid() is not None and self.answers():
            return True
        if self.why_not_started() is not None:
            return False
        self.process.start(wait_seconds)
        return True

    def stop(self, wait_seconds: float = 10.0) -> bool:
        """Stop the KMS that `start` started; False when none ran (a reused pid is left alone)."""
        return self.process.stop(wait_seconds)
