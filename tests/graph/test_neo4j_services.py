"""`watershed services` with WATERSHED_BACKEND=neo4j: the local Neo4j started, listed and stopped like
FalkorDB (graph/services.py, graph/server.py), and nothing started for a Neo4j run elsewhere."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.graph import neo4j_server, processes, services
from watershed.graph.neo4j_server import NEO4J_VERSION
from watershed.graph.server import free_port
from watershed.graph.settings import GraphSettings

runner = CliRunner()
POM = Path(__file__).resolve().parents[2] / "graph" / "neo4j_launcher" / "pom.xml"


@pytest.fixture
def neo4j_service_env(tmp_path, monkeypatch):
    """Settings for `services` on a local Neo4j of this test's own: a data directory, free ports."""
    monkeypatch.setenv("WATERSHED_BACKEND", "neo4j")
    monkeypatch.setenv("WATERSHED_NEO4J_URI", f"bolt://127.0.0.1:{free_port()}")
    monkeypatch.setenv("WATERSHED_NEO4J_PAGECACHE", "64m")
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_REDIS_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_KMS_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_API_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_KEYSTORE_PATH", str(tmp_path / "keystore.json"))
    for name in (
        "WATERSHED_NEO4J_PASSWORD",
        "WATERSHED_NEO4J_PASSWORD_FILE",
        "WATERSHED_KEYSTORE_PASSPHRASE",
    ):
        monkeypatch.delenv(name, raising=False)
    yield tmp_path / "var"
    runner.invoke(app, ["services", "down"])


def test_the_pinned_version_is_the_poms():
    assert f"<neo4j.version>{NEO4J_VERSION}</neo4j.version>" in POM.read_text()


@pytest.mark.parametrize(
    "uri",
    [
        "neo4j://127.0.0.1:7687",  # routing: a cluster's
        "neo4j+s://abc.databases.neo4j.io",  # Aura
        "bolt+s://graph.example.com:7687",
        "bolt://graph.example.com:7687",
        "bolt://10.1.2.3:7687",
    ],
)
def test_a_neo4j_elsewhere_starts_nothing_here(uri, tmp_path):
    settings = GraphSettings(backend="neo4j", neo4j_uri=uri, data_dir=tmp_path)
    assert [spec.name for spec in services.specs(settings)] == ["redis"]


def test_a_local_neo4j_is_the_graph_service_and_falkordb_is_not(tmp_path):
    local = GraphSettings(backend="neo4j", neo4j_uri="bolt://localhost:7777", data_dir=tmp_path)
    graph, redis = services.specs(local)
    assert (graph.name, graph.host, graph.port, redis.name) == ("neo4j", "localhost", 7777, "redis")
    assert graph.directory == tmp_path / "neo4j"
    falkordb = GraphSettings(backend="falkordb", data_dir=tmp_path)
    assert [spec.name for spec in services.specs(falkordb)] == ["falkordb", "redis"]


def test_a_password_file_that_is_not_there_is_named(neo4j_service_env, tmp_path, monkeypatch):
    monkeypatch.setenv("WATERSHED_NEO4J_PASSWORD_FILE", str(tmp_path / "missing"))
    result = runner.invoke(app, ["services", "up"])
    assert result.exit_code == 1
    assert f"WATERSHED_NEO4J_PASSWORD_FILE={tmp_path / 'missing'}: cannot read it" in " ".join(
        result.output.split()
    )
    assert not (neo4j_service_env / "neo4j" / "neo4j.pid").exists()


def _record(data_dir: Path) -> processes.ProcessRecord:
    record = processes.read_record(data_dir / "neo4j" / "neo4j.pid")
    assert record is not None and processes.is_same(record)
    return record


def _node_ids(settings: GraphSettings) -> list[str]:
    from watershed.graph.backends import open_answering

    store = open_answering(settings)
    try:
        return [row[0] for row in store.read("MATCH (t:Table) RETURN t.id ORDER BY t.id")]
    finally:
        store.close()


def _write_table(settings: GraphSettings, table_id: str) -> None:
    from watershed.graph.backends import open_answering

    store = open_answering(settings, schema=True)
    try:
        store.write_all([("MERGE (:Table {id: $id})", {"id": table_id})])
    finally:
        store.close()


def test_up_status_down_and_a_clean_restart(neo4j_service_env, monkeypatch):
    up = runner.invoke(app, ["services", "up"], catch_exceptions=False)
    assert up.exit_code == 0, up.output
    record = _record(neo4j_service_env)
    assert "WatershedNeo4j" in record.cmdline and record.start_ticks is not None
    # the password file made on the first start: only its owner reads it, and no command line has it
    secret_file = neo4j_service_env / "neo4j" / "password"
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    secret = secret_file.read_text().strip()
    assert secret and not any(secret in part for part in record.cmdline)
    assert not (neo4j_service_env / "falkordb").exists()  # the graph is Neo4j: no FalkorDB
    twice = runner.invoke(app, ["services", "up"], catch_exceptions=False)
    assert twice.exit_code == 0 and _record(neo4j_service_env) == record  # nothing restarted

    status = runner.invoke(app, ["services", "status", "--format", "json"])
    states = {s["name"]: s for s in json.loads(status.output)["services"]}
    assert states["neo4j"]["running"] and states["neo4j"]["answering"]
    assert "falkordb" not in states

    settings = GraphSettings()
    _write_table(settings, "db.kept")
    down = runner.invoke(app, ["services", "down"])
    assert "neo4j" in down.output
    assert processes.describe(record.pid) is None  # it stopped by its own shutdown, waited for
    assert not (neo4j_service_env / "neo4j" / "neo4j.pid").exists()

    again = runner.invoke(app, ["services", "up"], catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert _node_ids(settings) == ["db.kept"]
    # a clean shutdown leaves nothing to recover
    assert not re.search(r"Recovery (required|in progress)", _debug_log(neo4j_service_env))

    # `WATERSHED_BACKEND=neo4j make demo`, then `watershed services status|down` without the
    # setting: the Neo4j started from this data directory is still listed and stopped
    restarted = _record(neo4j_service_env)
    monkeypatch.setenv("WATERSHED_BACKEND", "falkordb")
    status = runner.invoke(app, ["services", "status", "--format", "json"])
    states = {s["name"]: s for s in json.loads(status.output)["services"]}
    assert states["neo4j"]["running"] and not states["falkordb"]["running"]
    down = runner.invoke(app, ["services", "down"])
    assert "neo4j" in down.output, down.output
    assert processes.describe(restarted.pid) is None


def test_a_password_that_begins_with_a_dash_starts_neo4j(neo4j_service_env, monkeypatch):
    # one generated password in 64 begins with "-": the launcher once read it as an option
    monkeypatch.setenv("WATERSHED_NEO4J_PASSWORD", "-dash-first-password")
    up = runner.invoke(app, ["services", "up"], catch_exceptions=False)
    assert up.exit_code == 0, up.output
    settings = GraphSettings()
    _write_table(settings, "db.dash")
    assert _node_ids(settings) == ["db.dash"]


def _debug_log(data_dir: Path) -> str:
    return (data_dir / "neo4j" / "logs" / "debug.log").read_text(errors="replace")


def test_a_killed_neo4j_restarts_and_recovers_what_was_committed(neo4j_service_env):
    settings = GraphSettings()
    services.up(settings)
    _write_table(settings, "db.committed")
    record = _record(neo4j_service_env)
    os.kill(record.pid, signal.SIGKILL)
    processes.wait_gone(record.pid, 30)
    assert not services.status(settings)[0].running

    home = neo4j_service_env / "neo4j"
    logged = neo4j_server.debug_log(home).stat().st_size
    services.up(settings)
    assert _record(neo4j_service_env).pid != record.pid
    assert _node_ids(settings) == ["db.committed"]
    # the start recovered the store from its transaction log, and said how far it had come
    assert b"Recovery required from position" in neo4j_server.debug_log(home).read_bytes()[logged:]
    assert neo4j_server.recovery_progress(home, logged) == "recovering database neo4j, 100%"
    assert services.down(settings) == ["neo4j", "redis"]


def test_a_port_in_use_names_the_uri_setting(neo4j_service_env, monkeypatch):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        monkeypatch.setenv("WATERSHED_NEO4J_URI", f"bolt://127.0.0.1:{port}")
        result = runner.invoke(app, ["services", "up"])
    assert result.exit_code == 1
    assert f"port {port}" in result.output and "WATERSHED_NEO4J_URI" in result.output


def test_without_the_neo4j_driver_up_names_the_extra(neo4j_service_env, monkeypatch):
    # hidden from this process's imports, as in an install without the extra
    monkeypatch.setitem(sys.modules, "neo4j", None)
    result = runner.invoke(app, ["services", "up"])
    assert result.exit_code == 1
    assert "pip install 'watershed-lineage[neo4j]'" in " ".join(result.output.split())
    assert not (neo4j_service_env / "neo4j" / "neo4j.pid").exists()
