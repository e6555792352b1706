"""`watershed ddl` with tags.json and policy.yaml files."""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from tests.orc_crypto.conftest import ENCRYPTED_TABLE, POLICY, TABLE_TAGS
from watershed.api.cli import app


def _flat(result) -> str:
    """CLI output with rich's line wrapping undone."""
    return " ".join(result.output.split())


def test_ddl_command_prints_create_and_alter(tmp_path):
    tags, policy = tmp_path / "tags.json", tmp_path / "policy.yaml"
    tags.write_text(json.dumps(TABLE_TAGS))
    policy.write_text(yaml.safe_dump({**POLICY, "key_provider_path": "kms://http@kms:9600/kms"}))
    runner = CliRunner()
    created = runner.invoke(app, ["ddl", ENCRYPTED_TABLE, "--tags", str(tags), "--policy", str(policy)])
    assert created.exit_code == 0, created.output
    assert created.output.startswith(f"CREATE TABLE {ENCRYPTED_TABLE} (")
    assert 'hadoop.security.key.provider.path "kms://http@kms:9600/kms"' in created.output
    assert 'orc.encrypt "fin:salary;pii:ssn,email,address"' in created.output
    override = runner.invoke(
        app,
        [
            "ddl",
            ENCRYPTED_TABLE,
            "--tags",
            str(tags),
            "--policy",
            str(policy),
            "--kms-uri",
            "kms://http@other:1/kms",
        ],
    )
    assert 'provider.path "kms://http@other:1/kms"' in override.output
    altered = runner.invoke(
        app, ["ddl", ENCRYPTED_TABLE, "--tags", str(tags), "--policy", str(policy), "--alter"]
    )
    assert altered.output.strip() == (
        f"ALTER TABLE {ENCRYPTED_TABLE} SET TBLPROPERTIES ('orc.encrypt'='fin:salary;pii:ssn,email,address', "
        "'orc.mask'='nullify:ssn,address;redact:salary;sha256:email');"
    )


def test_ddl_command_errors_name_the_file(tmp_path):
    tags, policy = tmp_path / "tags.json", tmp_path / "policy.yaml"
    tags.write_text("{not json")
    policy.write_text(yaml.safe_dump(POLICY))
    runner = CliRunner()
    bad = runner.invoke(app, ["ddl", "t", "--tags", str(tags), "--policy", str(policy)])
    assert bad.exit_code != 0 and "tags.json" in _flat(bad) and "Traceback" not in _flat(bad)
    tags.write_text(json.dumps(TABLE_TAGS))
    policy.write_text("levels: [{name: pii}]\n")
    bad_policy = runner.invoke(app, ["ddl", ENCRYPTED_TABLE, "--tags", str(tags), "--policy", str(policy)])
    assert bad_policy.exit_code != 0 and "policy.yaml" in _flat(bad_policy)
    missing = runner.invoke(app, ["ddl", "t", "--tags", str(tmp_path / "x.json"), "--policy", str(policy)])
    assert missing.exit_code != 0 and "x.json" in _flat(missing)
