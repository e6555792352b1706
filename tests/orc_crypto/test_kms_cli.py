"""`watershed kms ...` on a real keystore and a real server process."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.orc_crypto.keys.base import KeyAccessDeniedError
from watershed.orc_crypto.keys.kms_client import KmsClient
from watershed.orc_crypto.keys.tokens import issue_token, load_or_create_secret
from watershed.orc_crypto.kms.server import free_port

REPO = Path(__file__).resolve().parents[2]


def _flat(result) -> str:
    """CLI output with rich's line wrapping undone."""
    return " ".join(result.output.split())


def test_create_roll_list_describe(kms_env, tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["kms", "create-key", "pii", "--description", "people"])
    assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["kms", "create-key", "fin", "--bits", "128"]).exit_code == 0
    assert runner.invoke(app, ["kms", "roll", "pii"]).exit_code == 0
    listed = runner.invoke(app, ["kms", "list"])
    assert listed.exit_code == 0
    assert listed.output.splitlines() == ["fin\t128 bits\t1 versions", "pii\t256 bits\t2 versions"]
    described = runner.invoke(app, ["kms", "describe", "pii"])
    assert "current pii@1" in _flat(described) and "description: people" in _flat(described)
    assert (tmp_path / "ks.json").stat().st_mode & 0o777 == 0o600


def test_cli_errors_name_the_problem(kms_env, tmp_path, monkeypatch):
    runner = CliRunner()
    missing = runner.invoke(app, ["kms", "list", "--keystore", str(tmp_path / "none.json")])
    assert missing.exit_code != 0 and "none.json" in _flat(missing)
    assert runner.invoke(app, ["kms", "create-key", "pii"]).exit_code == 0
    duplicate = runner.invoke(app, ["kms", "create-key", "pii"])
    assert duplicate.exit_code != 0 and "already exists" in _flat(duplicate)
    unknown = runner.invoke(app, ["kms", "describe", "nope"])
    assert unknown.exit_code != 0 and "'nope'" in _flat(unknown)
    monkeypatch.setenv("WATERSHED_KEYSTORE_PASSPHRASE", "wrong")
    wrong = runner.invoke(app, ["kms", "list"])
    assert wrong.exit_code != 0 and "wrong passphrase" in _flat(wrong)
    monkeypatch.delenv("WATERSHED_KEYSTORE_PASSPHRASE")
    nopass = runner.invoke(app, ["kms", "list"])
    assert nopass.exit_code != 0 and "WATERSHED_KEYSTORE_PASSPHRASE" in _flat(nopass)
    assert "Traceback" not in _flat(nopass)


def test_serve_process_with_acl(kms_env, tmp_path):
    runner = CliRunner()
    assert runner.invoke(app, ["kms", "create-key", "pii"]).exit_code == 0
    acl = tmp_path / "acl.yaml"
    acl.write_text("keys:\n  pii:\n    metadata: [alice, bob]\n    decrypt_eek: [alice]\n")
    port = free_port()
    audit = tmp_path / "audit.log"
    command = [sys.executable, "-c", "from watershed.api.cli import main; main()", "kms", "serve"]
    command += ["--port", str(port), "--acl", str(acl), "--audit-log", str(audit)]
    process = subprocess.Popen(
        command, cwd=REPO, env=kms_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        uri = f"kms://http@127.0.0.1:{port}/kms"
        deadline = time.monotonic() + 20
        while not (tmp_path / "kms.secret").exists():
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.1)
        # Tokens for other users are minted with the server's secret (what an admin tool would do).
        secret = load_or_create_secret(tmp_path / "kms.secret")
        with KmsClient(uri, token=issue_token(secret, "alice"), timeout=2) as alice:
            while True:
                try:
                    info = alice.key_info("pii")
                    break
                except Exception:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise
                    time.sleep(0.2)
            assert info.bit_length == 256
            assert len(alice.decrypt_local_key("pii", 0, bytes(32))) == 32
        with KmsClient(uri, token=issue_token(secret, "bob")) as bob, pytest.raises(KeyAccessDeniedError):
            bob.decrypt_local_key("pii", 0, bytes(32))
        lines = audit.read_text().splitlines()
        assert any('"user": "bob"' in line and '"DENIED"' in line for line in lines)
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_serve_rejects_bad_input(kms_env, tmp_path):
    runner = CliRunner()
    both = runner.invoke(app, ["kms", "serve", "--keystore", "a", "--jceks", "b"])
    assert both.exit_code != 0 and "exclusive" in _flat(both)
    bad_acl = tmp_path / "acl.yaml"
    bad_acl.write_text("nonsense: 1\n")
    assert runner.invoke(app, ["kms", "create-key", "pii"]).exit_code == 0
    result = runner.invoke(app, ["kms", "serve", "--acl", str(bad_acl), "--port", str(free_port())])
    assert result.exit_code != 0 and "acl.yaml" in _flat(result)
