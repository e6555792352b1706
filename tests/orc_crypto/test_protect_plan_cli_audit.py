"""`watershed protect apply` and `rewrap` from the command line leave an audit entry as the OS
user, like `watershed tag`: the run id and its counts, no KMS address or token."""

from __future__ import annotations

import getpass
import json
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.orc as orc
import pytest
import typer
from typer.testing import CliRunner

from watershed.api.audit import entries
from watershed.api.cli.protect_apply import apply_command, rewrap_command
from watershed.graph.protection import ColumnKey, FilePlan, ProtectionPlan, ProtectionRun, TablePlan

app = typer.Typer()
app.command("apply")(apply_command)
app.command("rewrap")(rewrap_command)


@app.callback()
def _group() -> None:
    """keeps `apply` a subcommand"""


@pytest.fixture
def graph_env(monkeypatch, falkordb_server, graph_store):
    monkeypatch.setenv("WATERSHED_FALKORDB_HOST", falkordb_server.host)
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(falkordb_server.port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    return graph_store


def _plan_file(tmp_path, store, kms: str):
    """Two ORC files of table db.t (its location in the graph) and a plan encrypting their ssn."""
    location = tmp_path / "t"
    location.mkdir()
    store.execute("MERGE (t:Table {id: 'db.t'}) SET t.location = $location", {"location": str(location)})
    files = []
    for i in range(2):
        path = location / f"part-{i}.orc"
        orc.write_table(pa.table({"id": [i, i + 1], "ssn": [f"s{i}", None]}), path)
        stat = path.stat()
        files.append(
            FilePlan(
                path=str(path),
                size=stat.st_size,
                mtime_ns=stat.st_mtime_ns,
                action="encrypt",
                columns={"ssn": ColumnKey(key="pii", mask="nullify")},
            )
        )
    plan = ProtectionPlan(
        created_at=datetime.now(UTC).isoformat(),
        policy_digest="cli",
        key_provider_path=kms,
        tables=[TablePlan(table="db.t", files=files)],
    )
    out = tmp_path / "plan.json"
    out.write_text(plan.model_dump_json())
    return out


def test_apply_and_rewrap_are_audited_as_the_os_user(tmp_path, kms_server, graph_env):
    plan = _plan_file(tmp_path, graph_env, kms_server.provider_path)
    result = CliRunner().invoke(app, ["apply", "--plan", str(plan), "--local", "--format", "json"])
    assert result.exit_code == 0, result.output
    applied = ProtectionRun.model_validate_json(result.stdout)
    rewrap = CliRunner().invoke(
        app, ["rewrap", "--kms", kms_server.provider_path, "--local", "--format", "json"]
    )
    assert rewrap.exit_code == 0, rewrap.output
    rewrapped = ProtectionRun.model_validate_json(rewrap.stdout)

    [rewrap_entry, apply_entry] = entries(graph_env, action="protect.")
    assert (apply_entry.action, apply_entry.actor) == ("protect.apply", f"cli:{getpass.getuser()}")
    assert apply_entry.target == f"protection-run:{applied.id}"
    assert apply_entry.after["run"] == applied.id
    assert (apply_entry.after["files_done"], apply_entry.after["files_failed"]) == (2, 0)
    assert (rewrap_entry.action, rewrap_entry.target) == ("protect.rewrap", f"protection-run:{rewrapped.id}")
    assert rewrap_entry.after["files_unchanged"] == 2
    text = json.dumps([apply_entry.after, rewrap_entry.after])
    assert "kms://" not in text and kms_server.provider_path not in text
