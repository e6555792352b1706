"""Task sources and the warehouse generator."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from watershed.ingest.generator import generate_warehouse
from watershed.ingest.sources import read_tasks


def test_sql_directory_with_headers_and_default_ids(tmp_path):
    (tmp_path / "dwd").mkdir()
    (tmp_path / "dwd" / "user_di.sql").write_text(
        "-- task: dwd_user\n-- owner: alice\n-- dialect: spark\n-- vars: date=2024-01-31, region=cn\nSELECT 1;\n"
    )
    (tmp_path / "plain.sql").write_text("-- just a comment\nSELECT 2;\n")
    problems = []
    tasks = {t.task_id: t for t in read_tasks(tmp_path, problems)}
    assert problems == []
    assert tasks["dwd_user"].owner == "alice" and tasks["dwd_user"].dialect == "spark"
    assert tasks["dwd_user"].vars == {"date": "2024-01-31", "region": "cn"}
    assert tasks["plain"].dialect == "hive"


def test_bad_records_are_reported_with_their_place_and_skipped(tmp_path):
    export = tmp_path / "tasks.jsonl"
    export.write_text(
        json.dumps({"task_id": "ok", "sql": "SELECT 1", "vars": '{"date": "2024-01-31"}'})
        + "\n"
        + "{not json\n"
        + json.dumps({"sql": "SELECT 1"})
        + "\n"
    )
    problems = []
    tasks = list(read_tasks(export, problems))
    assert [t.task_id for t in tasks] == ["ok"] and tasks[0].vars == {"date": "2024-01-31"}
    assert [p.location for p in problems] == [f"{export}:2", f"{export}:3"]
    assert "task_id" in problems[1].message


def test_parquet_export(tmp_path):
    path = tmp_path / "tasks.parquet"
    pq.write_table(pa.table({"task_id": ["a"], "sql": ["SELECT 1"], "version": [3], "vars": ["{}"]}), path)
    (task,) = read_tasks(path, [])
    assert task.version == "3"


def test_generator_is_deterministic_and_shaped(tmp_path):
    first = generate_warehouse(tmp_path / "a", tasks=80, seed=11)
    second = generate_warehouse(tmp_path / "b", tasks=80, seed=11)
    assert first == second
    assert (tmp_path / "a" / "tasks.jsonl").read_bytes() == (tmp_path / "b" / "tasks.jsonl").read_bytes()
    assert (tmp_path / "a" / "catalog.json").read_bytes() == (tmp_path / "b" / "catalog.json").read_bytes()
    catalog = json.loads((tmp_path / "a" / "catalog.json").read_text())["tables"]
    assert all(
        len(t["columns"]) + len(t["partitioned_by"]) >= 10 for t in catalog.values() if t["layer"] == "ods"
    )
    assert {t["layer"] for t in catalog.values()} == {"ods", "dwd", "dws", "ads"}
    assert first.tasks == 80 and first.broken >= 1
    other = generate_warehouse(tmp_path / "c", tasks=80, seed=12)
    assert (tmp_path / "c" / "tasks.jsonl").read_bytes() != (tmp_path / "a" / "tasks.jsonl").read_bytes()
    assert other.tasks == 80
