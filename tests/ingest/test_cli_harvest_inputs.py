"""`watershed harvest` and `watershed generate` on bad inputs: one line naming the input, exit 1 (issue 11 item 20).

Unreadable and unwritable paths are tested in a real `watershed` subprocess
whose file permissions apply: as root, it runs under `setpriv` with every
capability dropped (so root's override of file modes is gone).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from watershed.api.cli import app

runner = CliRunner()
#: the `watershed` command of this source tree (`python -m api.cli` run from its root)
ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def _one_error_line(result, *names: str) -> None:
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    assert all(name in errors[0] for name in names), errors[0]


def test_harvest_inputs_that_are_no_task_source_fail_before_spark_starts(tmp_path):
    out = tmp_path / "out"
    text = tmp_path / "tasks.txt"
    text.write_text('{"task_id": "a", "sql": "SELECT 1"}\n')
    _one_error_line(_cli("harvest", "--tasks", str(text), "--out", str(out), "--no-graph"), "tasks.txt")
    script = tmp_path / "tasks"
    script.mkdir()
    catalog_dir = tmp_path / "catalog.json"
    catalog_dir.mkdir()
    result = _cli(
        "harvest", "--tasks", str(script), "--catalog", str(catalog_dir), "--out", str(out), "--no-graph"
    )
    _one_error_line(result, "catalog.json", "directory")
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    result = _cli("harvest", "--tasks", str(script), "--out", str(not_a_dir / "runs"), "--no-graph")
    _one_error_line(result, "--out", str(not_a_dir))
    assert not out.exists()


def test_a_jsonl_export_holding_garbage_is_one_error_and_leaves_no_run_directory(spark, tmp_path):
    garbage = tmp_path / "tasks.jsonl"
    garbage.write_bytes(os.urandom(2048).replace(b"{", b"(") + b"\nno JSON here either\n")
    out = tmp_path / "out"
    result = _cli("harvest", "--tasks", str(garbage), "--out", str(out), "--no-graph")
    _one_error_line(result, "tasks.jsonl", "not a JSONL task export")
    assert not out.exists() or list(out.iterdir()) == []


def test_generate_into_a_place_that_is_not_a_directory_is_one_error(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory")
    _one_error_line(_cli("generate", str(blocker / "warehouse"), "--tasks", "4"), "blocker")


def _unprivileged(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "watershed.api.cli", *args]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: file modes cannot be made to apply")
        command = [setpriv, "--bounding-set=-all", "--inh-caps=-all", *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_unreadable_tasks_and_unwritable_places_are_one_error_naming_them(tmp_path):
    unreadable = tmp_path / "tasks.jsonl"
    unreadable.write_text('{"task_id": "a", "sql": "SELECT 1"}\n')
    unreadable.chmod(0)
    script = tmp_path / "secret.sql"
    script.write_text("SELECT 1")
    script.chmod(0)
    locked = tmp_path / "locked"
    locked.mkdir()
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "a.sql").write_text("SELECT 1")
    locked.chmod(0o555)
    try:
        cases = [
            (
                ["harvest", "--tasks", str(unreadable), "--no-graph", "--out", str(tmp_path / "out")],
                "tasks.jsonl",
            ),
            (["harvest", "--tasks", str(tasks), "--no-graph", "--out", str(locked / "runs")], "locked"),
            (["generate", str(locked / "warehouse"), "--tasks", "4"], "locked"),
            (["lineage", str(script)], "secret.sql"),
        ]
        for args, name in cases:
            result = _unprivileged(*args)
            assert result.returncode == 1, (args, result.stderr)
            assert "Traceback" not in result.stderr, result.stderr
            (line,) = [line for line in result.stderr.splitlines() if line.strip()]
            assert line.startswith("error:") and name in line and "Permission denied" in line, line
        assert list(locked.iterdir()) == [] and not (tmp_path / "out").exists()
    finally:
        locked.chmod(0o755)
