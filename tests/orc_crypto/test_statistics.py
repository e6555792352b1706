"""merge_statistics: the stripe statistics of every column, merged, equal the footer's file statistics.

Files come from both ORC writers: pyarrow (ORC C++) with random tables of every type it writes,
and Spark (ORC Java) with values chosen to reach Java's own paths (truncated string bounds, decimal
rounding and overflow, timestamp nanos ties). Typed sub-messages are compared parsed (field order
cannot matter, doubles by bit pattern so NaN equals NaN); a raw byte difference only warns.
"""

from __future__ import annotations

import datetime
import io
import struct
import warnings
from decimal import Context, Decimal, localcontext
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from watershed.orc_crypto.codec.statistics import ORC_CPP, ORC_JAVA, SUB_STATISTICS, merge_statistics
from watershed.orc_crypto.codec.tail import read_tail
from watershed.orc_crypto.proto import orc_proto_pb2 as pb

TYPED = SUB_STATISTICS


def comparable(stats: pb.ColumnStatistics) -> dict:
    """The statistics without bytesOnDisk, typed sub-messages parsed into (field, value) tuples."""
    view: dict = {
        "numberOfValues": stats.numberOfValues if stats.HasField("numberOfValues") else None,
        "hasNull": stats.hasNull if stats.HasField("hasNull") else None,
    }
    for name, cls in TYPED.items():
        if not stats.HasField(name):
            continue
        if name == "stringStatistics":
            message = stats.stringStatistics
        else:
            message = cls()
            message.ParseFromString(getattr(stats, name))
        view[name] = tuple((field.name, _value(field, value)) for field, value in message.ListFields())
    return view


def _value(field, value):
    if field.type == field.TYPE_DOUBLE:
        return struct.pack("<d", value)  # bit pattern: NaN == NaN, -0.0 != 0.0
    if isinstance(value, int | float | str | bytes | bool):
        return value
    return tuple(value)  # repeated (bucket counts)


def without_bytes_on_disk(stats: pb.ColumnStatistics) -> bytes:
    copy = pb.ColumnStatistics()
    copy.CopyFrom(stats)
    copy.ClearField("bytesOnDisk")
    return copy.SerializeToString()


def check_file(data: bytes, name: str) -> int:
    """Assert that every column's merged stripe statistics equal its file statistics; return the
    number of stripes."""
    tail = read_tail(name, data)
    footer = tail.footer
    for column, file_stats in enumerate(footer.statistics):
        stripes = [stripe.colStats[column] for stripe in tail.metadata.stripeStats]
        merged = merge_statistics(stripes, column_type=footer.types[column], writer=footer.writer)
        assert not merged.HasField("bytesOnDisk")
        assert comparable(merged) == comparable(file_stats), f"{name} column {column}"
        if merged.SerializeToString() != without_bytes_on_disk(file_stats):
            warnings.warn(f"{name} column {column}: equal statistics, different bytes", stacklevel=1)
    return len(footer.stripes)


# --- ORC C++ (pyarrow): random tables of every type ------------------------------------------

EXACT = Context(prec=60)
_LONG_TEXT = st.builds(
    lambda unit, times: unit * times, st.text(min_size=1, max_size=3), st.integers(350, 700)
)
_MILLIS = st.sampled_from([-1, 0, 1, 1_600_000_000_000])  # few values: ties on the millisecond


def _decimal(precision: int, scale: int):
    bound = 10**precision - 1
    unscaled = st.one_of(
        st.integers(-1000, 1000), st.integers(-bound, bound), st.sampled_from([bound, -bound])
    )
    return unscaled.map(lambda value: Decimal(value).scaleb(-scale, EXACT))


COLUMNS: dict[str, tuple[pa.DataType, st.SearchStrategy]] = {
    "bool": (pa.bool_(), st.booleans()),
    "i8": (pa.int8(), st.integers(-(2**7), 2**7 - 1)),
    "i16": (pa.int16(), st.integers(-(2**15), 2**15 - 1)),
    "i32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    # extremes make the int64 sum overflow in some stripes or only across them
    "i64": (pa.int64(), st.one_of(st.integers(-1000, 1000), st.integers(-(2**63), 2**63 - 1))),
    "f32": (pa.float32(), st.floats(width=32)),
    "f64": (pa.float64(), st.floats()),
    "str": (pa.string(), st.one_of(st.text(max_size=6), _LONG_TEXT)),
    "bin": (pa.binary(), st.binary(max_size=12)),
    "ts": (
        pa.timestamp("ns"),
        st.one_of(
            st.integers(-(2**62), 2**62),
            st.builds(lambda ms, ns: ms * 1_000_000 + ns, _MILLIS, st.integers(0, 999_999)),
        ),
    ),
    "dec9": (pa.decimal128(9, 2), _decimal(9, 2)),
    "dec38": (pa.decimal128(38, 10), _decimal(38, 10)),
    "date": (pa.date32(), st.integers(-100_000, 100_000)),
    "list": (pa.list_(pa.int32()), st.lists(st.one_of(st.none(), st.integers(-5, 5)), max_size=4)),
    "map": (
        pa.map_(pa.string(), pa.int64()),
        st.dictionaries(st.text(max_size=3), st.integers(-5, 5), max_size=3).map(lambda d: list(d.items())),
    ),
    "struct": (
        pa.struct([("a", pa.int32()), ("b", pa.string())]),
        st.fixed_dictionaries(
            {"a": st.one_of(st.none(), st.integers(-9, 9)), "b": st.one_of(st.none(), st.text(max_size=4))}
        ),
    ),
}


@st.composite
def tables(draw) -> pa.Table:
    rows = draw(st.integers(0, 24))
    # A string in every row: the C++ writer checks the stripe size after each batch, and only
    # a string dictionary reaches the (tiny) size before the integer encoders flush.
    arrays = {"row": pa.array([str(i) for i in range(rows)], pa.string())}
    for name, (arrow_type, values) in COLUMNS.items():
        # no nulls, some (so some stripes are all null), or only nulls
        nulls = draw(st.sampled_from(["none", "some", "all"]))
        if nulls == "all":
            cells = [None] * rows
        else:
            cell = values if nulls == "none" else st.one_of(st.none(), values)
            cells = draw(st.lists(cell, min_size=rows, max_size=rows))
        arrays[name] = pa.array(cells, arrow_type)
    return pa.table(arrays)


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(table=tables(), batch_size=st.integers(1, 6))
def test_pyarrow_files(table, batch_size):
    buffer = io.BytesIO()
    orc.write_table(table, buffer, stripe_size=1, batch_size=batch_size)
    data = buffer.getvalue()
    assert read_tail("pyarrow.orc", data).footer.writer == ORC_CPP
    stripes = check_file(data, "pyarrow.orc")
    assert stripes == -(-table.num_rows // batch_size)  # one stripe per batch


# --- ORC Java (Spark) -------------------------------------------------------------------------

SPARK_SCHEMA = (
    "b boolean, y tinyint, l bigint, f float, d double, s string, bin binary, ts timestamp, "
    "d10 decimal(10,2), d18 decimal(18,0), d38 decimal(38,18), dt date, arr array<int>, "
    "m map<string,int>, st struct<a:int,b:string>, nul string"
)
ROWS_PER_STRIPE = 5


def spark_rows() -> list[tuple]:
    base = datetime.datetime(2021, 3, 4, 5, 6, 7)
    with localcontext() as context:
        context.prec = 60
        big = Decimal("99999999999999999999.123456789012345678")
        rows = []
        for i in range(25):
            stripe = i // ROWS_PER_STRIPE
            if i % 5 == 0:
                text = "a" * 1100  # the minimum, truncated to a 1024-byte lowerBound
            elif i == 13:
                text = "ü" * 600 + "z"  # the maximum, truncated to an upperBound
            else:
                text = f"s{i}é"
            rows.append(
                (
                    None if i % 5 == 1 else i % 3 == 0,
                    None if i % 4 == 2 else (i * 37) % 256 - 128,
                    None if i % 6 == 5 else 2**60 + i,  # each stripe's sum fits, the file's does not
                    None if i % 7 == 3 else i / 3,
                    None if i % 3 == 2 else (float("nan") if i == 17 else i / 7 - 1),
                    None if stripe == 1 else text,  # an all-null stripe
                    None if i % 7 == 6 else bytes([i]) * i,
                    # every stripe's minimum and maximum share their millisecond with another's
                    None
                    if i % 5 == 4
                    else base + datetime.timedelta(microseconds=(i * 7) % 9 - (i % 2) * 10**6),
                    None if i % 3 == 1 else Decimal(i) / 4 - 3,
                    # decimal64: each stripe's sum has 18 digits, the file's 19
                    None if i % 5 == 2 else Decimal(10**17 * (i % 3 + 1)),
                    # 20 integer digits + 18 fraction digits: the sum is rounded to 38 digits
                    None if i % 4 == 1 else big - i - Decimal(i) / 10**18,
                    None if i % 4 == 3 else datetime.date(2000, 1, 1) + datetime.timedelta(days=i * 40 - 300),
                    None if i % 5 == 4 else list(range(i % 4)),
                    None if i % 6 == 0 else {f"k{j}": j for j in range(i % 3)},
                    None if i % 8 == 7 else (i, None if i % 2 else f"n{i}"),
                    None,
                )
            )
    return rows


def test_spark_file(spark, tmp_path: Path):
    frame = spark.createDataFrame(spark_rows(), SPARK_SCHEMA)
    previous = spark.conf.get("spark.sql.orc.columnarWriterBatchSize")
    # Small writer batches let ORC's stripe.row.count check run often enough to cut stripes.
    spark.conf.set("spark.sql.orc.columnarWriterBatchSize", "1")
    try:
        (
            frame.coalesce(1)
            .write.option("orc.stripe.row.count", str(ROWS_PER_STRIPE))
            .option("orc.rows.between.memory.checks", "1")
            .orc(str(tmp_path / "table"))
        )
    finally:
        spark.conf.set("spark.sql.orc.columnarWriterBatchSize", previous)
    (path,) = (tmp_path / "table").glob("*.orc")
    data = path.read_bytes()
    tail = read_tail(path, data)
    assert tail.footer.writer == ORC_JAVA
    assert check_file(data, path.name) == 5
    # the Java-only paths were reached
    root = tail.footer.types[0]
    files = {
        name: comparable(tail.footer.statistics[id_])
        for name, id_ in zip(root.fieldNames, root.subtypes, strict=True)
    }
    strings = dict(files["s"]["stringStatistics"])
    assert "lowerBound" in strings and "upperBound" in strings
    assert "sum" not in dict(files["l"]["intStatistics"])
    assert "sum" not in dict(files["d18"]["decimalStatistics"])
    integer, fraction = dict(files["d38"]["decimalStatistics"])["sum"].split(".")
    assert len(integer) == 22 and len(fraction) <= 16  # rounded from 18 fraction digits
    assert files["nul"]["stringStatistics"] == ()  # Java: empty, C++ would write sum 0


# --- behaviour no writer-made file shows ------------------------------------------------------


def column(count: int, **typed) -> pb.ColumnStatistics:
    """Stripe statistics with `count` values and typed sub-messages (not stringStatistics)."""
    stats = pb.ColumnStatistics(numberOfValues=count, hasNull=False)
    for name, message in typed.items():
        setattr(stats, name, message.SerializeToString())
    return stats


def decimal_stripe(value: str) -> pb.ColumnStatistics:
    return column(1, decimalStatistics=pb.DecimalStatistics(minimum=value, maximum=value, sum=value))


def merged_sum(values: list[str], precision: int, scale: int, writer: int | None) -> str | None:
    decimal_type = pb.Type(kind=14, precision=precision, scale=scale)
    merged = merge_statistics([decimal_stripe(v) for v in values], column_type=decimal_type, writer=writer)
    message = pb.DecimalStatistics.FromString(merged.decimalStatistics)
    return message.sum if message.HasField("sum") else None


# Results of HiveDecimalWritable.mutateAdd (hive-storage-api 2.8.1, Spark's classpath).
@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        ("9999999999999999999999999999.5", "9999999999999999999999999999.5", "19999999999999999999999999999"),
        ("1.50", "2.25", "3.75"),
        ("0.5", "-0.5", "0"),
        ("99999999999999999999999999999999999999", "1", None),
        ("9999999999999999999999999999.9999999999", "0.00000000015", "10000000000000000000000000000"),
        (
            "1234567890123456789012345678.1234567885",
            "1234567890123456789012345678.1234567880",
            "2469135780246913578024691356.2469135765",
        ),
        ("12345678901234567890123456789012345678", "-0.5", "12345678901234567890123456789012345678"),
        ("-12345678901234567890123456789012345678", "-0.5", "-12345678901234567890123456789012345679"),
        ("-99999999999999999999999999999999999999", "-0.5", None),
    ],
)
def test_java_decimal_sum_rounds_like_hive_decimal(left, right, expected):
    assert merged_sum([left, right], 38, 11, ORC_JAVA) == expected
    assert merged_sum([left, right], 38, 11, None) == expected  # Java is the default


def test_decimal_sum_overflow_differs_by_writer():
    nines = "9" * 28 + ".5"  # decimal(38,10): the sum needs 39 digits
    assert merged_sum([nines, nines], 38, 10, ORC_JAVA) == "1" + "9" * 28
    assert merged_sum([nines, nines], 38, 10, ORC_CPP) is None  # beyond 2**127 unscaled
    big = "600000000000000000"
    assert merged_sum([big, big], 18, 0, ORC_JAVA) is None  # decimal64: beyond 18 digits
    assert merged_sum([big, big], 18, 0, ORC_CPP) == "1200000000000000000"


def test_java_decimal64_overflowed_first_stripe_drops_the_sum():
    # Java copies this stripe's in-memory partial sum into the file statistics; it is not in
    # the stripe statistics, so the merge drops the sum instead.
    first = column(3, decimalStatistics=pb.DecimalStatistics(minimum="1", maximum="9"))
    decimal_type = pb.Type(kind=14, precision=18, scale=0)
    merged = merge_statistics([first, decimal_stripe("5")], column_type=decimal_type, writer=ORC_JAVA)
    assert pb.DecimalStatistics.FromString(merged.decimalStatistics) == pb.DecimalStatistics(
        minimum="1", maximum="9"
    )


def test_no_stripes_gives_the_writers_empty_statistics():
    string_type, list_type = pb.Type(kind=7), pb.Type(kind=10, subtypes=[2])
    java = merge_statistics([], column_type=string_type, writer=ORC_JAVA)
    assert java.HasField("stringStatistics") and java.stringStatistics == pb.StringStatistics()
    assert merge_statistics([], column_type=string_type, writer=ORC_CPP).stringStatistics.sum == 0
    assert merge_statistics([], column_type=list_type, writer=ORC_JAVA).collectionStatistics == b""
    assert (
        merge_statistics([], column_type=pb.Type(kind=4)).intStatistics
        == pb.IntegerStatistics(sum=0).SerializeToString()
    )
    assert merge_statistics([]) == pb.ColumnStatistics(numberOfValues=0, hasNull=False)


def test_missing_has_null_counts_as_true_and_bytes_on_disk_is_left_out():
    stripes = [
        pb.ColumnStatistics(numberOfValues=2, bytesOnDisk=10),
        pb.ColumnStatistics(numberOfValues=1, hasNull=False),
    ]
    assert merge_statistics(stripes) == pb.ColumnStatistics(numberOfValues=3, hasNull=True)


def test_mixed_kinds_and_local_time_timestamps_are_refused():
    integer = column(1, intStatistics=pb.IntegerStatistics(minimum=1, maximum=1, sum=1))
    double = column(1, doubleStatistics=pb.DoubleStatistics(minimum=1, maximum=1, sum=1))
    with pytest.raises(ValueError, match="different kinds"):
        merge_statistics([integer, double])
    with pytest.raises(ValueError, match="column type needs"):
        merge_statistics([integer], column_type=pb.Type(kind=6))
    local = column(1, timestampStatistics=pb.TimestampStatistics(minimum=5, maximum=5))
    with pytest.raises(ValueError, match="local time"):
        merge_statistics([local])
