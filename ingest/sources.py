"""Where SQL tasks come from: a directory of .sql files, a JSONL or Parquet export, or a Spark table.

A `.sql` file is one task. Its id is the path under the directory without
`.sql` (`dwd/user_di.sql` -> `dwd/user_di`) unless a header says otherwise.
Header lines are SQL comments at the top of the file:

    -- task: dwd_user_di
    -- owner: alice
    -- dialect: hive
    -- schedule: daily
    -- version: 7
    -- vars: date=2024-01-31, region=cn

An export (JSONL, one object a line, or Parquet) has the columns
`task_id, version, sql, dialect, owner, schedule, vars` (`vars` an object or a
JSON string); only `task_id` and `sql` are required. A bad record is reported
with its file and line and skipped; it never stops the others.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ingest.model import SqlTask

_HEADER = re.compile(r"^\s*--\s*(task|owner|dialect|schedule|version|vars)\s*:\s*(.*?)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class SourceProblem:
    """A record that could not become a task: where it is and why."""

    location: str
    message: str


def parse_vars(text: str) -> dict[str, str]:
    variables: dict[str, str] = {}
    for item in re.split(r"[,\s]+", text.strip()):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"variable {item!r} is not NAME=VALUE")
        variables[name] = value
    return variables


def task_from_file(path: Path, root: Path, default_dialect: str = "hive") -> SqlTask:
    sql = path.read_text(encoding="utf-8")
    fields: dict[str, object] = {
        "task_id": path.relative_to(root).with_suffix("").as_posix(),
        "dialect": default_dialect,
    }
    for line in sql.splitlines():
        if not line.strip():
            continue
        match = _HEADER.match(line)
        if match is None:
            if line.lstrip().startswith("--"):
                continue
            break
        key, value = match.group(1).lower(), match.group(2)
        fields["task_id" if key == "task" else key] = parse_vars(value) if key == "vars" else value
    return SqlTask(sql=sql, **fields)


def read_sql_directory(root: Path, problems: list[SourceProblem], dialect: str = "hive") -> Iterator[SqlTask]:
    for path in sorted(root.rglob("*.sql")):
        try:
            yield task_from_file(path, root, dialect)
        except (OSError, UnicodeDecodeError, ValueError, ValidationError) as exc:
            problems.append(SourceProblem(str(path), _message(exc)))


def task_from_record(record: dict) -> SqlTask:
    if not isinstance(record, dict):
        raise ValueError("a task record must be an object")
    variables = record.get("vars") or {}
    if isinstance(variables, str):
        variables = json.loads(variables) if variables.strip() else {}
    fields = {
        k: record[k] for k in ("task_id", "sql", "dialect", "owner", "schedule") if record.get(k) is not None
    }
    if record.get("version") is not None:
        fields["version"] = str(record["version"])
    return SqlTask(vars={str(k): str(v) for k, v in variables.items()}, **fields)


def read_jsonl(path: Path, problems: list[SourceProblem]) -> Iterator[SqlTask]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield task_from_record(json.loads(line))
            except (ValueError, ValidationError, TypeError) as exc:
                problems.append(SourceProblem(f"{path}:{number}", _message(exc)))


def read_parquet(path: Path, problems: list[SourceProblem]) -> Iterator[SqlTask]:
    import pyarrow.parquet as pq

    for number, record in enumerate(pq.read_table(path).to_pylist(), start=1):
        try:
            yield task_from_record(record)
        except (ValueError, ValidationError, TypeError) as exc:
            problems.append(SourceProblem(f"{path}: row {number}", _message(exc)))


def read_tasks(source: str | Path, problems: list[SourceProblem], dialect: str = "hive") -> Iterator[SqlTask]:
    """Tasks from a directory of .sql files, a .jsonl file or a .parquet file."""
    path = Path(source)
    if path.is_dir():
        yield from read_sql_directory(path, problems, dialect)
    elif path.suffix in (".jsonl", ".json"):
        yield from read_jsonl(path, problems)
    elif path.suffix == ".parquet":
        yield from read_parquet(path, problems)
    elif not path.exists():
        raise FileNotFoundError(f"{path}: no such task directory or export file")
    else:
        raise ValueError(f"{path}: expected a directory of .sql files, a .jsonl or a .parquet task export")


def _message(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
    return str(exc)
