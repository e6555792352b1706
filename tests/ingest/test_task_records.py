"""Task records checked at the boundary: a bad record is reported where it is and skipped; a bad source is one error."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from watershed.ingest.sources import read_tasks


def _jsonl(path, *lines: object) -> None:
    with path.open("wb") as handle:
        for line in lines:
            handle.write(line if isinstance(line, bytes) else json.dumps(line).encode())
            handle.write(b"\n")


def test_a_record_with_a_field_of_the_wrong_type_is_reported_with_its_line_and_skipped(tmp_path):
    """Issue 11 item 19: one record with `vars` as a list aborted the whole harvest."""
    export = tmp_path / "tasks.jsonl"
    _jsonl(
        export,
        {"task_id": "list_vars", "sql": "SELECT 1", "vars": ["date=2024-01-31"]},  # 1
        {"task_id": "ok", "sql": "SELECT 1", "vars": {"date": "2024-01-31", "n": 3, "on": True}},  # 2
        {"task_id": "string_list_vars", "sql": "SELECT 1", "vars": '["a"]'},  # 3
        {"task_id": "nested_vars", "sql": "SELECT 1", "vars": {"date": {"y": 2024}}},  # 4
        {"task_id": "object_version", "sql": "SELECT 1", "version": {"v": 1}},  # 5
        {"task_id": "list_owner", "sql": "SELECT 1", "owner": ["alice"]},  # 6
        {"task_id": "number_sql", "sql": 42},  # 7
        [{"task_id": "in_a_list", "sql": "SELECT 1"}],  # 8
        "just a string",  # 9
        b'{"task_id": "latin1", "sql": "SELECT \xe9"}',  # 10: not UTF-8
        {"task_id": True, "sql": "SELECT 1"},  # 11
        {"task_id": 7, "sql": "SELECT 7", "version": 2},  # 12: numbers are scalars
    )
    problems = []
    tasks = list(read_tasks(export, problems))
    assert [(t.task_id, t.version) for t in tasks] == [("ok", None), ("7", "2")]
    assert tasks[0].vars == {"date": "2024-01-31", "n": "3", "on": "true"}
    where = {int(p.location.rpartition(":")[2]): p for p in problems}
    assert sorted(where) == [1, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    assert all(p.location.startswith(str(export)) for p in problems)
    assert "vars" in where[1].message and "list" in where[1].message
    assert "vars" in where[3].message
    assert "date" in where[4].message
    assert where[5].message.startswith("version") and where[6].message.startswith("owner")
    assert where[7].message.startswith("sql") and where[11].message.startswith("task_id")
    assert "object" in where[8].message and "object" in where[9].message
    assert "UTF-8" in where[10].message
    # A bad record that names its task keeps that task out of pruning; one that names none cannot.
    assert where[1].task_id == "list_vars" and where[8].task_id is None and where[10].task_id is None


def test_a_parquet_export_checks_types_and_reads_map_vars(tmp_path):
    path = tmp_path / "tasks.parquet"
    table = pa.table(
        {
            "task_id": ["a", "b"],
            "sql": ["SELECT 1", "SELECT 2"],
            "vars": pa.array([[("date", "2024-01-31")], None], pa.map_(pa.string(), pa.string())),
            "owner": pa.array([["x"], None], pa.list_(pa.string())),
        }
    )
    pq.write_table(table, path)
    problems = []
    (task,) = read_tasks(path, problems)
    assert task.task_id == "b"
    assert [p.location for p in problems] == [f"{path}: row 1"] and "owner" in problems[0].message
    pq.write_table(table.drop(["owner"]), path)
    first, _second = read_tasks(path, [])
    assert first.vars == {"date": "2024-01-31"}


@pytest.mark.parametrize(
    "name, content, says",
    [
        ("tasks.txt", b'{"task_id": "a", "sql": "SELECT 1"}\n', "expected a directory of .sql files"),
        ("garbage.jsonl", b"this is not json\nnor is this\n", "not a JSONL task export"),
        ("binary.jsonl", bytes(range(256)) * 4, "not a JSONL task export"),
        ("tasks.parquet", b"PAR1 not really", "not a Parquet task export"),
    ],
)
def test_a_file_that_is_no_task_export_is_one_error_naming_it(tmp_path, name, content, says):
    """Issue 11 item 20: a --tasks file that is not a task export is one error, not a traceback or N problems."""
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match=says) as raised:
        list(read_tasks(path, []))
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)


def test_sql_files_that_are_binary_or_have_bad_headers_are_problems_naming_the_file(tmp_path):
    (tmp_path / "good.sql").write_text("SELECT 1;\n")
    (tmp_path / "binary.sql").write_bytes(b"SELECT 1;\n\xff\xfe\x00\x01")
    (tmp_path / "bad_vars.sql").write_text("-- task: named\n-- vars: novalue\nSELECT 1;\n")
    problems = []
    assert [t.task_id for t in read_tasks(tmp_path, problems)] == ["good"]
    found = {p.location: p for p in problems}
    assert set(found) == {str(tmp_path / "binary.sql"), str(tmp_path / "bad_vars.sql")}
    assert "UTF-8" in found[str(tmp_path / "binary.sql")].message
    assert found[str(tmp_path / "bad_vars.sql")].task_id == "named"


def test_duplicate_ids_are_found_with_every_place_in_each_kind_of_source(tmp_path):
    from watershed.ingest.sources import read_task_source, split_duplicates

    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "one.sql").write_text("-- task: shared\nSELECT 1;\n")
    (tmp_path / "sql" / "two.sql").write_text("-- task: shared\nSELECT 1;\n")  # identical copies count too
    (tmp_path / "sql" / "alone.sql").write_text("SELECT 3;\n")
    export = tmp_path / "tasks.jsonl"
    _jsonl(
        export,
        {"task_id": "x", "sql": "SELECT 1"},
        {"task_id": "y", "sql": "SELECT 2"},
        {"task_id": " x ", "sql": "SELECT 3"},
    )
    parquet = tmp_path / "tasks.parquet"
    pq.write_table(
        pa.table({"task_id": ["p", "q", "p"], "sql": ["SELECT 1", "SELECT 2", "SELECT 3"]}), parquet
    )
    expected = {
        tmp_path / "sql": (
            "shared",
            [str(tmp_path / "sql" / "one.sql"), str(tmp_path / "sql" / "two.sql")],
            "alone",
        ),
        export: ("x", [f"{export}:1", f"{export}:3"], "y"),
        parquet: ("p", [f"{parquet}: row 1", f"{parquet}: row 3"], "q"),
    }
    for source, (task_id, places, single) in expected.items():
        kept, duplicates = split_duplicates(list(read_task_source(source, [])))
        assert [d.task_id for d in duplicates] == [task_id]
        assert list(duplicates[0].locations) == places
        assert all(place in duplicates[0].message for place in places)
        assert [item.task.task_id for item in kept] == [single]
