"""A column's file statistics from its stripe statistics, merged the way ORC writers merge them.

When an ORC writer closes a file, each column's footer statistics are its in-memory stripe
statistics merged in stripe order (ORC Java `ColumnStatisticsImpl.merge`, ORC C++
`MutableColumnStatistics::merge`). `merge_statistics` redoes that from the serialized stripe
statistics (Metadata.stripeStats[s].colStats[column]), so a rewriter can give a column new file
statistics without re-writing it. Serialization loses nothing the merge needs, with the exceptions
noted at `merge_statistics`.

The two writers agree except where noted; where they serialize differently (an all-null string
column: Java writes `{}`, C++ `{sum: 0}`), the stripes show which form the writer uses and the merge
keeps it.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import Any

from google.protobuf.message import DecodeError, Message

from watershed.orc_crypto.proto import orc_proto_pb2 as pb

#: Footer.writer values (OrcFile.WriterImplementation); a missing value means ORC Java.
ORC_JAVA = 0
ORC_CPP = 1

# Type.kind values
_BOOLEAN, _BYTE, _SHORT, _INT, _LONG, _FLOAT, _DOUBLE, _STRING, _BINARY, _TIMESTAMP = range(10)
_LIST, _MAP, _STRUCT, _UNION, _DECIMAL, _DATE, _VARCHAR, _CHAR, _TIMESTAMP_INSTANT = range(10, 19)

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INT128_MIN, _INT128_MAX = -(2**127), 2**127 - 1
#: ORC Java keeps decimals of precision <= 18 as longs (Decimal64StatisticsImpl) ...
_MAX_DECIMAL64_PRECISION = 18
_MAX_DECIMAL64 = 10**18 - 1
#: ... and larger ones as HiveDecimal, which holds at most 38 digits.
_HIVE_MAX_PRECISION = 38
#: Timestamp nanos (below the millisecond) the writers leave out of the statistics: 0 for the
#: minimum, 999999 for the maximum; any other value is stored plus one.
_DEFAULT_MIN_NANOS, _DEFAULT_MAX_NANOS = 0, 999_999

# Exact decimal arithmetic: 38-digit values and their sums fit easily.
_DECIMALS = decimal.Context(prec=120, rounding=decimal.ROUND_HALF_UP, traps=[decimal.InvalidOperation])

#: ColumnStatistics field -> the message it holds; all but stringStatistics travel as bytes.
SUB_STATISTICS: dict[str, type[Message]] = {
    "intStatistics": pb.IntegerStatistics,
    "doubleStatistics": pb.DoubleStatistics,
    "stringStatistics": pb.StringStatistics,
    "bucketStatistics": pb.BucketStatistics,
    "decimalStatistics": pb.DecimalStatistics,
    "dateStatistics": pb.DateStatistics,
    "binaryStatistics": pb.BinaryStatistics,
    "timestampStatistics": pb.TimestampStatistics,
    "collectionStatistics": pb.CollectionStatistics,
}

#: Type.kind -> the sub-message the writers keep for it (STRUCT and UNION have none).
_FIELD_OF_KIND: dict[int, str] = {
    _BOOLEAN: "bucketStatistics",
    **dict.fromkeys((_BYTE, _SHORT, _INT, _LONG), "intStatistics"),
    **dict.fromkeys((_FLOAT, _DOUBLE), "doubleStatistics"),
    **dict.fromkeys((_STRING, _VARCHAR, _CHAR), "stringStatistics"),
    _BINARY: "binaryStatistics",
    **dict.fromkeys((_TIMESTAMP, _TIMESTAMP_INSTANT), "timestampStatistics"),
    **dict.fromkeys((_LIST, _MAP), "collectionStatistics"),
    _DECIMAL: "decimalStatistics",
    _DATE: "dateStatistics",
}

#: (number of values, typed statistics) of one stripe
_Stripe = tuple[int, Any]


def merge_statistics(
    stripes: Iterable[pb.ColumnStatistics],
    *,
    column_type: pb.Type | None = None,
    writer: int | None = None,
) -> pb.ColumnStatistics:
    """File statistics of one column from its stripe statistics, as ORC writers merge them.

    `stripes` are the column's statistics of every stripe in file order. bytesOnDisk is left
    out (the caller sets it). The sub-message kind comes from the stripes; mixed kinds raise
    ValueError.

    Two optional facts from the footer make the merge exact where the writers differ:
    `column_type` (footer.types[column]) and `writer` (footer.writer). They matter only for
    decimal sums near overflow (ORC Java: precision <= 18 drops a sum beyond 18 digits, larger
    precisions round the fraction to fit 38 digits and drop beyond 38 integer digits; ORC C++:
    drops a sum whose unscaled value overflows 128 bits) and for a file without stripes, whose
    statistics are the writer's empty ones for the type. Without `writer` the merge follows
    ORC Java; with ORC_CPP but no type, C++ sums use the largest scale the stripes show.

    Not reproduced, as the stripe statistics do not hold what it takes: ORC Java's decimal64
    merge keeps the partial sum of an overflowed first stripe (it copies the sum but not its
    overflow flag), the merge drops that sum; ORC Java compares truncated string bounds in
    memory, where an incremented last character can be invalid UTF-8 that the footer holds as
    U+FFFD. Timestamp statistics without UTC fields (old writers) raise ValueError: they are in
    the writer's local time.
    """
    stripes = list(stripes)
    merged = pb.ColumnStatistics(
        numberOfValues=sum(s.numberOfValues for s in stripes),
        # Readers take a missing hasNull as true (old writers did not record it).
        hasNull=any(s.hasNull if s.HasField("hasNull") else True for s in stripes),
    )
    present = {name for s in stripes for name in SUB_STATISTICS if s.HasField(name)}
    if len(present) > 1:
        raise ValueError(f"stripe statistics of different kinds: {', '.join(sorted(present))}")
    expected = _FIELD_OF_KIND.get(column_type.kind) if column_type is not None else None
    if present and expected is not None and present != {expected}:
        raise ValueError(f"stripe statistics hold {present.pop()}, the column type needs {expected}")
    if present:
        name = present.pop()
        # A stripe without the sub-message counts as one with every field missing.
        typed = [(s.numberOfValues, _parse_typed(s, name)) for s in stripes]
        message = _MERGERS[name](typed, column_type, writer)
    elif not stripes and expected is not None:
        name, message = expected, _empty_statistics(expected, writer)
    else:
        return merged
    if name == "stringStatistics":
        merged.stringStatistics.SetInParent()  # present even when empty, as the writers put it
        merged.stringStatistics.MergeFrom(message)
    else:
        setattr(merged, name, message.SerializeToString())
    return merged


def _parse_typed(stats: pb.ColumnStatistics, name: str) -> Message:
    message = SUB_STATISTICS[name]()
    if not stats.HasField(name):
        return message
    if name == "stringStatistics":
        message.CopyFrom(stats.stringStatistics)
        return message
    try:
        message.ParseFromString(getattr(stats, name))
    except DecodeError as exc:
        raise ValueError(f"corrupt {name}: {exc}") from exc
    return message


def _empty_statistics(name: str, writer: int | None) -> Message:
    """What the writer serializes for a column that saw no values."""
    cpp = writer == ORC_CPP
    message = SUB_STATISTICS[name]()
    if name in ("intStatistics", "doubleStatistics", "binaryStatistics"):
        message.sum = 0
    elif name == "bucketStatistics":
        message.count.append(0)
    elif name == "decimalStatistics":
        message.sum = "0"
    elif name == "stringStatistics" and cpp:
        message.sum = 0  # ORC Java writes no sum without values
    elif name == "collectionStatistics" and cpp:
        message.totalChildren = 0  # ORC Java writes no totalChildren while it is 0
    return message


def _min_max(
    stripes: Sequence[_Stripe], low: str, high: str, key: Callable[[Any], Any] = lambda v: v
) -> tuple[Any, Any] | None:
    """The writers' min/max merge over stripes with values: the first seeds both, a later one
    replaces only when strictly smaller/greater, which keeps the first of equal values and an
    incumbent NaN (a comparison with NaN is false in Java, C++ and Python alike)."""
    found: tuple[Any, Any] | None = None
    for count, stats in stripes:
        if count == 0 or not (stats.HasField(low) and stats.HasField(high)):
            continue
        lo, hi = getattr(stats, low), getattr(stats, high)
        if found is None:
            found = (lo, hi)
            continue
        if key(lo) < key(found[0]):
            found = (lo, found[1])
        if key(hi) > key(found[1]):
            found = (found[0], hi)
    return found


def _merge_integer(stripes: Sequence[_Stripe], _type: pb.Type | None, _writer: int | None) -> Message:
    out = pb.IntegerStatistics()
    bounds = _min_max(stripes, "minimum", "maximum")
    if bounds is not None:
        out.minimum, out.maximum = bounds
    # Both writers add exactly in stripe order and give the sum up once it leaves int64; a
    # stripe without a sum had overflowed already.
    total = 0
    for _, stats in stripes:
        if not stats.HasField("sum"):
            return out
        total += stats.sum
        if not _INT64_MIN <= total <= _INT64_MAX:
            return out
    out.sum = total
    return out


def _merge_double(stripes: Sequence[_Stripe], _type: pb.Type | None, _writer: int | None) -> Message:
    out = pb.DoubleStatistics()
    bounds = _min_max(stripes, "minimum", "maximum")
    if bounds is not None:
        out.minimum, out.maximum = bounds
    # Same additions in the same order as the writers (0.0 + s0 + s1 ...), so the same rounding.
    total = 0.0
    for _, stats in stripes:
        if not stats.HasField("sum"):
            return out  # C++ drops it; ORC Java always writes one
        total += stats.sum
    out.sum = total
    return out


def _merge_date(stripes: Sequence[_Stripe], _type: pb.Type | None, _writer: int | None) -> Message:
    out = pb.DateStatistics()
    bounds = _min_max(stripes, "minimum", "maximum")
    if bounds is not None:
        out.minimum, out.maximum = bounds
    return out


def _merge_bucket(stripes: Sequence[_Stripe], _type: pb.Type | None, _writer: int | None) -> Message:
    out = pb.BucketStatistics()
    # count[0] is the number of true values; C++ drops the count once a stripe lacks it.
    if all(len(stats.count) > 0 for _, stats in stripes):
        out.count.append(sum(stats.count[0] for _, stats in stripes))
    return out


def _merge_binary(stripes: Sequence[_Stripe], _type: pb.Type | None, _writer: int | None) -> Message:
    out = pb.BinaryStatistics()
    if all(stats.HasField("sum") for _, stats in stripes):
        out.sum = sum(stats.sum for _, stats in stripes)
    return out


def _merge_string(stripes: Sequence[_Stripe], _type: pb.Type | None, _writer: int | None) -> Message:
    """ORC Java replaces a minimum/maximum longer than 1024 bytes by a truncated lowerBound /
    upperBound (the maximum with its last character incremented) and merges the truncated values
    like exact ones, carrying each side's bound flag along; ORC C++ never truncates."""
    out = pb.StringStatistics()
    low: tuple[str, bool] | None = None  # (value, is a lowerBound)
    high: tuple[str, bool] | None = None
    for count, stats in stripes:
        if count == 0:
            continue
        lo = _string_side(stats, "minimum", "lowerBound")
        hi = _string_side(stats, "maximum", "upperBound")
        # str order is code point order, which is the UTF-8 byte order Java (Text) and C++
        # (std::string) compare by.
        if lo is not None and (low is None or lo[0] < low[0]):
            low = lo
        if hi is not None and (high is None or hi[0] > high[0]):
            high = hi
    if low is not None:
        if low[1]:
            out.lowerBound = low[0]
        else:
            out.minimum = low[0]
    if high is not None:
        if high[1]:
            out.upperBound = high[0]
        else:
            out.maximum = high[0]
    # An empty stripe has no sum from ORC Java (it counts as 0) and sum 0 from C++; a stripe with
    # values but no sum means an unknown total. The file has a sum when it has values, or when
    # every stripe has one (C++ keeps `sum: 0` for an all-null column, Java writes nothing).
    if any(count > 0 and not stats.HasField("sum") for count, stats in stripes):
        return out
    total_count = sum(count for count, _ in stripes)
    if total_count > 0 or all(stats.HasField("sum") for _, stats in stripes):
        out.sum = sum(stats.sum for _, stats in stripes)
    return out


def _string_side(stats: pb.StringStatistics, exact: str, bound: str) -> tuple[str, bool] | None:
    if stats.HasField(exact):
        return getattr(stats, exact), False
    if stats.HasField(bound):
        return getattr(stats, bound), True
    return None


def _merge_collection(stripes: Sequence[_Stripe], _type: pb.Type | None, _writer: int | None) -> Message:
    out = pb.CollectionStatistics()
    bounds = _min_max(stripes, "minChildren", "maxChildren")
    if bounds is not None:
        out.minChildren, out.maxChildren = bounds
    # ORC Java writes totalChildren only when it is not 0, C++ always (it drops it only on a
    # 64-bit overflow, which no stripe reaches), so a missing one counts as 0 and a 0 total is
    # written when every stripe wrote its own.
    total = sum(stats.totalChildren for _, stats in stripes)
    if total != 0 or all(stats.HasField("totalChildren") for _, stats in stripes):
        out.totalChildren = total
    return out


def _merge_timestamp(stripes: Sequence[_Stripe], _type: pb.Type | None, _writer: int | None) -> Message:
    out = pb.TimestampStatistics()
    # Both writers order by (UTC millis, nanos below the millisecond): the nanos of the
    # incumbent change only on equal millis with smaller/greater nanos. That is tuple order.
    low: tuple[int, int] | None = None
    high: tuple[int, int] | None = None
    for count, stats in stripes:
        if count == 0:
            continue
        if not (stats.HasField("minimumUtc") and stats.HasField("maximumUtc")):
            if stats.HasField("minimum") or stats.HasField("maximum"):
                raise ValueError("timestamp statistics in the writer's local time only (no UTC fields)")
            continue
        lo = (
            stats.minimumUtc,
            stats.minimumNanos - 1 if stats.HasField("minimumNanos") else _DEFAULT_MIN_NANOS,
        )
        hi = (
            stats.maximumUtc,
            stats.maximumNanos - 1 if stats.HasField("maximumNanos") else _DEFAULT_MAX_NANOS,
        )
        if low is None or lo < low:
            low = lo
        if high is None or hi > high:
            high = hi
    if low is not None and high is not None:
        out.minimumUtc, out.maximumUtc = low[0], high[0]
        if low[1] != _DEFAULT_MIN_NANOS:
            out.minimumNanos = low[1] + 1
        if high[1] != _DEFAULT_MAX_NANOS:
            out.maximumNanos = high[1] + 1
    return out


def _merge_decimal(stripes: Sequence[_Stripe], column_type: pb.Type | None, writer: int | None) -> Message:
    out = pb.DecimalStatistics()
    # The winning stripe's strings are kept as written: both writers print trimmed decimals.
    bounds = _min_max(stripes, "minimum", "maximum", key=_decimal)
    if bounds is not None:
        out.minimum, out.maximum = bounds
    is_decimal = column_type is not None and column_type.kind == _DECIMAL
    if writer == ORC_CPP:
        scale = max([column_type.scale if is_decimal else 0, *_scales(stripes)])
        total = _cpp_decimal_sum(stripes, scale)
    elif is_decimal and column_type.precision <= _MAX_DECIMAL64_PRECISION:
        total = _java_decimal64_sum(stripes, column_type.scale)
    else:
        total = _java_decimal_sum(stripes)
    if total is not None:
        out.sum = _format_decimal(total)
    return out


def _decimal(text: str) -> Decimal:
    try:
        value = Decimal(text)
    except decimal.InvalidOperation:
        value = Decimal("NaN")
    if not value.is_finite():
        raise ValueError(f"not a decimal in the statistics: {text!r}")
    return value


def _scales(stripes: Sequence[_Stripe]) -> list[int]:
    values = [
        getattr(stats, field)
        for _, stats in stripes
        for field in ("minimum", "maximum", "sum")
        if stats.HasField(field)
    ]
    return [max(0, -_decimal(value).as_tuple().exponent) for value in values]


def _unscaled(value: Decimal, scale: int) -> int:
    return int(_DECIMALS.scaleb(value, scale))


def _cpp_decimal_sum(stripes: Sequence[_Stripe], scale: int) -> Decimal | None:
    """ORC C++ adds the unscaled values at the column scale in a signed 128-bit integer and
    gives the sum up on the first overflow, empty stripes (sum 0) included."""
    total = 0
    for _, stats in stripes:
        if not stats.HasField("sum"):
            return None
        total += _unscaled(_decimal(stats.sum), scale)
        if not _INT128_MIN <= total <= _INT128_MAX:
            return None
    return _DECIMALS.scaleb(Decimal(total), -scale)


def _java_decimal64_sum(stripes: Sequence[_Stripe], scale: int) -> Decimal | None:
    """ORC Java, precision <= 18: a long of unscaled values, dropped once beyond 18 digits.
    While the file has no values yet it takes each stripe's sum as it is."""
    total: int | None = 0
    values = 0
    for count, stats in stripes:
        stripe_sum = _unscaled(_decimal(stats.sum), scale) if stats.HasField("sum") else None
        if values == 0:
            total = stripe_sum
        elif total is not None and stripe_sum is not None:
            total += stripe_sum
            if abs(total) > _MAX_DECIMAL64:
                total = None
        else:
            total = None
        values += count
    return None if total is None else _DECIMALS.scaleb(Decimal(total), -scale)


def _java_decimal_sum(stripes: Sequence[_Stripe]) -> Decimal | None:
    """ORC Java, precision > 18: HiveDecimal additions. While the file has no minimum it takes
    each stripe's sum as it is; after that only stripes with values add to it."""
    total: Decimal | None = Decimal(0)
    has_minimum = False
    for count, stats in stripes:
        stripe_sum = _decimal(stats.sum) if stats.HasField("sum") else None
        stripe_has_minimum = count > 0 and stats.HasField("minimum")
        if not has_minimum:
            total = stripe_sum
            has_minimum = stripe_has_minimum
        elif stripe_has_minimum:
            total = None if total is None or stripe_sum is None else _hive_add(total, stripe_sum)
    return total


def _hive_add(left: Decimal, right: Decimal) -> Decimal | None:
    """HiveDecimal addition: the exact sum, its fraction rounded half up to fit 38 digits; None
    (overflow) when the integer part needs more than 38."""
    exact = _DECIMALS.add(left, right)
    integer_digits = len(str(abs(int(exact)))) if abs(exact) >= 1 else 0
    if integer_digits > _HIVE_MAX_PRECISION:
        return None
    scale = max(0, -exact.as_tuple().exponent)
    room = _HIVE_MAX_PRECISION - integer_digits
    if scale > room:
        exact = _DECIMALS.quantize(exact, Decimal(1).scaleb(-room))
        if abs(exact) >= 10**_HIVE_MAX_PRECISION:
            return None  # rounding carried into a 39th integer digit
    return exact


def _format_decimal(value: Decimal) -> str:
    """Plain notation without trailing fraction zeros, as HiveDecimal.toString and C++
    Decimal::toString(trimTrailingZeros) print."""
    if value == 0:
        return "0"
    return format(_DECIMALS.normalize(value), "f")


_MERGERS: dict[str, Callable[[Sequence[_Stripe], pb.Type | None, int | None], Message]] = {
    "intStatistics": _merge_integer,
    "doubleStatistics": _merge_double,
    "stringStatistics": _merge_string,
    "bucketStatistics": _merge_bucket,
    "decimalStatistics": _merge_decimal,
    "dateStatistics": _merge_date,
    "binaryStatistics": _merge_binary,
    "timestampStatistics": _merge_timestamp,
    "collectionStatistics": _merge_collection,
}
