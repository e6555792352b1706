"""Issue 11 item 21 (part): an unknown dialect is checked first and reported once, naming it.

`watershed lineage --dialect nosuch` is a usage error (exit 2, one line, no empty tables);
a task of an unknown dialect is one task error, whatever its number of statements, in the
extractor and in the harvest's per-record extraction (run here on plain records).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from watershed.graph.lineage import SqlTask, TaskLineage
from watershed.ingest.extract import extract_lineage
from watershed.ingest.harvest import _extract_partition, unpack_model
from watershed.ingest.settings import IngestSettings

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "INSERT INTO dw.a SELECT x FROM ods.s;\nINSERT INTO dw.b SELECT y FROM ods.s;\nSELECT 1;\n"


def _names_the_dialect_and_the_known_ones(message: str) -> None:
    assert "'nosuch'" in message
    for known in ("hive", "spark", "trino"):
        assert known in message


def test_known_dialects_are_sqlglots() -> None:
    from watershed.ingest.extract import known_dialects

    assert {"hive", "spark", "mysql", "trino"} <= set(known_dialects())


def test_extractor_reports_an_unknown_dialect_once_for_the_task() -> None:
    result = extract_lineage(SqlTask(task_id="t1", sql=SCRIPT, dialect="nosuch"))
    assert len(result.errors) == 1
    _names_the_dialect_and_the_known_ones(result.errors[0].message)
    assert result.statements == [] and result.reads == [] and result.writes == []


def test_dialect_names_are_case_insensitive() -> None:
    result = extract_lineage(SqlTask(task_id="t1", sql=SCRIPT, dialect="Hive"))
    assert not result.errors
    assert set(result.writes) == {"dw.a", "dw.b"}


def test_harvest_records_one_task_error_for_an_unknown_dialect() -> None:
    records = [
        {"task_id": "bad", "sql": SCRIPT, "dialect": "nosuch"},
        {"task_id": "good", "sql": SCRIPT, "dialect": "hive"},
    ]
    settings = IngestSettings().model_dump()
    rows = list(_extract_partition(iter(records), None, settings))
    assert all(row[0] == "lineage" for row in rows)
    by_task = {
        task_id: (unpack_model(TaskLineage, lineage), errors) for _, task_id, _, lineage, errors in rows
    }
    bad, bad_errors = by_task["bad"]
    assert len(bad.errors) == 1 and json.loads(bad_errors) == [error.model_dump() for error in bad.errors]
    _names_the_dialect_and_the_known_ones(bad.errors[0].message)
    good, good_errors = by_task["good"]
    assert good.errors == [] and good_errors == "" and set(good.writes) == {"dw.a", "dw.b"}


def test_cli_unknown_dialect_is_a_usage_error(tmp_path: Path) -> None:
    script = tmp_path / "job.sql"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, "-m", "watershed.api.cli", "lineage", str(script), "--dialect", "nosuch"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == ""  # no empty tables before the error
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--dialect" in lines[0]
    _names_the_dialect_and_the_known_ones(lines[0])
