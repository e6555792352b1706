"""`watershed services backup|restore` with a keystore: both come back as they were backed up."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tests.graph.fingerprint import graph_fingerprint
from watershed.api.cli import app
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage

runner = CliRunner()
PASSPHRASE = "backup-test-passphrase"


@pytest.fixture
def keystore_env(service_env, tmp_path, monkeypatch):
    """The test's services with a keystore and its passphrase (so `services up` also runs the KMS)."""
    monkeypatch.setenv("WATERSHED_KEYSTORE_PATH", str(tmp_path / "keys" / "keystore.json"))
    monkeypatch.setenv("WATERSHED_KEYSTORE_PASSPHRASE", PASSPHRASE)
    monkeypatch.setenv("WATERSHED_KEYSTORE_SCRYPT_N", "1024")
    return tmp_path


def _store():
    from watershed.graph.falkordb_store import FalkorDBStore

    store = FalkorDBStore.from_settings()
    store.ensure_schema()
    return store


def _keys(path) -> dict[str, list[bytes]]:
    from watershed.orc_crypto.keys.embedded import EmbeddedKeystore

    keystore = EmbeddedKeystore.open(path, PASSPHRASE)
    return {name: list(keystore.get(name).versions) for name in keystore.names()}


def test_a_restore_brings_back_the_graph_and_the_keys_of_the_backup(keystore_env):
    keystore_path = keystore_env / "keys" / "keystore.json"
    assert runner.invoke(app, ["kms", "create-key", "pii"], catch_exceptions=False).exit_code == 0
    assert runner.invoke(app, ["services", "up"], catch_exceptions=False).exit_code == 0
    store = _store()
    task = SqlTask(task_id="t1", sql="INSERT INTO dw.o SELECT id, upper(email) AS email FROM ods.o")
    store.upsert_tasks([(task, extract_lineage(task))])
    graph_before, keys_before = graph_fingerprint(store), _keys(keystore_path)

    backup_dir = keystore_env / "backup"
    result = runner.invoke(app, ["services", "backup", str(backup_dir)])
    assert result.exit_code == 0, result.output
    assert (backup_dir / "keystore.json").stat().st_mode & 0o077 == 0  # as private as the keystore

    # Changes after the backup: a task gone, a key rolled, another key created.
    store.delete_tasks(["t1"])
    assert runner.invoke(app, ["kms", "roll", "pii"]).exit_code == 0
    assert runner.invoke(app, ["kms", "create-key", "later"]).exit_code == 0
    assert graph_fingerprint(store) != graph_before and _keys(keystore_path) != keys_before
    store.close()

    result = runner.invoke(app, ["services", "restore", str(backup_dir)])
    assert result.exit_code == 0, result.output
    assert graph_fingerprint(_store()) == graph_before
    assert _keys(keystore_path) == keys_before


def test_a_backup_whose_keystore_does_not_open_restores_nothing(keystore_env, monkeypatch):
    assert runner.invoke(app, ["kms", "create-key", "pii"], catch_exceptions=False).exit_code == 0
    assert runner.invoke(app, ["services", "up"], catch_exceptions=False).exit_code == 0
    store = _store()
    task = SqlTask(task_id="t1", sql="INSERT INTO dw.o SELECT id FROM ods.o")
    store.upsert_tasks([(task, extract_lineage(task))])
    backup_dir = keystore_env / "backup"
    assert runner.invoke(app, ["services", "backup", str(backup_dir)]).exit_code == 0
    store.delete_tasks(["t1"])
    after_backup = graph_fingerprint(store)
    store.close()

    monkeypatch.setenv("WATERSHED_KEYSTORE_PASSPHRASE", "not-the-passphrase")
    result = runner.invoke(app, ["services", "restore", str(backup_dir)])
    assert result.exit_code == 1
    assert "keystore in the backup does not open" in " ".join(result.output.split())
    assert graph_fingerprint(_store()) == after_backup  # the graph was left as it was
