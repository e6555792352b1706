"""Run the embedded KMS with uvicorn: in the foreground (CLI) or in a background thread (tests, services)."""

from __future__ import annotations

import getpass
import socket
import threading
import time
from pathlib import Path

import uvicorn

from watershed.orc_crypto.keys.base import KeyProviderError
from watershed.orc_crypto.keys.tokens import (
    issue_token,
    load_or_create_secret,
    token_services,
    write_token_file,
)
from watershed.orc_crypto.kms.acl import KeyAcls
from watershed.orc_crypto.kms.app import KeyBackend, KmsAuth, KmsState, create_app
from watershed.orc_crypto.kms.audit import AuditLog
from watershed.orc_crypto.kms.settings import DEFAULT_HOST, KmsSettings

__all__ = ["DEFAULT_HOST", "KmsServer", "KmsSettings", "prepare_auth", "provider_uri", "serve_forever"]


def token_hosts(host: str) -> list[str]:
    """The host names a client may put in the provider URI for a server bound to `host`."""
    if host in ("127.0.0.1", "localhost"):
        return ["127.0.0.1", "localhost"]
    return [host]


def prepare_auth(settings: KmsSettings, host: str, port: int, owner: str | None = None) -> KmsAuth:
    """Load (or generate) the server secret and write the owner's token file for HOST:PORT."""
    secret = load_or_create_secret(settings.kms_secret_file)
    owner = owner or getpass.getuser()
    services = [service for h in token_hosts(host) for service in token_services(h, port)]
    write_token_file(settings.kms_token_file, issue_token(secret, owner), services)
    return KmsAuth(
        mode=settings.kms_auth,
        secret=secret,
        allow_material_read=settings.kms_allow_material_read,
        max_body_bytes=settings.kms_max_body_bytes,
    )


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
        auth: KmsAuth | None = None,
    ) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.app = create_app(backend, acls, AuditLog(audit_path), auth)
        config = uvicorn.Config(
            self.app, host=host, port=self.port, log_level="warning", access_log=False, lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def state(self) -> KmsState:
        return self.app.state.kms

    def issue_token(self, user: str):
        """A delegation token for `user` (orc_crypto.keys.tokens.DelegationToken) signed by this server."""
        return self.state.auth.issue_token(user)

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
    backend: KeyBackend,
    acls: KeyAcls,
    *,
    host: str,
    port: int,
    audit_path: Path | None = None,
    auth: KmsAuth | None = None,
) -> None:
    """Foreground server for `watershed kms serve` (Ctrl-C stops it)."""
    app = create_app(backend, acls, AuditLog(audit_path), auth)
    uvicorn.run(app, host=host, port=port, log_level="info", access_log=False, lifespan="off")
