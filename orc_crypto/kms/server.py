"""Run the embedded KMS with uvicorn: in the foreground (CLI) or in a background thread (tests, services)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import uvicorn
from pydantic_settings import BaseSettings, SettingsConfigDict

from orc_crypto.keys.base import KeyProviderError
from orc_crypto.kms.acl import KeyAcls
from orc_crypto.kms.app import KeyBackend, KmsState, create_app
from orc_crypto.kms.audit import AuditLog

DEFAULT_HOST = "127.0.0.1"


class KmsSettings(BaseSettings):
    """Knobs of `watershed kms serve` (env WATERSHED_KMS_HOST, WATERSHED_KMS_PORT, ...)."""

    model_config = SettingsConfigDict(env_prefix="WATERSHED_", extra="ignore")

    kms_host: str = DEFAULT_HOST
    kms_port: int = 9600
    kms_acl_file: Path | None = None
    kms_audit_log: Path | None = Path("var/kms/audit.log")


def free_port(host: str = DEFAULT_HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def provider_uri(host: str, port: int) -> str:
    """The value for `hadoop.security.key.provider.path`."""
    return f"kms://http@{host}:{port}/kms"


class KmsServer:
    """The embedded KMS on (host, port), started in a daemon thread; `stop()` shuts it down cleanly."""

    def __init__(
        self,
        backend: KeyBackend,
        acls: KeyAcls,
        *,
        host: str = DEFAULT_HOST,
        port: int | None = None,
        audit_path: Path | None = None,
    ) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.app = create_app(backend, acls, AuditLog(audit_path))
        config = uvicorn.Config(
            self.app, host=host, port=self.port, log_level="warning", access_log=False, lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def state(self) -> KmsState:
        return self.app.state.kms

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/kms"

    @property
    def provider_path(self) -> str:
        return provider_uri(self.host, self.port)

    def start(self, timeout: float = 15.0) -> KmsServer:
        self._thread = threading.Thread(target=self._server.run, name=f"kms-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive():
                raise KeyProviderError(f"embedded KMS failed to start on {self.host}:{self.port}")
            if time.monotonic() > deadline:
                self.stop()
                raise KeyProviderError(f"embedded KMS did not start on {self.host}:{self.port} in {timeout}s")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def __enter__(self) -> KmsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_forever(
    backend: KeyBackend, acls: KeyAcls, *, host: str, port: int, audit_path: Path | None = None
) -> None:
    """Foreground server for `watershed kms serve` (Ctrl-C stops it)."""
    app = create_app(backend, acls, AuditLog(audit_path))
    uvicorn.run(app, host=host, port=port, log_level="info", access_log=False, lifespan="off")
