"""Sampling on Spark: tables whose files are remote (hdfs://, s3://, ...) or larger than
`discovery_spark_min_bytes`, given a SparkSession by the use case (pyspark is an optional extra:
it is never imported here, the session brings it).

The files are found through the Hadoop FileSystem of the session's JVM (`HadoopFiles`: paths,
sizes, modification times, the magic bytes), and a file's layout is read from its tail through a
`RemoteFile` (byte ranges only: an ORC tail, a Parquet footer), so that an encrypted ORC column is
known before anything is read. Then one Spark job reads only the chosen plaintext columns with a
row limit: `spark.read.orc(files).select(columns).limit(n)`. An encrypted column is never put in
the projection, whatever key provider the session has: it is reported as protected.

The values come back to the driver and stay in the `TableSample`; a failed read is reported with
the error's type only (a JVM error's message and trace may quote the bytes it was decoding).
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from watershed.discovery.sampling import (
    SAMPLED_KINDS,
    DataFile,
    FileFormat,
    FileLayout,
    LocationError,
    SampleLimits,
    TableSample,
    exceeded,
    read_failure,
)
from watershed.graph.errors import WatershedError

#: the end of a file read at once for its tail: an ORC PostScript, footer and metadata, or a
#: Parquet footer, fit in it almost always (a longer one costs one more read)
TAIL_BYTES = 64 * 1024


def is_remote(location: str) -> bool:
    """Whether `location` is on a file system this process cannot open itself (not a local path
    or file://)."""
    return urlsplit(location).scheme not in ("", "file")


def _magic(head: bytes) -> FileFormat | None:
    if head == b"PAR1":
        return "parquet"
    if head[:3] == b"ORC":
        return "orc"
    return None


class HadoopFiles:
    """A location's files through the Hadoop FileSystem of `spark`'s JVM (any scheme its
    configuration knows: hdfs, s3a, abfs, file)."""

    def __init__(self, spark) -> None:
        self.spark = spark
        self.jvm = spark.sparkContext._jvm
        self.conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _fs(self, path: str):
        hadoop_path = self.jvm.org.apache.hadoop.fs.Path(path)
        return hadoop_path.getFileSystem(self.conf), hadoop_path

    def read(self, path: str, offset: int, length: int) -> bytes:
        """`length` bytes of `path` from `offset` (a positional read: nothing before it is read)."""
        if length <= 0:
            return b""
        fs, hadoop_path = self._fs(path)
        stream = fs.open(hadoop_path)
        try:
            stream.seek(offset)
            # a byte[] a Java call returns comes over as Python bytes in one piece (an array
            # filled in place would be read back an element per call); commons-io ships with Spark
            return bytes(self.jvm.org.apache.commons.io.IOUtils.toByteArray(stream, length))
        finally:
            stream.close()

    def data_files(self, location: str) -> list[DataFile]:
        """The ORC and Parquet files under `location` (a file or a directory, recursively), in path
        order; hidden and bookkeeping files (`.x`, `_SUCCESS`) left out, as for local files."""
        try:
            fs, root = self._fs(location)
            if not fs.exists(root):
                raise LocationError(f"{location}: no such file or directory")
            listing = fs.listFiles(root, True)
            statuses = []
            while listing.hasNext():
                status = listing.next()
                statuses.append((status.getPath().toString(), status.getLen(), status.getModificationTime()))
        except WatershedError:
            raise
        except Exception as exc:
            raise LocationError(f"{location}: cannot list its files ({type(exc).__name__})") from None
        prefix = fs.makeQualified(root).toString().rstrip("/")
        found: list[DataFile] = []
        for path, size, mtime_ms in sorted(statuses):
            relative = (
                path[len(prefix) :].strip("/").split("/") if path != prefix else [path.rsplit("/", 1)[-1]]
            )
            if any(part.startswith((".", "_")) for part in relative) or size < 4:
                continue
            kind = _magic(self.read(path, 0, 4))
            if kind is not None:
                found.append(DataFile(path, size, mtime_ms * 1_000_000, kind))
        return found

    def open(self, item: DataFile) -> RemoteFile:
        return RemoteFile(self, item.path, item.size)


class RemoteFile(io.RawIOBase):
    """A remote file read by byte ranges: a seekable stream (for pyarrow's Parquet footer) that can
    also be sliced like bytes (`data[a:b]`, `data[-1]`, for orc_crypto's tail). Its last
    TAIL_BYTES are read once and kept; other ranges are read when asked."""

    def __init__(self, files: HadoopFiles, path: str, size: int) -> None:
        super().__init__()
        self.files, self.path, self.size = files, path, size
        self.position = 0
        self._tail_start = max(0, size - TAIL_BYTES)
        self._tail: bytes | None = None

    def _range(self, start: int, stop: int) -> bytes:
        start, stop = max(0, start), min(self.size, stop)
        if stop <= start:
            return b""
        if start >= self._tail_start:
            if self._tail is None:
                self._tail = self.files.read(self.path, self._tail_start, self.size - self._tail_start)
            return self._tail[start - self._tail_start : stop - self._tail_start]
        return self.files.read(self.path, start, stop - start)

    # ------------------------------------------------------------ as bytes

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, step = key.indices(self.size)
            if step != 1:
                raise ValueError(f"{self.path}: only contiguous ranges are read")
            return self._range(start, stop)
        index = key + self.size if key < 0 else key
        if not 0 <= index < self.size:
            raise IndexError(f"{self.path}: offset {key} outside the file ({self.size} bytes)")
        return self._range(index, index + 1)[0]

    # ------------------------------------------------------------ as a stream

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def readinto(self, buffer) -> int:
        data = self._range(self.position, self.position + len(buffer))
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sample_on_spark(
    spark,
    files: Sequence[DataFile],
    layout: Callable[[DataFile], FileLayout],
    limits: SampleLimits,
    columns: Sequence[str] | None = None,
) -> TableSample:
    """Read up to `limits.rows` rows of `files` on `spark`: one job per format, of the text and
    integer `columns` (None: all) that no file encrypts and every file of the format holds.

    `layout(file)` gives each file's columns, kinds and encrypted columns (the use case reads ORC
    tails through orc_crypto); a file whose layout cannot be read is an error of the sample and is
    not read. Files are taken in order until their footers count `limits.rows` rows: a table of
    thousands of partitions costs a few tails and a job over a few files. A Spark job is one read: the byte and time bounds are checked between two jobs, the
    row bound is the job's limit.
    """
    sample = TableSample()
    wanted = None if columns is None else {c.lower() for c in columns}
    deadline = time.monotonic() + limits.seconds
    layouts: dict[FileFormat, list[tuple[DataFile, FileLayout]]] = {}
    counted = 0
    for item in files:
        if counted >= limits.rows:
            break  # the files taken hold the rows wanted: no more tails are read
        try:
            found = layout(item)
        except Exception as exc:
            sample.errors.append(read_failure(item.path, "read its layout", exc))
            continue
        sample.files += 1
        counted += found.rows if found.rows is not None else 0
        layouts.setdefault(item.format, []).append((item, found))
    for file_format, group in sorted(layouts.items()):
        kinds: dict[str, str] = {}
        everywhere: set[str] | None = None
        for _, found in group:
            for name, kind in found.columns.items():
                if wanted is not None and name.lower() not in wanted:
                    continue
                kinds.setdefault(name, kind)
                if name in found.protected:
                    sample.protected.add(name.lower())
            present = {n for n in found.columns if n not in found.protected}
            everywhere = present if everywhere is None else everywhere & present
        chosen = [
            name
            for name, kind in kinds.items()
            if name.lower() not in sample.protected and kind in SAMPLED_KINDS and name in (everywhere or ())
        ]
        sample.skipped.update(
            name.lower() for name in kinds if name not in chosen and name.lower() not in sample.protected
        )
        if not chosen:
            continue
        sample.stopped_by = exceeded(sample, limits, deadline)
        if sample.stopped_by:
            break
        paths = [item.path for item, _ in group]
        try:
            rows = (
                # load() takes the list: DataFrameReader.orc's second positional is mergeSchema
                spark.read.format(file_format)
                .load(paths)
                .select(*[_quoted(n) for n in chosen])
                .limit(limits.rows - sample.rows)
                .collect()
            )
        except Exception as exc:
            sample.errors.append(
                read_failure(f"{len(paths)} {file_format} files", "read them on Spark", exc, data=True)
            )
            continue
        sample.rows += len(rows)
        for position, name in enumerate(chosen):
            kept = sample.values.setdefault(name.lower(), [])
            for row in rows:
                value = row[position]
                if value is not None:
                    text = value if isinstance(value, str) else str(value)
                    kept.append(text)
                    sample.bytes += len(text)
    if not sample.stopped_by and sample.rows >= limits.rows:
        sample.stopped_by = "rows"
    return sample


__all__ = ["TAIL_BYTES", "HadoopFiles", "RemoteFile", "is_remote", "sample_on_spark"]
