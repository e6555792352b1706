"""One protection policy and one PolicyError: `watershed ddl` reads its policy file into the
protection policy the planner uses (graph/protection.py), and every policy's errors are the one
PolicyError of graph/errors.py."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from tests.orc_crypto.conftest import ENCRYPTED_TABLE, POLICY, TABLE_TAGS
from watershed.api.cli import app
from watershed.graph.errors import PolicyError, WatershedError
from watershed.graph.protection import ProtectionPolicy
from watershed.orc_crypto.ddl import TableTags, column_keys, load_ddl_policy
from watershed.propagation import policy as tag_policy


def test_the_ddl_policy_file_is_read_into_the_protection_policy(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump({**POLICY, "key_provider_path": "kms://http@kms:9600/kms"}))
    policy = load_ddl_policy(path)
    assert type(policy) is ProtectionPolicy
    assert [(r.levels, r.key, r.mask) for r in policy.rules] == [
        (["pii"], "pii", "nullify"),
        (["contact"], "pii", "sha256"),
        (["financial"], "fin", "redact"),
    ]
    assert policy.key_provider_path == "kms://http@kms:9600/kms"
    # the first level among a column's tags decides, as the first matching rule does
    keys = column_keys(TableTags(columns=[{"name": "a", "tags": ["financial", "contact"]}]), policy)
    assert {name: (k.key, k.mask) for name, k in keys.items()} == {"a": ("pii", "sha256")}


@pytest.mark.parametrize(
    "text",
    [
        "",  # an empty file protects nothing
        "levels: []\n",
        "key_provider_path: kms://http@h:1/kms\n",
        "levels:\n  - {name: pii, key: pii, mask: ' sha256 '}\n",
        "levels:\n  - {name: pii, key: fin.v2-eu, mask: 'redact,`Xx9`,`_`,`0:3`'}\n",
    ],
)
def test_policy_files_accepted_before_are_accepted(tmp_path, text):
    (tmp_path / "tags.json").write_text(json.dumps(TABLE_TAGS))
    (tmp_path / "policy.yaml").write_text(text)
    result = CliRunner().invoke(
        app,
        [
            "ddl",
            ENCRYPTED_TABLE,
            "--tags",
            str(tmp_path / "tags.json"),
            "--policy",
            str(tmp_path / "policy.yaml"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"CREATE TABLE {ENCRYPTED_TABLE} (")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("levels: [{name: pii}]\n", "levels[0].key: Field required"),
        ("levels: [{key: pii}]\n", "levels[0].name: Field required"),
        ("levels: [{name: pii, key: pii, tag: x}]\n", "levels[0]: unknown key 'tag'"),
        ("rules: []\n", "unknown key 'rules'"),
        ("levels: [{name: a, key: k}, {name: b, key: k, mask: hash}]\n", "levels[1].mask: unknown mask"),
        ("levels: [{name: a, key: Pii}]\n", "levels[0].key: invalid key name"),
        ("levels: [{name: a, key: k}, {name: a, key: j}]\n", "level 'a' is listed twice"),
    ],
)
def test_a_bad_policy_file_is_one_line_naming_the_file_and_entry(tmp_path, text, message):
    (tmp_path / "tags.json").write_text(json.dumps(TABLE_TAGS))
    policy = tmp_path / "policy.yaml"
    policy.write_text(text)
    with pytest.raises(PolicyError) as raised:
        load_ddl_policy(policy)
    assert str(raised.value).startswith(f"policy file {policy}: ") and message in str(raised.value)
    result = CliRunner().invoke(
        app, ["ddl", ENCRYPTED_TABLE, "--tags", str(tmp_path / "tags.json"), "--policy", str(policy)]
    )
    assert result.exit_code == 1 and "Traceback" not in result.output


def test_one_policy_error_for_every_policy(tmp_path):
    assert tag_policy.PolicyError is PolicyError
    assert issubclass(PolicyError, WatershedError) and issubclass(PolicyError, ValueError)
    bad_tag_policy = tmp_path / "tags-policy.yaml"
    bad_tag_policy.write_text("sensitivity: 3\n")
    bad_ddl_policy = tmp_path / "ddl-policy.yaml"
    bad_ddl_policy.write_text("levels: 3\n")
    for load, path in ((tag_policy.load_policy, bad_tag_policy), (load_ddl_policy, bad_ddl_policy)):
        with pytest.raises(PolicyError, match=str(path)):
            load(path)
