"""Bounded sampling of a table's local files: rows, bytes and time per table; only the columns that
can hold an identifier (text and integers); encrypted columns are never read.

Parquet is read here with pyarrow, a row group at a time and only the first rows of each. ORC is
read through a `FileReader` the caller passes in (the use case hands in orc_crypto's projected
reads: this feature never imports another one). A reader gives a file's layout first (its
columns' kinds, which columns are encrypted, how many parts) and then reads one part of chosen
columns, so a column that is encrypted is reported as protected without a byte of it read.

The values stay in memory, in the `TableSample` the caller gets back (its repr shows none of
them); an error names the file and what failed, never a value. A table is sampled again only when
its files changed: `fingerprint` of their paths, sizes and modification times is stored with the
proposals.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol
from urllib.parse import urlsplit

from watershed.graph.errors import WatershedError, first_line

Kind = Literal["text", "integer", "other"]
#: the kinds of column values a detector can validate; the others are not read
SAMPLED_KINDS: frozenset[str] = frozenset({"text", "integer"})
FileFormat = Literal["orc", "parquet"]


class LocationError(WatershedError, ValueError):
    """A table's location that this process cannot sample (remote, missing): the message says which."""


@dataclass(frozen=True)
class FileLayout:
    #: top-level column -> kind
    columns: Mapping[str, Kind]
    #: encrypted columns: reported, never read
    protected: frozenset[str] = frozenset()
    #: independently readable parts (ORC stripes, Parquet row groups)
    parts: int = 1
    #: the rows the file holds, as its footer says (None: not known)
    rows: int | None = None


class FileReader(Protocol):
    def layout(self, path: str, data=None) -> FileLayout:
        """The file's layout from its tail; `data` gives its bytes when `path` is not local (a
        sliceable, seekable file read by ranges)."""

    def read(self, path: str, columns: Sequence[str], part: int, rows: int):
        """A pyarrow Table of `columns` from part `part`; at least its first `rows` rows (more
        may come: the sampler keeps what it needs)."""


def arrow_kind(arrow_type) -> Kind:
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "text"
    if pa.types.is_integer(arrow_type):
        return "integer"
    return "other"


class ParquetReader:
    """Parquet through pyarrow: the footer for the layout, then the first rows of one row group."""

    def layout(self, path: str, data=None) -> FileLayout:
        """`data`: the file as a seekable binary stream when it is not a local path (a remote
        file read by ranges)."""
        import pyarrow.parquet as pq

        with pq.ParquetFile(path if data is None else data) as parquet:
            schema = parquet.schema_arrow
            return FileLayout(
                columns={name: arrow_kind(schema.field(name).type) for name in schema.names},
                parts=parquet.num_row_groups,
                rows=parquet.metadata.num_rows,
            )

    def read(self, path: str, columns: Sequence[str], part: int, rows: int):
        import pyarrow as pa
        import pyarrow.parquet as pq

        with pq.ParquetFile(path) as parquet:
            batches = parquet.iter_batches(batch_size=max(rows, 1), row_groups=[part], columns=list(columns))
            first = next(batches, None)
        if first is None:
            return pa.table({name: pa.array([], pa.string()) for name in columns})
        return pa.Table.from_batches([first])


@dataclass(frozen=True)
class DataFile:
    path: str
    size: int
    mtime_ns: int
    format: FileFormat


def _local_root(location: str) -> Path:
    parts = urlsplit(location)
    if parts.scheme in ("", "file"):
        return Path(parts.path if parts.scheme else location)
    raise LocationError(
        f"{location}: a {parts.scheme}:// location is sampled on Spark (a Spark master or session: "
        "watershed discover --master)"
    )


def _format_of(path: Path) -> FileFormat | None:
    """By the file's magic bytes, whatever its name: Hive writes ORC files named `000000_0`."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4)
    except OSError:
        return None
    if head == b"PAR1":
        return "parquet"
    if head[:3] == b"ORC":
        return "orc"
    return None


def data_files(location: str | Path) -> list[DataFile]:
    """The ORC and Parquet files at `location` (a file, or a directory walked recursively), in
    path order; hidden and bookkeeping files (`.x`, `_SUCCESS`) are left out."""
    root = _local_root(str(location))
    if not root.exists():
        raise LocationError(f"{location}: no such file or directory")
    candidates = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    found: list[DataFile] = []
    for path in candidates:
        relative = path.relative_to(root).parts if path != root else (path.name,)
        if any(part.startswith((".", "_")) for part in relative):
            continue
        kind = _format_of(path)
        if kind is not None:
            stat = path.stat()
            found.append(DataFile(str(path), stat.st_size, stat.st_mtime_ns, kind))
    return found


def fingerprint(files: Iterable[DataFile]) -> str:
    """What the files are as the file system says (paths, sizes, modification times): it moves
    when a file is added, removed or rewritten, and reading it costs no byte of data."""
    digest = hashlib.sha256()
    for item in sorted(files, key=lambda f: f.path):
        digest.update(f"{item.path}\t{item.size}\t{item.mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


@dataclass(frozen=True)
class SampleLimits:
    rows: int = 200
    bytes: int = 8 * 1024 * 1024
    seconds: float = 10.0


@dataclass
class TableSample:
    """What a table's files gave: per column its non-null values as text (kept out of the repr)."""

    values: dict[str, list[str]] = field(default_factory=dict, repr=False)
    #: encrypted columns (not read)
    protected: set[str] = field(default_factory=set)
    #: columns of another kind (dates, floats, nested): not read
    skipped: set[str] = field(default_factory=set)
    rows: int = 0
    bytes: int = 0
    files: int = 0
    #: which bound stopped the reading: rows, bytes, time, or None (everything was read)
    stopped_by: str | None = None
    errors: list[str] = field(default_factory=list)


def _text(value) -> str:
    return value if isinstance(value, str) else str(value)


def read_failure(path: str, what: str, exc: Exception, *, data: bool = False) -> str:
    # a library's message may quote what it was decoding, and a read of `data` may fail with one
    # of our own errors carrying it on (orc_crypto's read_orc wraps pyarrow's decode message): only
    # our own errors about a file's layout, which name metadata, are passed on whole
    may_quote = data or not isinstance(exc, WatershedError)
    reason = type(exc).__name__ if may_quote else first_line(exc)
    return f"{path}: cannot {what} ({reason})"


def sample_files(
    files: Sequence[DataFile],
    readers: Mapping[str, FileReader],
    limits: SampleLimits,
    columns: Sequence[str] | None = None,
) -> TableSample:
    """Read up to `limits` of `files` (in order), only the text and integer `columns` (None: all).

    `readers` maps a format (orc, parquet) to its reader; a file of another format is an error of
    the sample, not of the call. The bounds are checked before each part is read: a part never
    stops half way, and the rows beyond the bound are dropped.
    """
    sample = TableSample()
    wanted = None if columns is None else {c.lower() for c in columns}
    deadline = time.monotonic() + limits.seconds
    for item in files:
        if sample.stopped_by:
            break
        reader = readers.get(item.format)
        if reader is None:
            sample.errors.append(f"{item.path}: no reader for {item.format} files")
            continue
        try:
            layout = reader.layout(item.path)
        except Exception as exc:
            sample.errors.append(read_failure(item.path, "read its layout", exc))
            continue
        sample.files += 1
        chosen: list[str] = []
        for name, kind in layout.columns.items():
            if wanted is not None and name.lower() not in wanted:
                continue
            if name in layout.protected:
                sample.protected.add(name.lower())
            elif kind in SAMPLED_KINDS:
                chosen.append(name)
            else:
                sample.skipped.add(name.lower())
        if not chosen:
            continue
        for part in range(layout.parts):
            sample.stopped_by = exceeded(sample, limits, deadline)
            if sample.stopped_by:
                break
            try:
                table = reader.read(item.path, chosen, part, limits.rows - sample.rows)
            except Exception as exc:
                sample.errors.append(read_failure(item.path, f"read part {part}", exc, data=True))
                break
            table = table.slice(0, limits.rows - sample.rows)
            sample.rows += table.num_rows
            sample.bytes += table.nbytes
            for name in chosen:
                kept = sample.values.setdefault(name.lower(), [])
                kept.extend(_text(v) for v in table.column(name).to_pylist() if v is not None)
    if not sample.stopped_by and sample.rows >= limits.rows:
        sample.stopped_by = "rows"
    return sample


def exceeded(sample: TableSample, limits: SampleLimits, deadline: float) -> str | None:
    if sample.rows >= limits.rows:
        return "rows"
    if sample.bytes >= limits.bytes:
        return "bytes"
    if time.monotonic() >= deadline:
        return "time"
    return None


__all__ = [
    "SAMPLED_KINDS",
    "DataFile",
    "FileLayout",
    "FileReader",
    "LocationError",
    "ParquetReader",
    "SampleLimits",
    "TableSample",
    "arrow_kind",
    "data_files",
    "exceeded",
    "fingerprint",
    "read_failure",
    "sample_files",
]
