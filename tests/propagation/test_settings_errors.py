"""Settings with a natural range are validated, and a bad one is one line from every command (exit 1)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pydantic import ValidationError

from tests.support.paths import REPO
from watershed.graph.settings import GraphSettings
from watershed.ingest.settings import IngestSettings
from watershed.orc_crypto.keys.embedded import KeystoreSettings
from watershed.orc_crypto.kms.server import KmsSettings
from watershed.propagation.settings import PropagationSettings
from watershed.ttl_advisor.settings import AdvisorSettings


@pytest.mark.parametrize(
    ("cls", "variable", "value"),
    [
        (GraphSettings, "FALKORDB_PORT", "0"),
        (GraphSettings, "FALKORDB_PORT", "70000"),
        (GraphSettings, "REDIS_PORT", "-1"),
        (GraphSettings, "LOAD_BATCH_SIZE", "0"),
        (PropagationSettings, "PROPAGATION_BATCH_SIZE", "0"),
        (PropagationSettings, "PROPAGATION_MAX_LAYERS", "0"),
        (PropagationSettings, "PROPAGATION_LOCK_TTL_SECONDS", "0"),
        (PropagationSettings, "PROPAGATION_STALL_SECONDS", "-5"),
        (PropagationSettings, "PROPAGATION_VISIBILITY_SECONDS", "0"),
        (AdvisorSettings, "TTL_MARGIN_DAYS", "-1"),
        (AdvisorSettings, "TTL_SAMPLE_FILES", "0"),
        (KmsSettings, "KMS_PORT", "65536"),
        (KmsSettings, "KMS_MAX_BODY_BYTES", "0"),
        (KeystoreSettings, "KEYSTORE_SCRYPT_N", "1"),
        (IngestSettings, "PRUNE_MAX_FRACTION", "1.5"),
    ],
)
def test_out_of_range_settings_are_refused(monkeypatch, cls, variable, value):
    monkeypatch.delenv("WATERSHED_SETTINGS_FILE", raising=False)
    monkeypatch.setenv(f"WATERSHED_{variable}", value)
    with pytest.raises(ValidationError) as error:
        cls()
    assert variable.lower() in str(error.value)


def watershed(*args: str, env: dict[str, str], cwd=None) -> subprocess.CompletedProcess:
    """The real entry point (`python -m api.cli` runs `main()` as the `watershed` script does)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("WATERSHED_")}
    return subprocess.run(
        [sys.executable, "-m", "watershed.api.cli", *args],
        env={**clean, "PYTHONPATH": str(REPO), **env},
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


COMMANDS = [
    ("graph", "stats"),
    ("graph", "lineage", "a.b.c"),
    ("ttl", "advise"),
    ("propagate", "--local"),
    ("propagate", "--status"),
    ("tag", "show", "a.b.c"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_bad_setting_value_is_one_line_from_every_command(command):
    line = one_line_error(watershed(*command, env={"WATERSHED_FALKORDB_PORT": "abc"}))
    assert "WATERSHED_FALKORDB_PORT='abc'" in line and "integer" in line


def test_a_negative_ttl_margin_is_refused_by_ttl_advise():
    line = one_line_error(watershed("ttl", "advise", env={"WATERSHED_TTL_MARGIN_DAYS": "-2"}))
    assert "WATERSHED_TTL_MARGIN_DAYS='-2'" in line


def test_a_bad_value_in_the_settings_file(tmp_path):
    settings = tmp_path / "watershed.toml"
    settings.write_text('falkordb_port = "abc"\n')
    line = one_line_error(watershed("graph", "stats", env={"WATERSHED_SETTINGS_FILE": str(settings)}))
    assert "falkordb_port" in line and "'abc'" in line and str(settings) in line


def test_a_settings_file_that_is_not_toml(tmp_path):
    settings = tmp_path / "watershed.toml"
    settings.write_text("falkordb_port: 16379\n[[[\n")
    line = one_line_error(watershed("propagate", "--status", env={"WATERSHED_SETTINGS_FILE": str(settings)}))
    assert str(settings) in line and "not a TOML file" in line


def test_a_policy_that_is_a_directory(tmp_path):
    line = one_line_error(watershed("propagate", "--local", "--policy", str(tmp_path), env={}))
    assert str(tmp_path) in line
