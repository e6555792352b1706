"""How many bytes a column occupies per partition, from a sample of the table's ORC files.

A table's size is known when its catalog entry has a local `location` laid out
Hive-style (`location/dt=2024-01-31/part-*.orc`). The column's share of the
table's bytes is measured on up to `sample_files` files with pyarrow (decoded
sizes, a proxy for the on-disk share); the savings are that share of the
average partition's bytes, times the partitions older than the recommended
TTL. Anything else is `unknown` (None).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from watershed.graph.catalog import Catalog
from watershed.ttl_advisor.model import Savings


@dataclass
class TableSample:
    partitions: int
    bytes_per_partition: int
    shares: dict[str, float]
    files: int


def data_files(location: Path, partition_column: str) -> tuple[list[Path], list[Path]]:
    """The partition directories under `location` and the data files in them (Spark's and Hive's
    `_`/`.` names left out)."""
    partitions = sorted(
        p for p in location.iterdir() if p.is_dir() and p.name.startswith(f"{partition_column}=")
    )
    files: list[Path] = []
    for partition in partitions:
        for root, _dirs, names in os.walk(partition):
            files.extend(Path(root, name) for name in names if not name.startswith((".", "_")))
    return partitions, files


def listing_fingerprint(location: str | None, partitioned_by: list[str] | None) -> str | None:
    """A digest of what a table's savings are measured on: its partitions' files with their sizes
    and modification times; None when the table cannot be sampled (no local partitioned location).
    A TTL run keeps it on the table; a changed one re-advises the table's columns."""
    if not location or not partitioned_by:
        return None
    root = Path(location.removeprefix("file://"))
    try:
        _partitions, files = data_files(root, partitioned_by[0])
        listing = sorted(
            f"{path.relative_to(root).as_posix()}\t{stat.st_size}\t{stat.st_mtime_ns}"
            for path in files
            for stat in (path.stat(),)
        )
    except (OSError, ValueError) as exc:
        # unreadable now: a digest of the error, so a table that becomes readable is advised again
        listing = [f"error\t{type(exc).__name__}"]
    return hashlib.sha256("\n".join(listing).encode()).hexdigest()[:32]


class OrcSizeEstimator:
    def __init__(self, catalog: Catalog, sample_files: int = 3) -> None:
        self.catalog = catalog
        self.sample_files = sample_files
        self._samples: dict[str, TableSample | None] = {}
        self.problems: list[str] = []

    def __call__(self, table: str, column: str, keep_days: int | None) -> Savings | None:
        sample = self._sample(table)
        if sample is None or keep_days is None:
            return None
        share = sample.shares.get(column)
        if share is None:
            return None
        beyond = max(sample.partitions - keep_days, 0)
        return Savings(
            column_share=round(share, 6),
            bytes_per_partition=sample.bytes_per_partition,
            partitions_beyond_ttl=beyond,
            bytes=int(share * sample.bytes_per_partition * beyond),
            sampled_files=sample.files,
        )

    def _sample(self, table: str) -> TableSample | None:
        if table in self._samples:
            return self._samples[table]
        entry = self.catalog.get(table)
        sample = None
        if entry is not None and entry.location and entry.partitioned_by:
            try:
                sample = self._measure(
                    Path(entry.location.removeprefix("file://")), entry.partition_column_names[0]
                )
            except (OSError, ValueError) as exc:
                # A broken sample makes this table's savings unknown, not the whole run fail.
                self.problems.append(f"{table}: cannot sample {entry.location}: {exc}")
        self._samples[table] = sample
        return sample

    def _measure(self, location: Path, partition_column: str) -> TableSample | None:
        import pyarrow.orc as orc

        partitions, files = data_files(location, partition_column)
        if not partitions:
            return None
        total = sum(path.stat().st_size for path in files)
        if not files:
            return None
        column_bytes: dict[str, int] = {}
        sampled = 0
        for path in sorted(files)[: self.sample_files]:
            table = orc.ORCFile(str(path)).read()
            for name in table.column_names:
                column_bytes[name.lower()] = column_bytes.get(name.lower(), 0) + table.column(name).nbytes
            sampled += 1
        all_bytes = sum(column_bytes.values()) or 1
        return TableSample(
            partitions=len(partitions),
            bytes_per_partition=total // len(partitions),
            shares={name: size / all_bytes for name, size in column_bytes.items()},
            files=sampled,
        )
