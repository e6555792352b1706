"""WATERSHED_DATA_DIR is resolved once to an absolute path, and what lives under it by default follows it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.graph.model import ServicesStatus
from watershed.graph.server import free_port

runner = CliRunner()

UNDER_THE_DATA_DIR = (
    "WATERSHED_KEYSTORE_PATH",
    "WATERSHED_KMS_AUDIT_LOG",
    "WATERSHED_KMS_SECRET_FILE",
    "WATERSHED_KMS_TOKEN_FILE",
    "WATERSHED_SETTINGS_FILE",
)


def test_relative_data_dir_is_absolute_and_carries_the_kms_files(tmp_path, monkeypatch):
    from watershed.graph.settings import GraphSettings
    from watershed.orc_crypto.keys.embedded import KeystoreSettings
    from watershed.orc_crypto.kms.server import KmsSettings

    for name in UNDER_THE_DATA_DIR:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WATERSHED_DATA_DIR", "state/../data")
    settings, keystore, kms = GraphSettings(), KeystoreSettings(), KmsSettings()
    monkeypatch.chdir("/")  # resolved when read: a later change of directory does not move them
    data = tmp_path.resolve() / "data"
    assert settings.data_dir == data
    assert keystore.keystore_path == data / "kms" / "keystore.json"
    assert kms.kms_audit_log == data / "kms" / "audit.log"
    assert kms.kms_secret_file == data / "kms" / "kms.secret"


@pytest.mark.services  # no fixture: the test runs `watershed services up` itself
def test_services_started_in_one_directory_are_found_from_another(tmp_path, monkeypatch):
    """`up` in A with a relative data dir (and the default keystore under it); `status`/`down` from A/elsewhere."""
    from watershed.orc_crypto.keys.embedded import EmbeddedKeystore

    home = tmp_path / "a"
    elsewhere = home / "elsewhere"
    elsewhere.mkdir(parents=True)
    for name in UNDER_THE_DATA_DIR:
        monkeypatch.delenv(name, raising=False)
    for name in ("FALKORDB", "REDIS", "KMS", "API"):
        monkeypatch.setenv(f"WATERSHED_{name}_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_KEYSTORE_PASSPHRASE", "data-dir-test")
    data = home.resolve() / "data"
    EmbeddedKeystore.create(data / "kms" / "keystore.json", "data-dir-test", scrypt_n=2**10).create_key("pii")
    try:
        monkeypatch.chdir(home)
        monkeypatch.setenv("WATERSHED_DATA_DIR", "data")
        up = runner.invoke(app, ["services", "up"], catch_exceptions=False)
        assert up.exit_code == 0, up.output
        assert f"data directory: {data}" in up.output

        monkeypatch.chdir(elsewhere)
        monkeypatch.setenv("WATERSHED_DATA_DIR", "../data")
        status = runner.invoke(app, ["services", "status", "--format", "json"], catch_exceptions=False)
        assert status.exit_code == 0, status.output
        view = ServicesStatus.model_validate_json(status.stdout)
        assert Path(view.data_dir) == data
        assert {s.name: (s.running, s.answering) for s in view.services} == {
            "falkordb": (True, True),
            "redis": (True, True),
            "kms": (True, True),
            "api": (True, True),
            "worker": (True, True),
        }
        down = runner.invoke(app, ["services", "down"], catch_exceptions=False)
        assert down.output.split(":", 1)[1].split(", ") == [" worker", "api", "falkordb", "redis", "kms\n"]
        assert list(data.glob("*/*.pid")) == []
    finally:
        monkeypatch.setenv("WATERSHED_DATA_DIR", str(data))
        runner.invoke(app, ["services", "down"])


def test_harvest_records_default_under_the_data_dir(tmp_path, monkeypatch):
    """Without --out the run records go to DATA_DIR/harvest: an unusable one is named before Spark starts."""
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    scripts = tmp_path / "tasks"
    scripts.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WATERSHED_DATA_DIR", "blocker")
    result = runner.invoke(app, ["harvest", "--tasks", str(scripts), "--no-graph"], catch_exceptions=False)
    assert result.exit_code == 1
    assert str(blocker.resolve() / "harvest") in " ".join(result.output.split()), result.output


def test_services_status_bad_format_is_a_usage_error():
    result = runner.invoke(app, ["services", "status", "--format", "csv"])
    assert result.exit_code == 2 and "csv" in result.output
