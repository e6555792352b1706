"""`services down|status|up` and process identity: stale pid files, a failed `up`, the data directory."""

from __future__ import annotations

import json
import os
import socket
import subprocess

import pytest
import redis
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.graph.server import free_port

runner = CliRunner()


@pytest.fixture
def bystander():
    """An unrelated live process (what a stale pid file names after a reboot reused its pid)."""
    process = subprocess.Popen(["sleep", "300"])
    yield process
    process.kill()
    process.wait()


def test_down_never_signals_a_process_a_stale_pid_file_names(service_env, bystander):
    # Pid files left behind by a crash, whose pids now belong to an unrelated process.
    for name in ("falkordb/falkordb.pid", "redis/redis.pid", "kms/kms.pid"):
        (service_env / name).parent.mkdir(parents=True, exist_ok=True)
        (service_env / name).write_text(f"{bystander.pid}\n")

    status = runner.invoke(app, ["services", "status"])
    assert status.exit_code == 0
    assert "yes" not in status.output
    down = runner.invoke(app, ["services", "down"])
    assert down.exit_code == 0 and "nothing was running" in down.output
    assert bystander.poll() is None  # never signalled
    assert list(service_env.glob("*/*.pid")) == []  # the stale files are gone
    text = " ".join(status.output.split())
    for name in ("falkordb", "redis", "kms"):
        assert f"{name}: the recorded process is gone: pid {bystander.pid}" in text, status.output

    # A full record whose pid was reused: same pid, another start time.
    from watershed.graph import processes

    reused = processes.describe(bystander.pid).model_copy(update={"start_ticks": 1})
    (service_env / "redis" / "redis.pid").write_text(reused.model_dump_json())
    assert "nothing was running" in runner.invoke(app, ["services", "down"]).output
    assert bystander.poll() is None


def test_a_reused_pid_is_not_ours_but_the_recorded_process_is(bystander):
    from watershed.graph import processes

    record = processes.describe(bystander.pid)
    assert processes.is_same(record)
    assert not processes.is_same(record.model_copy(update={"start_ticks": record.start_ticks + 1}))
    assert not processes.is_same(record.model_copy(update={"cmdline": ["redis-server"]}))
    assert not processes.terminate(record.model_copy(update={"start_ticks": record.start_ticks + 1}))
    assert bystander.poll() is None
    assert processes.terminate(record, wait_seconds=5)
    assert bystander.poll() is not None


def test_up_that_fails_on_a_later_port_stops_what_it_started(service_env, monkeypatch):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        monkeypatch.setenv("WATERSHED_REDIS_PORT", str(port))
        result = runner.invoke(app, ["services", "up"])
    assert result.exit_code == 1
    assert f"port {port}" in result.output and "already in use" in result.output
    # FalkorDB came up first in that call; the failure stopped it again.
    falkordb_port = int(os.environ["WATERSHED_FALKORDB_PORT"])
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=falkordb_port, socket_connect_timeout=0.5).ping()
    assert not (service_env / "falkordb" / "falkordb.pid").exists()


def test_up_keeps_servers_it_did_not_start_when_a_later_one_fails(service_env, monkeypatch):
    assert runner.invoke(app, ["services", "up"], catch_exceptions=False).exit_code == 0
    before = json.loads((service_env / "falkordb" / "falkordb.pid").read_text())
    # Redis stops; its port is then taken: the next `up` fails on it but leaves FalkorDB running.
    from watershed.graph.server import ServerSpec, stop
    from watershed.graph.settings import GraphSettings

    settings = GraphSettings()
    stop(ServerSpec("redis", "127.0.0.1", settings.redis_port, settings.data_dir, with_falkordb=False))
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the closed server's TIME_WAITs
        squatter.bind(("127.0.0.1", settings.redis_port))
        squatter.listen()
        result = runner.invoke(app, ["services", "up"])
    assert result.exit_code == 1
    assert json.loads((service_env / "falkordb" / "falkordb.pid").read_text()) == before
    assert redis.Redis(port=settings.falkordb_port).ping()


@pytest.mark.parametrize("kind", ["file", "under-a-file"])
def test_an_unusable_data_directory_is_one_line_naming_it(tmp_path, monkeypatch, kind):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    data_dir = blocker if kind == "file" else blocker / "var"
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(data_dir))
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_REDIS_PORT", str(free_port()))
    result = runner.invoke(app, ["services", "up"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and str(data_dir) in lines[0] and "data directory" in lines[0], result.output
    assert "Traceback" not in result.output
