"""Fixtures of the graph tests that run `watershed services` through the CLI."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.graph.server import ServerSpec, free_port, start, stop


@pytest.fixture
def service_env(tmp_path, monkeypatch):
    """Settings for services of this test's own: a data directory and free ports; stopped afterwards.

    No keystore passphrase, so the KMS stays off unless the test sets one.
    """
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_REDIS_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_KMS_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_API_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_KEYSTORE_PATH", str(tmp_path / "keystore.json"))
    monkeypatch.delenv("WATERSHED_KEYSTORE_PASSPHRASE", raising=False)
    yield tmp_path / "var"
    CliRunner().invoke(app, ["services", "down"])


@pytest.fixture
def run_state_redis(tmp_path):
    """A Redis of this test's own for a propagation run's state (lock, fencing token, record)."""
    spec = ServerSpec("redis", "127.0.0.1", free_port(), tmp_path / "redis", with_falkordb=False)
    start(spec)
    yield spec
    stop(spec)
