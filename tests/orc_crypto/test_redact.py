"""The redact mask against ORC Java's RedactMaskFactory: its unit-test values, parameter parsing,
reference implementations written straight from the Java code, and ORC Java itself (through Spark,
and by calling the Java mask in Spark's JVM where ORC Java's writer cannot redact a type)."""

from __future__ import annotations

import datetime as dt
import math
import unicodedata
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from py4j.java_gateway import get_field, set_field

from watershed.orc_crypto.codec import kinds
from watershed.orc_crypto.masking.redact import RedactMask, _java_double_to_string

EPOCH = dt.date(1970, 1, 1)


def mask(params: list[str], values: list, arrow_type: pa.DataType, kind: int) -> list:
    return RedactMask.parse(params).mask(pa.array(values, arrow_type), kind).to_pylist()


def days(text: str) -> int:
    return (dt.date.fromisoformat(text) - EPOCH).days


# --------------------------------------------------------------------------- Java's unit tests
# Expected values from ORC's TestRedactMask and TestUnmaskRange.


def test_longs_keep_digit_count_and_sign():
    got = mask(["Xx7"], [0, 9, -9, -1, 10, -10, 2**63 - 1, -(2**63) + 1, -(2**63)], pa.int64(), kinds.LONG)
    assert got == [7, 7, -7, -7, 77, -77, 7777777777777777777, -7777777777777777777, -7777777777777777777]


@pytest.mark.parametrize("digit", range(10))
def test_longs_for_every_power_of_ten(digit):
    inputs, expected = [], []
    for i in range(19):
        # 19 nines do not fit a long: Java uses 18 digits then
        want = 999_999_999_999_999_999 if (i == 18 and digit == 9) else int(str(digit) * (i + 1))
        for factor in (1, 5, 9):
            inputs.append(factor * 10**i)
            expected.append(want)
    assert mask([f"Xx{digit}"], inputs, pa.int64(), kinds.LONG) == expected


def test_doubles_scale_the_digit_by_the_power_of_ten():
    got = mask(["Xx7"], [0.0, 9.9, -9.9, -1.0, 10.0, -10.0], pa.float64(), kinds.DOUBLE)
    assert got == pytest.approx([7.77777, 7.77777, -7.77777, -7.77777, 77.7777, -77.7777], abs=1e-6)
    got = mask(
        ["Xx7"], [float(2**63 - 1), float(-(2**63)), 2.2250738585072014e-308], pa.float64(), kinds.DOUBLE
    )
    assert got == pytest.approx([7.77777e18, -7.77777e18, 7.77777e-308], rel=1e-12)
    assert mask(["Xx7"], [1.7976931348623157e308], pa.float64(), kinds.DOUBLE) == pytest.approx([7.77777e307])
    assert mask(["Xx1"], [-2.2250738585072014e-308], pa.float64(), kinds.DOUBLE) == pytest.approx(
        [-1.11111e-308]
    )
    assert mask([], [-1.7976931348623157e308], pa.float64(), kinds.DOUBLE) == pytest.approx([-9.99999e307])


def test_timestamps():
    def run(params, value):
        array = pa.array([dt.datetime.fromisoformat(value)], pa.timestamp("ns"))
        return str(RedactMask.parse(params).mask(array, kinds.TIMESTAMP)[0].as_py())

    assert run([], "2011-10-02 18:48:05.123456") == "2011-01-01 00:00:00"
    assert run([], "2012-02-28 01:23:45") == "2012-01-01 00:00:00"
    ts = "2017-05-18 01:23:45"
    assert run([], ts) == "2017-01-01 00:00:00"
    assert run(["", "2000 _ _ 15 0 _"], ts) == "2000-05-18 15:00:45"
    assert run(["", "2007 _ _ _ _ _"], ts) == "2007-05-18 01:23:45"
    assert run(["", "_ 7 _ _ _ _"], ts) == "2017-07-18 01:23:45"
    assert run(["", "_ _ 7 _ _ _"], ts) == "2017-05-07 01:23:45"
    assert run(["", "_ _ _ 7 _ _"], ts) == "2017-05-18 07:23:45"
    assert run(["", "_ _ _ _ 7 _"], ts) == "2017-05-18 01:07:45"
    assert run(["", "_ _ _ _ _ 7"], ts) == "2017-05-18 01:23:07"


def test_dates():
    date = [dt.date(1965, 3, 12)]
    assert mask([], date, pa.date32(), kinds.DATE) == [dt.date(1965, 1, 1)]
    assert mask(["", "2000 _ _"], date, pa.date32(), kinds.DATE) == [dt.date(2000, 3, 12)]
    assert mask(["", "_ 7 _"], date, pa.date32(), kinds.DATE) == [dt.date(1965, 7, 12)]
    assert mask(["", "_ _ 7"], date, pa.date32(), kinds.DATE) == [dt.date(1965, 3, 7)]
    assert mask(["", "_ _ 7"], [dt.date(2017, 9, 20)], pa.date32(), kinds.DATE) == [dt.date(2017, 9, 7)]


def test_decimals():
    def run(params, text, scale):
        return mask(params, [Decimal(text)], pa.decimal128(38, scale), kinds.DECIMAL)[0]

    assert run(["Xx7"], "123.456", 3) == Decimal("777.777")
    # the text has no leading zeros and no trailing fractional zeros
    assert run(["Xx7"], "0123456789123456789.01230", 5) == Decimal("777777777777777777.7777")
    assert run(["Xx7", "", "0:3"], "123456.789", 3) == Decimal("123477.777")
    assert run(["Xx7", "", "-3:-1, 0:3"], "123456789.987654", 6) == Decimal("123477777.777654")


def test_replacement_groups():
    params = ["1234567890"]
    chars = ["X", "x", "0", "$", ".", " ", "ה", "ी", "ↂ", "\u06dd"]
    assert mask(params, chars, pa.string(), kinds.STRING) == list("1234567890")
    assert mask([], [" "], pa.string(), kinds.STRING) == [" "]  # separators are kept by default


def test_strings():
    values = ["Mary had 1 little lamb!!", "\U0002070e"]
    assert mask([], values, pa.string(), kinds.STRING) == ["Xxxx xxx 9 xxxxxx xxxx..", "ª"]
    # 4-byte replacements: the output is longer than the input
    params = ["\U000267cc\U00028cca"]
    expected = "\U00028cca" * 4 + " " + "\U00028cca" * 8 + "."
    assert mask(params, ["text overflow."] * 1024, pa.string(), kinds.STRING) == [expected] * 1024


def test_string_unmask_ranges():
    values = ["Mary had 1 little lamb!!", "\U0002070e"]
    assert mask(["", "", "0:3, -5:-1"], values, pa.string(), kinds.STRING) == [
        "Mary xxx 9 xxxxxx xamb!!",
        values[1],
    ]
    assert mask(["", "", "-1:-5"], values, pa.string(), kinds.STRING) == ["Xxxx xxx 9 xxxxxx xxxx..", "ª"]
    # negative indexes count from the byte length: "é" is 2 bytes, so -1 is past the last character
    assert mask(["", "", "-1:-1"], ["abé"], pa.string(), kinds.STRING) == ["xxx"]
    assert mask(["", "", "-2:-2"], ["abé"], pa.string(), kinds.STRING) == ["xxé"]


def test_long_unmask_ranges():
    assert mask(["9", "", "0:2"], [123456, -123456], pa.int64(), kinds.LONG) == [123_999, -129_999]
    assert mask(["9", "", "-3:-1"], [123456, -123456], pa.int64(), kinds.LONG) == [999_456, -999_456]
    assert mask(["9", "", "7:10"], [123456], pa.int64(), kinds.LONG) == [999999]
    # a masked value past Long.MAX_VALUE gives 111111111111111111 x digit
    assert mask(["9", "", "7:10"], [1_234_567_890_123_456_789], pa.int64(), kinds.LONG) == [
        999_999_999_999_999_999
    ]
    assert mask(["9", "", ""], [123456], pa.int64(), kinds.LONG) == [999999]
    assert mask(["Xx7", "", "0:3,-4:-1"], [4716885592186382], pa.int64(), kinds.LONG) == [4716_77777777_6382]


def test_double_unmask_ranges():
    assert mask(["Xx7", "", "0:2"], [1234.99, 12345.9], pa.float64(), kinds.DOUBLE) == [1237.77, 12377.7]
    assert mask(["Xx7", "", "-3:-1"], [1234.9], pa.float64(), kinds.DOUBLE) == [7774.9]
    # Java masks the exponent's digits too: 1.5E-5 -> 1.1E-1
    assert mask(["Xx1", "", "0:0"], [1e22, 1.5e-5], pa.float64(), kinds.DOUBLE) == [1.1e11, 1.1e-1]


# --------------------------------------------------------------------------- more Java behaviour


def test_narrow_integers_wrap():
    # BYTE keeps the low 8 bits (Java ANDs with 0xff), SHORT 16; INT is not cut by Java and a reader
    # sees the low 32 bits of 9999999999.
    assert mask([], [127, -128, 5, -5, None], pa.int8(), kinds.BYTE) == [-25, 25, 9, -9, None]
    assert mask([], [12345, -300, None], pa.int16(), kinds.SHORT) == [-31073, -999, None]
    assert mask([], [2_000_000_000, -5, 2**31 - 1], pa.int32(), kinds.INT) == [
        1_410_065_407,
        -9,
        1_410_065_407,
    ]


def test_double_edge_cases():
    got = RedactMask.parse([]).mask(
        pa.array([0.0, -0.0, math.nan, math.inf, -math.inf, 5e-324, 1e-308, 123.0]), kinds.DOUBLE
    )
    # NaN fails every comparison in Java, so it takes the negative branch and sorts past the table
    assert got.to_pylist() == [
        9.99999,
        9.99999,
        -9.99999e307,
        9.99999e307,
        -9.99999e307,
        9.99999e-308,
        9.99999e-308,
        999.999,
    ]
    assert mask(["Xx0"], [math.nan, -3.0], pa.float64(), kinds.DOUBLE) == [0.0, 0.0]
    floats = RedactMask.parse([]).mask(pa.array([1.5, 3e38], pa.float32()), kinds.FLOAT)
    assert floats.type == pa.float32()
    assert floats.to_pylist() == [np.float32(9.99999).item(), math.inf]  # 9.99999e38 overflows float32


def test_booleans_and_binary():
    assert mask([], [True, False, None], pa.bool_(), kinds.BOOLEAN) == [True, True, None]
    assert mask(["Xx0"], [True, False, None], pa.bool_(), kinds.BOOLEAN) == [False, False, None]
    assert mask([], [b"a", None], pa.binary(), kinds.BINARY) == [None, None]


def test_underscore_digit_leaves_numbers_alone():
    keep = ["Xx_"]
    assert mask(keep, [123, None], pa.int64(), kinds.LONG) == [123, None]
    assert mask(keep, [1.25], pa.float64(), kinds.DOUBLE) == [1.25]
    assert mask(keep, [True, False], pa.bool_(), kinds.BOOLEAN) == [True, False]
    assert mask(keep, [Decimal("1.50")], pa.decimal128(5, 2), kinds.DECIMAL) == [Decimal("1.50")]
    assert mask(keep, ["a1"], pa.string(), kinds.STRING) == ["x1"]


def test_non_ascii_digit_replacements():
    # the numeric value drives numbers; Long.parseLong reads any BMP digit, Double.parseDouble only ASCII
    assert mask(["Xx\u0667"], [55], pa.int64(), kinds.LONG) == [77]
    assert mask(["Xx\u0667", "", "0:0"], [55], pa.int64(), kinds.LONG) == [57]
    assert mask(["XxX", "", "0:0"], [55, 5], pa.int64(), kinds.LONG) == [999_999_999_999_999_999, 5]
    assert mask(["Xx\u0667", "", "0:0"], [5.5], pa.float64(), kinds.DOUBLE) == [777_777_777_777_777_777.0]
    assert mask(["Xx\u216b"], [5], pa.int64(), kinds.LONG) == [9]  # Roman twelve: not 0-9, so 9
    with pytest.raises(ValueError, match="HiveDecimal"):
        mask(["XxX"], [Decimal("1.5")], pa.decimal128(5, 2), kinds.DECIMAL)


def test_string_groups_follow_java():
    values = [
        "«a»",
        "\u2018b\u2019",
        "\u201cc\u201d",
        "\t\n",
        "\u2028\u2029\u3000",
        "ǅ",
        "ʰ",
        "\u0301",
        "½Ⅻ",
        "\ue000",
    ]
    expected = ["۝x۝", "۝x۝", "۝x۝", "۝۝", "\u2028\u2029\u3000", "ª", "ª", "ः", "²²", "۝"]
    assert mask([], values, pa.string(), kinds.STRING) == expected


def test_kept_u07ff_is_written_as_java_does():
    # Java's UTF-8 writer gives U+07FF 3 bytes and U+FFFF 4 (overlong): kept characters show it
    out = RedactMask.parse(["", "", "0:1"]).mask(pa.array(["\u07ff\uffff"]), kinds.STRING)
    assert _string_bytes(out) == [b"\xe0\x9f\xbf\xf0\x8f\xbf\xbf"]
    with pytest.raises(ValueError, match="U\\+10FFFF"):
        RedactMask.parse(["", "", "0:0"]).mask(pa.array(["\U0010ffff"]), kinds.STRING)


def test_lenient_calendar_fields():
    def run(params, text):
        return mask(["", params], [dt.date.fromisoformat(text)], pa.date32(), kinds.DATE)[0]

    assert run("_ _ 31", "2021-04-10") == dt.date(2021, 5, 1)  # April 31st rolls over
    assert run("_ 2 30", "2024-07-01") == dt.date(2024, 3, 1)
    assert run("_ 0 _", "2024-07-09") == dt.date(2023, 12, 9)  # month 0: December before
    assert run("_ _ 0", "2024-03-09") == dt.date(2024, 2, 29)  # day 0: the last day before
    # before 1582-10-15 the fields are Julian: 1500-06-15 (proleptic) is Julian 1500-06-05
    julian_new_year = RedactMask.parse([]).mask(pa.array([days("1500-06-15")], pa.date32()), kinds.DATE)
    assert julian_new_year.cast(pa.int32()).to_pylist() == [days("1500-01-10")]
    # the 10 days Gregorian skipped are read as Julian dates: 1582-10-10 is 1582-10-20
    assert run("1582 10 10", "2000-01-01") == dt.date(1582, 10, 20)


def test_bc_dates_keep_their_era():
    # 0000-06-01 (astronomical) is 1 BC: a replaced year 2000 makes it 2000 BC, i.e. year -1999
    bc = days_proleptic(0, 6, 1)
    out = RedactMask.parse(["", "2000 _ _"]).mask(pa.array([bc], pa.date32()), kinds.DATE)
    assert out.cast(pa.int32()).to_pylist() == [julian_days(-1999, 6, 3)]


def days_proleptic(year: int, month: int, day: int) -> int:
    # days from 1970-01-01 of a proleptic Gregorian date with an astronomical year
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month - 3 if month > 2 else month + 9) + 2) // 5 + day - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


def julian_days(year: int, month: int, day: int) -> int:
    y = year - (month <= 2)
    doy = (153 * (month - 3 if month > 2 else month + 9) + 2) // 5 + day - 1
    return (y // 4) * 1461 + (y % 4) * 365 + doy - 719470


def test_timestamp_fraction_dropped_and_range_checked():
    # only the hour is masked, yet the fraction of a second goes (Java writes nanos 0)
    ts = pa.array([dt.datetime(2020, 5, 6, 7, 8, 9, 123456), None], pa.timestamp("us", tz="UTC"))
    out = RedactMask.parse(["", "_ _ _ 23 _ _"]).mask(ts, kinds.TIMESTAMP_INSTANT)
    assert out.type == ts.type
    assert out.to_pylist() == [dt.datetime(2020, 5, 6, 23, 8, 9, tzinfo=dt.UTC), None]
    with pytest.raises(ValueError, match="does not fit"):
        RedactMask.parse(["", "1000"]).mask(
            pa.array([dt.datetime(2000, 1, 1)], pa.timestamp("ns")), kinds.TIMESTAMP
        )
    # all fields kept: the values are returned as they are
    assert RedactMask.parse(["", "_ _ _ _ _ _"]).mask(ts, kinds.TIMESTAMP_INSTANT) is ts


def test_decimal_past_precision_and_128_bits():
    # 0.5 prints "0.5" and becomes 9.9: past decimal(2, 2)'s precision, stored as Java stores it
    out = RedactMask.parse([]).mask(pa.array([Decimal("0.50")], pa.decimal128(2, 2)), kinds.DECIMAL)
    assert _unscaled(out) == [990]
    # 39 digits round half up to 38 (HiveDecimal): 9.99..9 is 10, and 10 x 10**38 wraps in 128 bits
    value = Decimal("0." + "1234567890" * 3 + "12345678")
    out = RedactMask.parse([]).mask(pa.array([value, Decimal("0.1")], pa.decimal128(38, 38)), kinds.DECIMAL)
    assert _unscaled(out) == [_signed128(10 * 10**38), _signed128(99 * 10**37)]
    out = RedactMask.parse(["Xx7"]).mask(pa.array([value], pa.decimal128(38, 38)), kinds.DECIMAL)
    assert _unscaled(out) == [_signed128(int("7" * 37 + "8") * 10)]


def _signed128(value: int) -> int:
    value %= 2**128
    return value - 2**128 if value >= 2**127 else value


def _unscaled(array: pa.Array) -> list[int]:
    words = np.frombuffer(array.buffers()[1], dtype=np.uint64)[
        2 * array.offset : 2 * (array.offset + len(array))
    ]
    return [_signed128(int(hi) << 64 | int(lo)) for lo, hi in words.reshape(-1, 2).tolist()]


def _string_bytes(array: pa.Array) -> list[bytes | None]:
    """The raw values (a masked string may be invalid UTF-8, as Java writes it)."""
    return array.cast(pa.binary()).to_pylist() if array.type != pa.binary() else array.to_pylist()


def test_java_double_to_string_layout():
    # Java's layout with the shortest digits. Known difference: Java 17 is not always shortest
    # (it prints 1e23 as 9.999999999999999E22 and 8.939817659706545e17 as 8.9398176597065446E17).
    cases = {
        1e23: "1.0E23",
        2e-3: "0.002",
        5e-324: "5.0E-324",  # Java: 4.9E-324
        1.0: "1.0",
        1e7: "1.0E7",
        9.999e-4: "9.999E-4",
        8.939817659706545e17: "8.939817659706545E17",
        -0.0: "-0.0",
        math.nan: "NaN",
        -math.inf: "-Infinity",
        123456.789: "123456.789",
        0.1: "0.1",
    }
    assert {value: _java_double_to_string(value) for value in cases} == cases


# --------------------------------------------------------------------------- shape and types


def test_nulls_slices_and_types_are_kept():
    values = pa.array([None, "Ab", "c", None, "dé"])
    out = RedactMask.parse([]).mask(values.slice(1, 3), kinds.STRING)
    assert out.type == pa.string() and out.to_pylist() == ["Xx", "x", None]
    large = RedactMask.parse([]).mask(values.cast(pa.large_string()), kinds.VARCHAR)
    assert large.type == pa.large_string() and large.to_pylist() == [None, "Xx", "x", None, "xx"]
    ints = pa.array([1, None, 22, 333], pa.int32()).slice(1)
    assert RedactMask.parse([]).mask(ints, kinds.INT).to_pylist() == [None, 99, 999]
    decimals = pa.array([Decimal("1.2"), None, Decimal("-0.05")], pa.decimal128(10, 3)).slice(1)
    assert RedactMask.parse([]).mask(decimals, kinds.DECIMAL).to_pylist() == [None, Decimal("-9.990")]
    assert RedactMask.parse([]).mask(pa.array([], pa.string()), kinds.CHAR).to_pylist() == []


@pytest.mark.parametrize("kind", [kinds.LIST, kinds.MAP, kinds.STRUCT, kinds.UNION])
def test_compound_kinds_are_refused(kind):
    with pytest.raises(ValueError, match="compound"):
        RedactMask.parse([]).mask(pa.array([1]), kind)


def test_wrong_arrow_type_is_refused():
    with pytest.raises(TypeError):
        RedactMask.parse([]).mask(pa.array(["a"]), kinds.LONG)
    with pytest.raises(TypeError):
        RedactMask.parse([]).mask(pa.chunked_array([[1]]), kinds.LONG)


# --------------------------------------------------------------------------- parameters


def test_parse_defaults_and_partial_parameters():
    default = RedactMask.parse([])
    assert default == RedactMask.parse([""]) == RedactMask.parse(["", " ", ""])
    assert default.replacements == tuple(map(ord, "Xx9$._\u00aa\u0903\u00b2\u06dd"))
    assert default.time_fields == (-1, 1, 1, 0, 0, 0)
    partial = RedactMask.parse(["AB", "2000 _", "1:2, -3:-1,1:5"])
    assert partial.replacements[:3] == (ord("A"), ord("B"), ord("9"))
    assert partial.time_fields == (2000, -1, 1, 0, 0, 0)
    assert dict(partial.unmask_ranges) == {1: 5, -3: -1}  # a repeated start: the last one wins
    # any non-word characters separate time fields; `_anything` keeps a field
    assert RedactMask.parse(["", "2000/_x,12;0"]).time_fields == (2000, -1, 12, 0, 0, 0)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (["", "4001"], r"time parameter 0 \(year\) '4001'.*0\.\.4000"),
        (["", "_ 13"], r"\(month\) '13'"),
        (["", "_ _ 32"], r"\(day\) '32'"),
        (["", "_ _ _ 24"], r"\(hour\) '24'"),
        (["", "_ _ _ _ 60"], r"\(minute\) '60'"),
        (["", "_ _ _ _ _ 60"], r"\(second\) '60'"),
        (["", "20x0"], r"'20x0'.*not a number"),
        (["", " 2000"], r"empty field"),
        (["", "99999999999"], r"'99999999999'"),
        (["", "", "1-3"], r"unmask range '1-3'"),
        (["", "", "1:"], r"unmask range '1:'"),
        (["", "", "a:b"], r"unmask range 'a:b'"),
        (["", "", "0:1,,2:3"], r"unmask range ''"),
        (["", "", "0 : 1"], r"unmask range '0 : 1'"),
    ],
)
def test_parse_errors_name_the_parameter(params, message):
    with pytest.raises(ValueError, match=message):
        RedactMask.parse(params)


# --------------------------------------------------------------------------- references


def reference_string(mask_: RedactMask, text: str) -> bytes:
    """RedactMaskFactory.maskString, one code point at a time."""
    groups = {"Lu": 0, "Ll": 1, "Nd": 2, "Sm": 3, "Sc": 3, "Sk": 3, "So": 3, "Pd": 4, "Ps": 4, "Pe": 4}
    groups |= {"Pc": 4, "Po": 4, "Zs": 5, "Zl": 5, "Zp": 5, "Lt": 6, "Lm": 6, "Lo": 6, "Mn": 7, "Me": 7}
    groups |= {"Mc": 7, "Nl": 8, "No": 8}
    byte_length = len(text.encode("utf-8"))
    out = bytearray()
    for index, char in enumerate(text):
        replacement = mask_.replacements[groups.get(unicodedata.category(char), 9)]
        kept = any(
            (s if s >= 0 else byte_length + s) <= index <= (e if e >= 0 else byte_length + e)
            for s, e in mask_.unmask_ranges
        )
        cp = ord(char) if replacement == ord("_") or kept else replacement
        if cp < 0x80:
            out.append(cp)
        elif cp < 0x7FF:
            out += bytes([0xC0 | cp >> 6, 0x80 | cp & 0x3F])
        elif cp < 0xFFFF:
            out += bytes([0xE0 | cp >> 12, 0x80 | (cp >> 6) & 0x3F, 0x80 | cp & 0x3F])
        else:
            out += bytes(
                [0xF0 | cp >> 18, 0x80 | (cp >> 12) & 0x3F, 0x80 | (cp >> 6) & 0x3F, 0x80 | cp & 0x3F]
            )
    return bytes(out)


def reference_long(digit: int, value: int) -> int:
    """RedactMaskFactory.maskLong without unmask ranges."""
    if digit == 0:
        return 0
    magnitude = min(abs(value), 2**63 - 1)
    count = len(str(magnitude))
    if count == 19 and digit == 9:
        count = 18
    return int(str(digit) * count) * (-1 if value < 0 else 1)


_text = st.text(st.characters(exclude_categories=("Cs",), max_codepoint=0x10FFFE), max_size=30)
_replacements = st.text(st.characters(exclude_categories=("Cs",), max_codepoint=0x10FFFE), max_size=10)
_ranges = st.lists(st.tuples(st.integers(-12, 12), st.integers(-12, 12)), max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), _text), max_size=40), _replacements, _ranges)
def test_strings_match_the_reference(values, replacements, ranges):
    params = [replacements, "", ",".join(f"{s}:{e}" for s, e in ranges)]
    mask_ = RedactMask.parse(params)
    out = mask_.mask(pa.array(values, pa.string()), kinds.STRING)
    assert _string_bytes(out) == [None if v is None else reference_string(mask_, v) for v in values]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=40), st.integers(0, 9))
def test_longs_match_the_reference(values, digit):
    assert mask([f"Xx{digit}"], values, pa.int64(), kinds.LONG) == [reference_long(digit, v) for v in values]


def test_large_ascii_input_uses_the_same_answers():
    # the byte-table path (ASCII, one-byte replacements) and the code point path agree
    values = [f"Row {i}: Name-{i * 7919 % 1000}, ok?" for i in range(70_000)]
    fast = RedactMask.parse([]).mask(pa.array(values), kinds.STRING).to_pylist()
    slow = RedactMask.parse(["", "", "100:100"]).mask(pa.array(values), kinds.STRING).to_pylist()
    assert fast == slow
    assert fast[7] == "Xxx 9. Xxxx.999. xx."
    # with nulls and a slice (the translate path keeps the offsets, validity and offset)
    with_nulls = pa.array([None if i % 3 == 0 else v for i, v in enumerate(values)]).slice(5, 1000)
    fast = RedactMask.parse([]).mask(with_nulls, kinds.STRING).to_pylist()
    slow = RedactMask.parse(["", "", "100:100"]).mask(with_nulls, kinds.STRING).to_pylist()
    assert fast == slow and fast[1] is None and fast[0].startswith("Xxx 9. Xxxx.")


# --------------------------------------------------------------------------- against ORC Java


def _quote(param: str) -> str:
    """ParserUtils.parseName: anything but letters, digits and _ needs backquotes (`` for `)."""
    return "`" + param.replace("`", "``") + "`"


# params, as stored in the file (unquoted)
SPARK_MASKS = [
    [],
    ["Xx7"],
    ["Xx0", "2000 2 30 13 45 _"],
    ["Xx5", "_ _ _ _ _ _", "0:1,-2:-1"],
    ["Xx_"],
    ["xX9", "_ 0 0 _ _ 7"],
]


def _spark_columns() -> list[tuple[str, str, int, list]]:
    """(name, Spark type, ORC kind, values): many values per type, Spark-writable."""
    D = Decimal
    ts = dt.datetime
    return [
        ("b", "boolean", kinds.BOOLEAN, [True, False, None]),
        ("i8", "tinyint", kinds.BYTE, [-128, -100, -10, -1, 0, 1, 9, 10, 99, 100, 127, None]),
        ("i16", "smallint", kinds.SHORT, [-32768, -10000, -999, -1, 0, 7, 12345, 32767, None]),
        ("i32", "int", kinds.INT, [-(2**31), -1_000_000_000, -5, 0, 42, 1_999_999_999, 2**31 - 1, None]),
        (
            "i64",
            "bigint",
            kinds.LONG,
            [-(2**63), -(2**63) + 1, -(10**18), -1, 0, 10**18 - 1, 10**18, 2**63 - 1, None],
        ),
        (
            "f32",
            "float",
            kinds.FLOAT,
            [0.0, -0.0, 1.5, -2.25, 3.4e38, 1e-45, 1e-40, math.nan, math.inf, -math.inf, None],
        ),
        (
            "f64",
            "double",
            kinds.DOUBLE,
            [
                # Not 5e-324, 1e23 or 8.939817659706545e17: Java 17's Double.toString is not the
                # shortest for them, so masks with unmask ranges differ (see _java_double_to_string).
                0.0,
                -0.0,
                123.456,
                -0.001,
                4e-320,
                1e-308,
                2.2250738585072014e-308,
                1.7976931348623157e308,
                1e22,
                8.9398176597e17,
                math.nan,
                math.inf,
                -math.inf,
                1e7,
                9.999e-4,
                None,
            ],
        ),
        (
            "dec",
            "decimal(38,10)",
            kinds.DECIMAL,
            [D("12.3400"), D("-0.5"), D("0"), D("1234567890.0000000001"), None],
        ),
        (
            "dec20",
            "decimal(20,2)",
            kinds.DECIMAL,
            [D("0.55"), D("-100.00"), D("123456789012345678.90"), None],
        ),
        (
            "dec38",
            "decimal(38,38)",
            kinds.DECIMAL,
            [D("0.1"), D("0." + "1234567890" * 3 + "12345678"), D("-0.00001")],
        ),
        (
            "day",
            "date",
            kinds.DATE,
            [
                dt.date(1970, 1, 1),
                dt.date(1969, 12, 31),
                dt.date(2000, 2, 29),
                dt.date(2024, 2, 29),
                dt.date(1900, 3, 1),
                dt.date(1582, 10, 15),
                dt.date(1582, 10, 4),
                dt.date(1500, 6, 15),
                dt.date(1, 1, 1),
                dt.date(9999, 12, 31),
                None,
            ],
        ),
        (
            "ts",
            "timestamp",
            kinds.TIMESTAMP,
            # not in the last second before 1970 with a fraction: ORC C++ (pyarrow) reads Java's
            # 1969-12-31 23:59:59.5 as 1970-01-01 00:00:00.5 (a reader mismatch, not the mask's)
            [
                ts(1700, 3, 1, 12),
                ts(1900, 1, 1),
                ts(1969, 12, 31, 23, 59, 58, 500000),
                ts(2000, 2, 29, 12, 34, 56, 789000),
                ts(2024, 2, 29, 23, 59, 59),
                ts(2262, 1, 1),
                ts(1970, 1, 1),
                None,
            ],
        ),
        ("ntz", "timestamp_ntz", kinds.LONG, [ts(2011, 10, 2, 18, 48, 5, 123456), ts(1999, 1, 1), None]),
        ("bin", "binary", kinds.BINARY, [b"ab", b"", None]),
    ]


def test_orc_java_through_spark_writes_the_same_masked_values(spark, kms_server, tmp_path):
    """Spark (ORC Java 2.3) encrypts and masks every type it can redact, each under several
    parameter sets; pyarrow without keys reads ORC Java's masked copy, and an unencrypted copy of
    the same column in the same file gives the plaintext exactly as Java's mask saw it (Spark
    hands ORC dates and timestamps before 1582 rebased to the Julian calendar)."""
    # the JVM of the test session: ORC Java masks timestamps in its default time zone
    jvm_zone = spark._jvm.java.util.TimeZone.getDefault().getID()
    assert jvm_zone in ("UTC", "Etc/UTC", "GMT"), f"ORC Java masks timestamps in {jvm_zone}, not UTC"
    columns = _spark_columns()
    rows = max(len(values) for _, _, _, values in columns)
    data, schema, masks = {}, [], {}
    for name, spark_type, _, values in columns:
        cycled = [values[i % len(values)] for i in range(rows)]
        names = [name] + [f"{name}_m{i}" for i in range(len(SPARK_MASKS))]
        for column in names:
            data[column] = cycled
            schema.append(f"{column} {spark_type}")
        for i in range(len(SPARK_MASKS)):
            masks.setdefault(i, []).append(f"{name}_m{i}")
    frame = spark.createDataFrame(list(zip(*data.values(), strict=True)), ", ".join(schema))
    encrypted = [c for i in masks for c in masks[i]]
    mask_option = ";".join(
        ",".join(["redact", *map(_quote, SPARK_MASKS[i])]) + ":" + ",".join(cols) for i, cols in masks.items()
    )
    out = tmp_path / "masked"
    frame.coalesce(1).write.option("orc.encrypt", "pii:" + ",".join(encrypted)).option(
        "orc.mask", mask_option
    ).orc(str(out))
    (path,) = out.glob("*.orc")
    table = orc.ORCFile(str(path)).read()  # no keys: encrypted columns read as ORC Java masked them
    checked = 0
    for name, _, kind, _ in columns:
        plain = table[name].combine_chunks()
        for i, params in enumerate(SPARK_MASKS):
            expected = RedactMask.parse(params).mask(plain, kind)
            _assert_same(expected, table[f"{name}_m{i}"].combine_chunks(), f"{name} redact {params}")
            checked += 1
    assert checked == len(columns) * len(SPARK_MASKS)


def _assert_same(expected: pa.Array, got: pa.Array, what: str) -> None:
    assert expected.type == got.type, what
    assert expected.is_null().to_pylist() == got.is_null().to_pylist(), what
    if pa.types.is_floating(got.type):
        width = np.int64 if got.type == pa.float64() else np.int32
        valid = ~np.asarray(got.is_null().to_pylist(), dtype=bool)
        e = expected.fill_null(0).to_numpy().view(width)[valid]
        g = got.fill_null(0).to_numpy().view(width)[valid]
        assert e.tolist() == g.tolist(), what  # bit for bit (NaN and -0.0 included)
    elif pa.types.is_decimal(got.type):
        assert _unscaled(expected.fill_null(0)) == _unscaled(got.fill_null(0)), what
    elif pa.types.is_string(got.type):
        assert _string_bytes(expected) == _string_bytes(got), what
    elif pa.types.is_temporal(got.type):  # as numbers: year 0 and before have no Python date
        width = pa.int32() if pa.types.is_date32(got.type) else pa.int64()
        assert expected.cast(width).to_pylist() == got.cast(width).to_pylist(), what
    else:
        assert expected.to_pylist() == got.to_pylist(), what


JVM_STRINGS = [
    "Mary had 1 little lamb!!",
    "Zoë O'Brien-Smith, né à Genève",
    "東京都 渋谷区 1-2-3",
    "emoji 😀👍🏽 and flags 🇨🇭",
    "quotes «fr» “en” ‘single’ „de“ ‹x›",
    "symbols $€£¥ ±×÷ ∑√∞ © ® ™ ° ^ ` ~ |",
    "punct .,;:!? ()[]{} -–— _ / \\ @ # % & *",
    "spaces\u00a0\u2003\u3000\u2028\u2029 end",
    "controls \t\n\r\x00\x1f\x7f",
    "marks e\u0301 a\u0308 क्षि",
    "numbers ½ ¼ Ⅻ ² ³ ١٢٣ ४५ ０１",
    "titlecase ǅ ǈ modifier ʰ ˇ",
    "private \ue000 \U000f0000 noncharacter \ufdd0",
    "edges \u07fe\u07ff\u0800 \ufffe\uffff \U00010000 \U0010fffe",
    "",
    " ",
    None,
    "A",
    "ΑΒΓ αβγ Привет мир",
    "عربي עברית हिन्दी ไทย 한국어",
]
JVM_MASKS = [
    [],
    ["1234567890"],
    ["\U000267cc\U00028cca"],
    ["__________"],
    ["", "", "0:3, -5:-1"],
    ["Yy8#;S\u00ba\u093f\u00b3?", "", "2:4,-8:-6,30:100"],
    ["\u07ff\uffff"],  # replacements Java writes as overlong UTF-8
]


def test_orc_java_mask_code_called_in_the_jvm(spark, tmp_path):
    """ORC Java 2.3's writer throws on redacted strings (NullPointerException) and small decimals
    (ClassCastException, Decimal64ColumnVector); here its mask code runs on vectors ORC Java reads,
    and ORC Java writes the result, for strings, decimal(p <= 18) and TIMESTAMP_INSTANT."""
    jvm = spark._jvm
    gateway = spark.sparkContext._gateway
    instants = [
        dt.datetime(2020, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC),
        dt.datetime(1970, 1, 1, tzinfo=dt.UTC),
    ]
    instants += [dt.datetime(1969, 12, 31, 23, 59, 58, 999999, tzinfo=dt.UTC), None]
    decimals = [Decimal("0"), Decimal("-0.05"), Decimal("1234.500"), Decimal("9999999.999"), None]
    n = len(JVM_STRINGS)
    plain = pa.table(
        {
            "s": pa.array(JVM_STRINGS, pa.string()),
            "d10": pa.array([decimals[i % len(decimals)] for i in range(n)], pa.decimal128(10, 3)),
            "d18": pa.array([decimals[i % len(decimals)] for i in range(n)], pa.decimal128(18, 6)),
            "t": pa.array([instants[i % len(instants)] for i in range(n)], pa.timestamp("ns", tz="UTC")),
        }
    )
    source = tmp_path / "plain.orc"
    orc.write_table(plain, str(source))
    conf = jvm.org.apache.hadoop.conf.Configuration()
    reader = jvm.org.apache.orc.OrcFile.createReader(
        jvm.org.apache.hadoop.fs.Path(str(source)), jvm.org.apache.orc.OrcFile.readerOptions(conf)
    )
    schema = reader.getSchema()
    batch = schema.createRowBatch(n)
    reader.rows().nextBatch(batch)
    assert get_field(batch, "size") == n
    kinds_by_column = [kinds.STRING, kinds.DECIMAL, kinds.DECIMAL, kinds.TIMESTAMP_INSTANT]
    for m, params in enumerate(JVM_MASKS):
        java_params = gateway.new_array(jvm.java.lang.String, len(params))
        for i, p in enumerate(params):
            java_params[i] = p
        factory = jvm.org.apache.orc.impl.mask.RedactMaskFactory(java_params)
        masked = schema.createRowBatch(n)
        for c, child in enumerate(schema.getChildren()):
            target = get_field(masked, "cols")[c]
            target.reset()  # ORC Java's writer forgets this for strings: hence its NullPointerException
            factory.build(child, None).maskData(get_field(batch, "cols")[c], target, 0, n)
        set_field(masked, "size", n)
        out = tmp_path / f"masked{m}.orc"
        writer = jvm.org.apache.orc.OrcFile.createWriter(
            jvm.org.apache.hadoop.fs.Path(str(out)),
            jvm.org.apache.orc.OrcFile.writerOptions(conf).setSchema(schema),
        )
        writer.addRowBatch(masked)
        writer.close()
        java = orc.ORCFile(str(out)).read()
        for c, name in enumerate(plain.column_names):
            expected = RedactMask.parse(params).mask(plain[name].combine_chunks(), kinds_by_column[c])
            _assert_same(expected, java[name].combine_chunks(), f"{name} redact {params}")


@pytest.mark.parametrize(
    ("spark_type", "value", "error"),
    [("string", "'a'", "NullPointerException"), ("decimal(10,2)", "1.5", "ClassCastException")],
)
def test_orc_java_writer_cannot_redact_strings_or_small_decimals(
    spark, kms_server, tmp_path, spark_type, value, error
):
    """Documents ORC Java 2.3's bugs: when this starts failing, ORC Java writes these and the
    Spark differential test should cover them."""
    frame = spark.sql(f"SELECT CAST({value} AS {spark_type}) AS c")
    with pytest.raises(Exception, match=error):
        frame.write.option("orc.encrypt", "pii:c").option("orc.mask", "redact:c").orc(str(tmp_path / "out"))
