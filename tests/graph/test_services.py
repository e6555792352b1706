"""`watershed services up|down|status` against real redis-server processes."""

from __future__ import annotations

import os
import socket

from typer.testing import CliRunner

from watershed.api.cli import app

runner = CliRunner()


def test_up_twice_is_harmless_and_down_stops_what_up_started(service_env):
    first = runner.invoke(app, ["services", "up"], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    pids = sorted(p.read_text() for p in service_env.glob("*/*.pid"))
    assert len(pids) == 4  # falkordb, redis, the API and a worker
    second = runner.invoke(app, ["services", "up"], catch_exceptions=False)
    assert second.exit_code == 0
    assert sorted(p.read_text() for p in service_env.glob("*/*.pid")) == pids  # nothing restarted
    status = runner.invoke(app, ["services", "status"])
    assert status.output.count("yes") == 8
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
    assert result.exit_code == 1
    assert f"port {port}" in result.output and "already in use" in result.output


def test_persistence_survives_a_restart(service_env):
    runner.invoke(app, ["services", "up"], catch_exceptions=False)
    from watershed.graph.falkordb_store import FalkorDBStore

    store = FalkorDBStore.from_settings()
    store.ensure_schema()
    store.write_all([("CREATE (:Table {id: 'db.kept'})", {})])
    runner.invoke(app, ["services", "down"])
    runner.invoke(app, ["services", "up"], catch_exceptions=False)
    assert FalkorDBStore.from_settings().search("db.kept") == [("db.kept", "Table")]


def test_the_kms_starts_with_the_services_once_a_keystore_exists(service_env, tmp_path, monkeypatch):
    from watershed.orc_crypto.keys.embedded import EmbeddedKeystore
    from watershed.orc_crypto.keys.kms_client import KmsClient

    first = runner.invoke(app, ["services", "up"], catch_exceptions=False)
    assert "kms not started: no keystore" in " ".join(first.output.split())
    runner.invoke(app, ["services", "down"])

    monkeypatch.setenv("WATERSHED_KEYSTORE_PASSPHRASE", "services-test")
    keystore = EmbeddedKeystore.create(tmp_path / "keystore.json", "services-test", scrypt_n=2**10)
    keystore.create_key("pii", bits=256)
    up = runner.invoke(app, ["services", "up"], catch_exceptions=False)
    assert up.exit_code == 0, up.output
    assert (service_env / "kms" / "kms.pid").exists()
    port = int(os.environ["WATERSHED_KMS_PORT"])
    with KmsClient(f"kms://http@127.0.0.1:{port}/kms") as client:
        assert client.key_info("pii").bit_length == 256
    status = runner.invoke(app, ["services", "status"])
    assert status.output.count("yes") == 10  # falkordb, redis, kms, api, worker: running and answering
    down = runner.invoke(app, ["services", "down"])
    assert "kms" in down.output and not (service_env / "kms" / "kms.pid").exists()
