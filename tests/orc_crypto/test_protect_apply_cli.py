"""`protect apply` from the command line: a plan file applied (in process), the report as a table
and as JSON, a changed file reported as skipped, a failed file as an error with exit 1; apply and
`rewrap` leave an audit entry as the OS user, like `watershed tag` (the run id and its counts, no
KMS address or token)."""

from __future__ import annotations

import getpass
import json
import os
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.orc as orc
import pytest
import typer
from typer.testing import CliRunner

from watershed.api.cli.protect_apply import apply_command, rewrap_command
from watershed.api.service.audit import entries
from watershed.graph.protection import ColumnKey, FilePlan, ProtectionPlan, ProtectionRun, TablePlan
from watershed.orc_crypto.protect import records

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


def _files(tmp_path, count: int, store=None):
    if store is not None:  # apply rewrites only files under the location the graph records
        store.execute(
            "MERGE (t:Table {id: $id}) SET t.location = $location",
            {"id": "db.t", "location": str(tmp_path / "t")},
        )
    paths = []
    for i in range(count):
        path = tmp_path / "t" / f"part-{i}.orc"
        path.parent.mkdir(exist_ok=True)
        orc.write_table(pa.table({"id": [i, i + 1], "ssn": [f"s{i}", None]}), path)
        paths.append(path)
    return paths


def _plan_file(tmp_path, paths, kms: str, key: str = "pii"):
    plans = [
        FilePlan(
            path=str(p),
            size=p.stat().st_size,
            mtime_ns=p.stat().st_mtime_ns,
            action="encrypt",
            columns={"ssn": ColumnKey(key=key if i == 0 else "pii", mask="nullify")},
        )
        for i, p in enumerate(paths)
    ]
    plan = ProtectionPlan(
        created_at=datetime.now(UTC).isoformat(),
        policy_digest="cli",
        key_provider_path=kms,
        tables=[TablePlan(table="db.t", files=plans)],
    )
    out = tmp_path / "plan.json"
    out.write_text(plan.model_dump_json())
    return out


def test_apply_plan_file_reports_and_is_idempotent(tmp_path, kms_server, graph_env):
    paths = _files(tmp_path, 3, graph_env)
    plan = _plan_file(tmp_path, paths, kms_server.provider_path)
    result = CliRunner().invoke(app, ["apply", "--plan", str(plan), "--local", "--format", "json"])
    assert result.exit_code == 0, result.output
    run = ProtectionRun.model_validate_json(result.stdout)
    assert (run.files_done, run.files_unchanged, run.status) == (3, 0, "done")
    assert len(records.files_of(graph_env, ["db.t"])) == 3
    again = CliRunner().invoke(app, ["apply", "--plan", str(plan), "--local"])
    assert again.exit_code == 0, again.output
    assert "files protected 0, unchanged 3, skipped 0, failed 0" in again.stdout
    # no roll since: a rewrap finds every file at its key's current version
    rewrap = CliRunner().invoke(app, ["rewrap", "--kms", kms_server.provider_path, "--local", "-f", "json"])
    assert rewrap.exit_code == 0, rewrap.output
    run = ProtectionRun.model_validate_json(rewrap.stdout)
    assert (run.kind, run.files_done, run.files_unchanged) == ("rewrap", 0, 3)


def test_changed_and_failed_files_are_reported(tmp_path, kms_server, graph_env):
    paths = _files(tmp_path, 3, graph_env)
    plan = _plan_file(tmp_path, paths, kms_server.provider_path, key="absent-key")
    orc.write_table(pa.table({"id": [9], "ssn": ["changed"]}), paths[2])
    os.utime(paths[2], ns=(1, 1))
    result = CliRunner().invoke(app, ["apply", "--plan", str(plan), "--local"])
    assert result.exit_code == 1
    assert "files protected 1, unchanged 0, skipped 1, failed 1" in result.stdout
    assert "absent-key" in result.stdout
    assert f"skipped db.t {paths[2]}" in result.stdout


def test_bad_plan_file_is_an_error_naming_it(tmp_path, graph_env):
    bad = tmp_path / "plan.json"
    bad.write_text('{"tables": 3}')
    result = CliRunner().invoke(app, ["apply", "--plan", str(bad), "--local"])
    assert result.exit_code == 1
    assert "plan.json is not a protection plan" in result.output


def test_apply_and_rewrap_are_audited_as_the_os_user(tmp_path, kms_server, graph_env):
    plan = _plan_file(tmp_path, _files(tmp_path, 2, graph_env), kms_server.provider_path)
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
