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
JSON string of one, with scalar values); only `task_id` and `sql` are
required. Every field's type is checked here, at the boundary: a bad record
(not an object, a field of the wrong type, a line that is not UTF-8 or not
JSON, a value the graph cannot store: NUL or a lone surrogate) is reported
with its file and line and the field, and skipped; it never stops the others. A source that cannot be read at all (missing, unreadable, not a task
export) raises `TaskSourceError` naming it.

A task id defined more than once in one corpus is an error, not a choice:
`split_duplicates` takes every record of such an id out and reports where
each one is, so no harvest picks one of them (and the next one another).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from watershed.graph.errors import WatershedError
from watershed.graph.lineage import SqlTask

#: what no graph backend stores: NUL (FalkorDB reads C strings, Cypher fails on it) and lone
#: surrogates (not encodable as UTF-8: JSON's `\ud800` decodes to one)
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

_HEADER = re.compile(r"^\s*--\s*(task|owner|dialect|schedule|version|vars)\s*:\s*(.*?)\s*$", re.IGNORECASE)


class TaskSourceError(WatershedError, ValueError):
    """The task source as a whole cannot be read; the message names it and says why."""


@dataclass(frozen=True)
class SourceProblem:
    """A record that could not become a task: where it is and why.

    `task_id` is set when the record named one: that task is then kept out of
    pruning (its lineage already in the graph stays until the record is fixed).
    """

    location: str
    message: str
    task_id: str | None = None


@dataclass(frozen=True)
class LocatedTask:
    """A task and where it was read: `file:line`, a `.sql` file, `file: row N` or `table T`."""

    location: str
    task: SqlTask


@dataclass(frozen=True)
class DuplicateTask:
    """A task id that more than one record of the corpus defines; none of them is loaded."""

    task_id: str
    count: int
    locations: tuple[str, ...]

    @property
    def message(self) -> str:
        return (
            f"task id {self.task_id!r} is defined {self.count} times ({', '.join(self.locations)}): "
            "none of them is loaded and the graph keeps the version it has"
        )


# ------------------------------------------------------------ records


def _kind(value: object) -> str:
    if value is None:
        return "null"
    kinds = {dict: "an object", list: "a list", tuple: "a list", bool: "a boolean", str: "a string"}
    kinds |= {int: "a number", float: "a number"}
    return kinds.get(type(value), type(value).__name__)


def _scalar(value: object, *, numbers: bool = True) -> str | None:
    """A string (or, with `numbers`, a number as its text); anything else is the record's error."""
    if value is None or isinstance(value, str):
        return value
    if numbers and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    expected = "a string or a number" if numbers else "a string"
    raise PydanticCustomError(
        "scalar", "expected {expected}, got {kind}", {"expected": expected, "kind": _kind(value)}
    )


def _storable(value: str, what: str = "") -> str:
    """`value`, unless it holds a character the graph cannot store: then the record's error,
    saying which character and where (never the value: it may be a whole script)."""
    found = _UNSTORABLE.search(value)
    if found is None:
        return value
    character = found.group()
    kind = "NUL" if character == "\x00" else "a lone surrogate"
    raise PydanticCustomError(
        "unstorable",
        "{what}holds {kind} ({code}) at character {at}, which the graph cannot store",
        {"what": what, "kind": kind, "code": f"U+{ord(character):04X}", "at": found.start() + 1},
    )


def _variables(value: object) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise PydanticCustomError(
                "vars", "a JSON string that does not parse ({error})", {"error": exc.msg}
            ) from None
    if not isinstance(value, dict):
        raise PydanticCustomError(
            "vars",
            "expected an object of NAME: value (or a JSON string of one), got {kind}",
            {"kind": _kind(value)},
        )
    variables: dict[str, str] = {}
    for name, item in value.items():
        if isinstance(item, bool):
            item = "true" if item else "false"
        elif isinstance(item, int | float):
            item = str(item)
        elif not isinstance(item, str):
            raise PydanticCustomError(
                "vars",
                "variable '{name}': expected a string, number or boolean, got {kind}",
                {"name": str(name), "kind": _kind(item)},
            )
        variables[str(name)] = item
    return variables


class TaskRecord(BaseModel):
    """One exported task as it arrives: every field's type is checked before it becomes a `SqlTask`."""

    model_config = ConfigDict(extra="ignore")

    task_id: str
    sql: str
    dialect: str | None = None
    version: str | None = None
    owner: str | None = None
    schedule: str | None = None
    vars: dict[str, str] = {}

    @field_validator("task_id", "version", "owner", "schedule", mode="before")
    @classmethod
    def _scalar_field(cls, value: object) -> str | None:
        return _scalar(value)

    @field_validator("sql", "dialect", mode="before")
    @classmethod
    def _text_field(cls, value: object) -> str | None:
        return _scalar(value, numbers=False)

    @field_validator("vars", mode="before")
    @classmethod
    def _vars_field(cls, value: object) -> dict[str, str]:
        return _variables(value)

    @field_validator("task_id", "sql", "dialect", "version", "owner", "schedule")
    @classmethod
    def _storable_field(cls, value: str | None) -> str | None:
        return value if value is None else _storable(value)

    @field_validator("vars")
    @classmethod
    def _storable_vars(cls, value: dict[str, str]) -> dict[str, str]:
        for name, item in value.items():
            _storable(name, "a variable's name ")
            _storable(item, f"variable {_UNSTORABLE.sub('?', name)!r} ")
        return value

    def task(self) -> SqlTask:
        fields = self.model_dump(exclude_none=True)
        return SqlTask(**fields)


def record_task_id(record: object) -> str | None:
    """The task id a raw record names, if it names one usably (to keep that task out of pruning)."""
    if not isinstance(record, dict):
        return None
    value = record.get("task_id")
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return str(value).strip() or None


def task_from_record(record: object) -> SqlTask:
    if not isinstance(record, dict):
        raise ValueError(f"a task record must be an object, got {_kind(record)}")
    return TaskRecord.model_validate(record).task()


# ------------------------------------------------------------ .sql files


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


def decode_text(data: bytes, where: str) -> str:
    """UTF-8 text, or a `TaskSourceError` saying where the first byte that is not UTF-8 is."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        at = f"line {line}, " if b"\n" in data.rstrip(b"\r\n") else ""
        raise TaskSourceError(
            f"{where}: not UTF-8 text ({at}byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def _headers(sql: str) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in sql.splitlines():
        if not line.strip():
            continue
        match = _HEADER.match(line)
        if match is None:
            if line.lstrip().startswith("--"):
                continue
            break
        headers[match.group(1).lower()] = match.group(2)
    return headers


def task_from_file(path: Path, root: Path, default_dialect: str = "hive") -> SqlTask:
    sql = decode_text(path.read_bytes(), str(path))
    headers = _headers(sql)
    fields: dict[str, object] = {
        "task_id": path.relative_to(root).with_suffix("").as_posix(),
        "dialect": default_dialect,
        "sql": sql,
    }
    for key, value in headers.items():
        fields["task_id" if key == "task" else key] = parse_vars(value) if key == "vars" else value
    # checked as an export's record is: a NUL in the file is the file's error, not the harvest's
    return TaskRecord.model_validate(fields).task()


def _sql_files(root: Path, problems: list[SourceProblem]) -> list[Path]:
    def unreadable(exc: OSError) -> None:
        # A directory we cannot list hides tasks: say so (it also keeps pruning off).
        problems.append(
            SourceProblem(str(exc.filename or root), f"cannot list the directory ({exc.strerror})")
        )

    found: list[Path] = []
    for directory, _dirs, files in os.walk(root, onerror=unreadable):
        found += [Path(directory, name) for name in files if name.endswith(".sql")]
    return sorted(found)


def read_sql_directory(
    root: Path, problems: list[SourceProblem], dialect: str = "hive"
) -> Iterator[LocatedTask]:
    try:
        os.scandir(root).close()
    except OSError as exc:
        raise TaskSourceError(f"{root}: cannot list the task directory ({exc.strerror})") from None
    for path in _sql_files(root, problems):
        try:
            yield LocatedTask(str(path), task_from_file(path, root, dialect))
        except OSError as exc:
            problems.append(SourceProblem(str(path), f"cannot read the file ({exc.strerror})"))
        except (TaskSourceError, ValueError, ValidationError) as exc:
            message = describe_error(exc).removeprefix(f"{path}: ")
            problems.append(SourceProblem(str(path), message, _file_task_id(path, root)))


def _file_task_id(path: Path, root: Path) -> str | None:
    """The id a .sql file that failed to load would have had, when its header can still be read."""
    try:
        headers = _headers(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    return (headers.get("task") or path.relative_to(root).with_suffix("").as_posix()).strip() or None


# ------------------------------------------------------------ exports


def _open(path: Path, what: str):
    try:
        return path.open("rb")
    except OSError as exc:
        raise TaskSourceError(f"{path}: cannot read the {what} ({exc.strerror})") from None


def read_jsonl(path: Path, problems: list[SourceProblem]) -> Iterator[LocatedTask]:
    """Tasks of a JSONL export, one object a line; each bad line is a problem with its file:line.

    A file of which no line is a JSON object is no task export at all: `TaskSourceError`.
    """
    objects = 0
    first_problem: str | None = None
    with _open(path, "task export") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            location = f"{path}:{number}"
            record, problem = _jsonl_record(
                raw.removeprefix(b"\xef\xbb\xbf") if number == 1 else raw, location
            )
            if isinstance(record, dict):
                objects += 1
            if problem is None:
                try:
                    task = task_from_record(record)
                except (ValueError, ValidationError) as exc:
                    problem = SourceProblem(location, describe_error(exc), record_task_id(record))
                else:
                    yield LocatedTask(location, task)
                    continue
            problems.append(problem)
            first_problem = first_problem or f"line {number}: {problem.message}"
    if objects == 0 and first_problem is not None:
        raise TaskSourceError(
            f"{path}: not a JSONL task export, no line holds a JSON object ({first_problem})"
        )


def _jsonl_record(raw: bytes, location: str) -> tuple[Any, SourceProblem | None]:
    try:
        return json.loads(decode_text(raw, location)), None
    except TaskSourceError as exc:
        return None, SourceProblem(location, str(exc).removeprefix(f"{location}: "))
    except json.JSONDecodeError as exc:
        return None, SourceProblem(location, f"not JSON ({exc.msg} at column {exc.colno})")


def read_parquet(path: Path, problems: list[SourceProblem]) -> Iterator[LocatedTask]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    _open(path, "task export").close()
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise TaskSourceError(f"{path}: not a Parquet task export ({str(exc).splitlines()[0]})") from None
    # A Parquet map column arrives as a list of (key, value) pairs.
    is_map = "vars" in table.column_names and pa.types.is_map(table.schema.field("vars").type)
    for number, record in enumerate(table.to_pylist(), start=1):
        if is_map and record.get("vars") is not None:
            record["vars"] = dict(record["vars"])
        location = f"{path}: row {number}"
        try:
            yield LocatedTask(location, task_from_record(record))
        except (ValueError, ValidationError) as exc:
            problems.append(SourceProblem(location, describe_error(exc), record_task_id(record)))


def check_task_source(source: str | Path) -> Path:
    """Fail early, before Spark starts, on a source that is missing, of no known kind or unreadable."""
    path = Path(source)
    if path.is_dir():
        try:
            os.scandir(path).close()
        except OSError as exc:
            raise TaskSourceError(f"{path}: cannot list the task directory ({exc.strerror})") from None
    elif not path.exists():
        raise TaskSourceError(f"{path}: no such task directory or export file")
    elif path.suffix not in (".jsonl", ".json", ".parquet"):
        raise TaskSourceError(
            f"{path}: not a task source; expected a directory of .sql files, a .jsonl or a .parquet task export"
        )
    else:
        _open(path, "task export").close()
    return path


def read_task_source(
    source: str | Path, problems: list[SourceProblem], dialect: str = "hive"
) -> Iterator[LocatedTask]:
    """Tasks with their locations from a directory of .sql files, a .jsonl file or a .parquet file."""
    path = check_task_source(source)
    if path.is_dir():
        yield from read_sql_directory(path, problems, dialect)
    elif path.suffix in (".jsonl", ".json"):
        yield from read_jsonl(path, problems)
    else:
        yield from read_parquet(path, problems)


def read_tasks(source: str | Path, problems: list[SourceProblem], dialect: str = "hive") -> Iterator[SqlTask]:
    """Tasks from a directory of .sql files, a .jsonl file or a .parquet file."""
    for located in read_task_source(source, problems, dialect):
        yield located.task


def split_duplicates(located: list[LocatedTask]) -> tuple[list[LocatedTask], list[DuplicateTask]]:
    """The tasks whose id is defined once, and every id defined more than once with all its places.

    Identical copies count too: an export that repeats a record is broken the
    same way, and one rule is easier to trust than a rule with an exception.
    """
    places: dict[str, list[str]] = {}
    for item in located:
        places.setdefault(item.task.task_id, []).append(item.location)
    duplicates = [
        DuplicateTask(task_id, len(where), tuple(where))
        for task_id, where in places.items()
        if len(where) > 1
    ]
    repeated = {d.task_id for d in duplicates}
    return [item for item in located if item.task.task_id not in repeated], duplicates


def describe_error(exc: Exception) -> str:
    """One line for a record's error: `field: what is wrong` per field for a validation error."""
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'record'}: {e['msg']}" for e in exc.errors()
        )
    return str(exc)
