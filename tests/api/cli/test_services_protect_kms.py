"""The API that `watershed services up` starts beside the embedded KMS encrypts with that KMS: an
admin's apply runs (it answered 409 "no KMS to encrypt with" unless WATERSHED_PROTECT_KMS and the
token file were set by hand)."""

from __future__ import annotations

import time

import httpx
import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.graph.server import free_port

runner = CliRunner()

#: it runs `services up` itself (FalkorDB, Redis, the KMS, the API) without a server fixture
pytestmark = pytest.mark.services


def test_the_api_services_up_starts_applies_through_the_embedded_kms(tmp_path, monkeypatch):
    from watershed.api.service.accounts.store import AccountStore
    from watershed.graph.backends import open_answering
    from watershed.graph.settings import GraphSettings
    from watershed.orc_crypto.keys.embedded import EmbeddedKeystore

    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path / "var"))
    for name in ("FALKORDB", "REDIS", "KMS"):
        monkeypatch.setenv(f"WATERSHED_{name}_PORT", str(free_port()))
    api_port = free_port()
    monkeypatch.setenv("WATERSHED_API_PORT", str(api_port))
    monkeypatch.setenv("WATERSHED_KEYSTORE_PATH", str(tmp_path / "keystore.json"))
    monkeypatch.setenv("WATERSHED_KEYSTORE_PASSPHRASE", "services-kms-test")
    for name in ("WATERSHED_CELERY_BROKER", "WATERSHED_PROTECT_KMS", "WATERSHED_PROTECT_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    keystore = EmbeddedKeystore.create(tmp_path / "keystore.json", "services-kms-test", scrypt_n=2**10)
    keystore.create_key("pii", bits=256)
    try:
        up = runner.invoke(app, ["services", "up"], catch_exceptions=False)
        assert up.exit_code == 0, up.output
        store = open_answering(GraphSettings())
        try:
            accounts = AccountStore(store)
            accounts.add("boss", "admin", None, actor="test")
            token = accounts.create_token("boss", "test").token
        finally:
            store.close()
        api = f"http://127.0.0.1:{api_port}/api/v1"
        auth = {"Authorization": f"Bearer {token}"}
        started = httpx.post(f"{api}/protect/apply", json={}, headers=auth)
        assert started.status_code == 202, started.text
        deadline = time.monotonic() + 60
        run = started.json()
        while run["status"] == "running" and time.monotonic() < deadline:
            time.sleep(0.2)
            run = httpx.get(f"{api}/protect/runs/{run['id']}", headers=auth).json()
        assert run["status"] == "done", run
    finally:
        runner.invoke(app, ["services", "down"])
