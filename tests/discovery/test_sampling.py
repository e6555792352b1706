"""Bounded sampling of local Parquet files: rows, bytes, only text and integer columns, fingerprints."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from tests.discovery.warehouse import labelled_table, sampled_values, write_parquet
from watershed.discovery.sampling import (
    LocationError,
    ParquetReader,
    SampleLimits,
    data_files,
    fingerprint,
    sample_files,
)

READERS = {"parquet": ParquetReader()}


class CountingReader(ParquetReader):
    """The real Parquet reader, noting which columns each read asked for."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def read(self, path, columns, part, rows):
        self.asked.append(list(columns))
        return super().read(path, columns, part, rows)


@pytest.fixture
def table_dir(tmp_path):
    write_parquet(tmp_path / "t", labelled_table(rows=120), files=2)
    (tmp_path / "t" / ".part-00000.crc").write_bytes(b"x")
    return tmp_path / "t"


def test_files_are_found_by_their_magic_and_bookkeeping_files_are_left_out(table_dir):
    (table_dir / "notes.txt").write_text("not data")
    files = data_files(table_dir)
    assert [os.path.basename(f.path) for f in files] == [
        "part-00000.snappy.parquet",
        "part-00001.snappy.parquet",
    ]
    assert {f.format for f in files} == {"parquet"}


def test_rows_bound_the_sample_and_only_text_and_integer_columns_are_read(table_dir):
    reader = CountingReader()
    sample = sample_files(data_files(table_dir), {"parquet": reader}, SampleLimits(rows=70))
    assert sample.rows == 70
    assert sample.stopped_by == "rows"
    assert sample.skipped == {"amount_num"}
    assert all("amount_num" not in asked for asked in reader.asked)
    # 70 rows with about 10% nulls: every value kept is a non-null one of the first 70 rows
    table = labelled_table(rows=120)
    assert sample.values["c17"] == [v for v in table.column("c17").to_pylist()[:70] if v is not None]


def test_bytes_bound_the_sample(table_dir):
    sample = sample_files(data_files(table_dir), READERS, SampleLimits(rows=1000, bytes=1))
    assert sample.stopped_by == "bytes"
    assert sample.rows == 50  # one row group was read, then the bound stopped the next


def test_everything_is_read_when_the_table_is_smaller_than_the_bounds(table_dir):
    sample = sample_files(data_files(table_dir), READERS, SampleLimits(rows=1000))
    assert sample.rows == 120
    assert sample.stopped_by is None
    assert sample.files == 2


def test_chosen_columns_only(table_dir):
    reader = CountingReader()
    sample = sample_files(data_files(table_dir), {"parquet": reader}, SampleLimits(), columns=["K3"])
    assert set(sample.values) == {"k3"}
    assert {tuple(a) for a in reader.asked} == {("k3",)}


def test_the_fingerprint_moves_with_the_files_only(table_dir):
    before = fingerprint(data_files(table_dir))
    assert fingerprint(data_files(table_dir)) == before
    part = table_dir / "part-00001.snappy.parquet"
    stat = part.stat()
    os.utime(part, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    touched = fingerprint(data_files(table_dir))
    assert touched != before
    write_parquet(table_dir / "dt=2024-02-01", pa.table({"c17": ["13812345678"]}), files=1)
    assert fingerprint(data_files(table_dir)) not in (before, touched)


def test_a_remote_or_missing_location_is_named(tmp_path):
    with pytest.raises(LocationError, match="hdfs://nn/warehouse/t: a hdfs:// location is sampled on Spark"):
        data_files("hdfs://nn/warehouse/t")
    with pytest.raises(LocationError, match="no such file"):
        data_files(tmp_path / "missing")
    assert data_files(f"file://{tmp_path}") == []


def test_a_broken_file_is_an_error_of_the_sample_naming_the_file_not_its_bytes(table_dir):
    broken = table_dir / "part-00002.snappy.parquet"
    broken.write_bytes(b"PAR1" + b"13812345678" * 10)
    sample = sample_files(data_files(table_dir), READERS, SampleLimits(rows=1000))
    assert sample.rows == 120
    assert len(sample.errors) == 1 and sample.errors[0].startswith(f"{broken}: cannot read its layout (")
    assert "13812345678" not in sample.errors[0]


def test_the_sample_shows_no_value_when_printed(table_dir):
    sample = sample_files(data_files(table_dir), READERS, SampleLimits(rows=1000))
    shown = repr(sample) + str(sample)
    assert sampled_values(labelled_table(rows=120))
    assert not [v for v in sampled_values(labelled_table(rows=120)) if v in shown]


class QuotingReader(ParquetReader):
    """The real Parquet reader whose data reads fail as orc_crypto's `read_orc` does when pyarrow
    cannot decode a stripe: an OrcFormatError (one of our own errors) carrying pyarrow's message,
    which may quote the value it was decoding."""

    def read(self, path, columns, part, rows):
        from watershed.orc_crypto.errors import OrcFormatError

        raise OrcFormatError(path, "cannot decode: Invalid UTF8 payload in '13812345678'")


def test_a_failed_data_read_names_the_file_and_the_error_type_never_its_message(table_dir):
    sample = sample_files(data_files(table_dir), {"parquet": QuotingReader()}, SampleLimits(rows=1000))
    assert sample.errors == [
        f"{table_dir / name}: cannot read part 0 (OrcFormatError)"
        for name in ("part-00000.snappy.parquet", "part-00001.snappy.parquet")
    ]
