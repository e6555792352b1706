"""`watershed services up|down|status` against real redis-server processes."""

from __future__ import annotations

import socket

import pytest
from typer.testing import CliRunner

from api.cli import app
from graph.server import free_port

runner = CliRunner()


@pytest.fixture
def service_env(tmp_path, monkeypatch):
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_REDIS_PORT", str(free_port()))
    yield tmp_path / "var"
    runner.invoke(app, ["services", "down"])


def test_up_twice_is_harmless_and_down_stops_what_up_started(service_env):
    first = runner.invoke(app, ["services", "up"], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    pids = sorted(p.read_text() for p in service_env.glob("*/*.pid"))
    assert len(pids) == 2
    second = runner.invoke(app, ["services", "up"], catch_exceptions=False)
    assert second.exit_code == 0
    assert sorted(p.read_text() for p in service_env.glob("*/*.pid")) == pids  # nothing restarted
    status = runner.invoke(app, ["services", "status"])
    assert status.output.count("yes") == 4
    down = runner.invoke(app, ["services", "down"])
    assert "falkordb" in down.output and "redis" in down.output
    assert list(service_env.glob("*/*.pid")) == []
    assert "nothing was running" in runner.invoke(app, ["services", "down"]).output


def test_taken_port_is_a_clear_error(service_env, monkeypatch):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
        result = runner.invoke(app, ["services", "up"])
    assert result.exit_code == 2
    assert f"port {port}" in result.output and "already in use" in result.output


def test_persistence_survives_a_restart(service_env):
    runner.invoke(app, ["services", "up"], catch_exceptions=False)
    from graph.falkordb_store import FalkorDBStore

    store = FalkorDBStore.from_settings()
    store.ensure_schema()
    store._write([("CREATE (:Table {id: 'db.kept'})", {})])
    runner.invoke(app, ["services", "down"])
    runner.invoke(app, ["services", "up"], catch_exceptions=False)
    assert FalkorDBStore.from_settings().search("db.kept") == [("db.kept", "Table")]
