"""`watershed services up` starts the API and a worker as recorded background processes; `users add` prints a token that works there."""

from __future__ import annotations

import json
import os
import socket

import httpx
import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.graph.server import free_port


@pytest.fixture
def service_env(tmp_path, monkeypatch):
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path / "var"))
    for name in ("FALKORDB", "REDIS", "KMS", "API"):
        monkeypatch.setenv(f"WATERSHED_{name}_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_KEYSTORE_PATH", str(tmp_path / "keystore.json"))
    monkeypatch.delenv("WATERSHED_KEYSTORE_PASSPHRASE", raising=False)
    monkeypatch.delenv("WATERSHED_CELERY_BROKER", raising=False)
    yield tmp_path / "var"
    CliRunner().invoke(app, ["services", "down"])


def _status() -> dict:
    result = CliRunner().invoke(app, ["services", "status", "--format", "json"])
    return {s["name"]: s for s in json.loads(result.output)["services"]}


def test_up_starts_the_api_and_a_worker_and_down_stops_them(service_env):
    runner = CliRunner()
    up = runner.invoke(app, ["services", "up"])
    assert up.exit_code == 0, up.output
    port = int(os.environ["WATERSHED_API_PORT"])
    assert f"http://127.0.0.1:{port}/" in up.output
    states = _status()
    assert states["api"]["running"] and states["api"]["answering"] and states["api"]["port"] == port
    assert states["worker"]["running"], (service_env / "worker" / "worker.log").read_text()
    added = runner.invoke(app, ["users", "add", "admin", "--role", "admin"])
    assert added.exit_code == 0, added.output
    token = next(line for line in added.output.splitlines() if line.startswith("wst_"))
    me = httpx.get(f"http://127.0.0.1:{port}/api/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert me.json() == {"name": "admin", "role": "admin", "databases": None}
    again = runner.invoke(app, ["users", "add", "admin", "--role", "admin"])
    assert again.exit_code == 1 and "already exists" in again.output
    down = runner.invoke(app, ["services", "down"])
    assert "api" in down.output and "worker" in down.output
    states = _status()
    assert not states["api"]["running"] and not states["worker"]["running"]


def test_up_names_a_taken_api_port_and_leaves_nothing_running(service_env):
    port = int(os.environ["WATERSHED_API_PORT"])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        up = CliRunner().invoke(app, ["services", "up"])
    assert up.exit_code == 1
    assert f"port 127.0.0.1:{port} is taken" in up.output
    assert not any(s["running"] for s in _status().values())
