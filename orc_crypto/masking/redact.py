"""ORC's `redact` data mask on Arrow arrays, value for value as ORC Java's RedactMaskFactory writes it.

Reference: ORC Java 2.3 (the version in Spark 4.x) on Java 17, JVM time zone UTC. Behaviour was
read from the Java source and checked against it (the tests compare with ORC Java through Spark
and by calling the Java mask directly).

Exact, including these Java quirks:
- strings: each code point becomes its Unicode category group's replacement; Pi/Pf quotes (e.g.
  U+00AB, U+2018) fall into "other"; negative unmask indexes count from the value's UTF-8 *byte*
  length, not its code point count. Java's UTF-8 writer gives U+07FF three bytes and U+FFFF four
  (overlong, invalid UTF-8): that only shows when such a code point is kept (a `_` replacement or
  an unmask range) and is reproduced byte for byte. A kept U+10FFFF makes Java throw; so does this.
- integers: the digit count and sign are kept (Long.MIN_VALUE as Long.MAX_VALUE, 19 nines
  shortened to 18); BYTE and SHORT keep the low 8/16 bits, so they wrap; INT and LONG are not
  cut (an INT like 2000000000 becomes 9999999999, which a reader sees wrapped to 32 bits, as
  here). With unmask ranges Java goes through Long.toString/Long.parseLong and an overflowing
  result becomes 111111111111111111 x digit.
- doubles: `digit x (+-1.11111) x 10^k` from Java's table of 1e-308..1e307 by binary search, so
  denormals use 1e-308, NaN gives the negative 1e307 case, +-inf the 1e307 case; FLOAT is
  computed in double and rounded to float32. With unmask ranges Java masks the text of
  Double.toString; that text is reproduced from the shortest digits that read back as the value,
  which is what Java 17 prints except for rare values (see `_java_double_to_string`).
- decimals: the digits of HiveDecimal's text (no trailing fractional zeros, "0" for zero, a
  leading "0." for |v| < 1) are replaced, that "0" too; a result of more than 38 significant
  digits is rounded half-up to 38 as HiveDecimal does (0.<38 digits> masked with 9 becomes 10); the result is stored at the column's scale without a precision check, and
  a result past 128 bits wraps as pyarrow's ORC reader wraps it.
- booleans: false when the digit is 0, else true. A `_` digit leaves booleans, numbers and
  decimals unchanged.
- dates and timestamps: java.util.GregorianCalendar fields in UTC (Julian before 1582-10-15,
  lenient: day 0 is the last day of the previous month, month 0 is December of the year before;
  a replaced year keeps the original era, so BC dates stay BC); timestamps lose their fraction
  of a second. TIMESTAMP is wall-clock and TIMESTAMP_INSTANT UTC: both are what Java computes
  when the JVM's default time zone is UTC (ORC Java uses the default zone for timestamps).
- binary: every value becomes null.

Differences:
- Unicode version: categories come from Python's `unicodedata` (Unicode 14 in Python 3.11)
  while Java 17 uses Unicode 13; the 838 code points assigned in Unicode 14 are "other" to Java
  17 but get their new category here. U+1734 changed Mn -> Mc, the same group. The numeric
  value of a digit replacement differs for a few exotic characters (e.g. the Unicode 14 Tangsa
  digits and three fraction signs Java reads as 0).
- ORC Java 2.3 itself cannot write some redacted columns: STRING/CHAR/VARCHAR throw a
  NullPointerException (its scratch vector has no buffer) and DECIMAL with precision <= 18 a
  ClassCastException (Decimal64ColumnVector). This module computes what the mask code does on
  ordinary vectors for those types; a decimal digit replacement other than 0-9 (Java's decimal
  parse fails) raises ValueError.
- timestamps whose masked value does not fit the array's unit (e.g. year 1000 in
  timestamp[ns]) raise ValueError, as pyarrow refuses to read such a value.
- CHAR: Java masks the value before its writer pads it to the declared length; pass unpadded
  values to match when the separator replacement is not `_`.

How: everything is numpy over the Arrow buffers. Strings are decoded from UTF-8 to code points,
looked up in a code point -> group table (filled lazily from `unicodedata`), replaced, and encoded
back with Java's byte lengths; ASCII slices whose replacements are single bytes are a byte table
lookup. (Per-category regex passes were not used: one table gives every code path the same Unicode
data, has no ordering problem when one group's replacement belongs to another group, and handles
unmask ranges.) Two rare parameterisations go value by value in Python, as Java goes through text:
doubles with unmask ranges (Java's Double.toString text) and decimals with unmask ranges or a digit
replacement other than 0-9.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from watershed.orc_crypto.codec import kinds

__all__ = ["RedactMask"]

UNMASKED = ord("_")  # a replacement that keeps the original character / time field
KEEP_FIELD = -1

#: Parameter 0 order: uppercase, lowercase, digit, symbol, punctuation, separator, other letter,
#: mark, other number, other.
UPPER, LOWER, DIGIT, SYMBOL, PUNCTUATION, SEPARATOR, OTHER_LETTER, MARK, OTHER_NUMBER, OTHER = range(10)
DEFAULT_REPLACEMENTS = tuple(ord(c) for c in "Xx9$._\u00aa\u0903\u00b2\u06dd")
DEFAULT_DIGIT = 9

_GROUP_OF_CATEGORY = {
    "Lu": UPPER,
    "Ll": LOWER,
    "Nd": DIGIT,
    **dict.fromkeys(("Sm", "Sc", "Sk", "So"), SYMBOL),
    # Pi and Pf (initial/final quotes) are missing on purpose: Java puts them in "other".
    **dict.fromkeys(("Pd", "Ps", "Pe", "Pc", "Po"), PUNCTUATION),
    **dict.fromkeys(("Zs", "Zl", "Zp"), SEPARATOR),
    **dict.fromkeys(("Lt", "Lm", "Lo"), OTHER_LETTER),
    **dict.fromkeys(("Mn", "Me", "Mc"), MARK),
    **dict.fromkeys(("Nl", "No"), OTHER_NUMBER),
}

#: (name, default, max) of the time fields in parameter 1; -1 keeps the field.
TIME_FIELDS = (("year", KEEP_FIELD, 4000), ("month", 1, 12), ("day", 1, 31))
TIME_FIELDS += (("hour", 0, 23), ("minute", 0, 59), ("second", 0, 59))

OVERFLOW_REPLACEMENT = 111_111_111_111_111_111  # Java's answer when a masked number does not parse
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INT32_MAX = 2**31 - 1
_COMPOUND = (kinds.LIST, kinds.MAP, kinds.STRUCT, kinds.UNION)
_INTEGER_KINDS = {kinds.BYTE: np.int8, kinds.SHORT: np.int16, kinds.INT: np.int32, kinds.LONG: np.int64}
_STRING_KINDS = (kinds.STRING, kinds.VARCHAR, kinds.CHAR)
_TIMESTAMP_KINDS = (kinds.TIMESTAMP, kinds.TIMESTAMP_INSTANT)

_SECONDS_PER_DAY = 86_400
#: 1582-10-15, the first Gregorian day of java.util.GregorianCalendar, in days since 1970-01-01
_GREGORIAN_CUTOVER_DAY = -141_427
_STRING_CHUNK = 1 << 16  # values per slice of string work
_UNITS_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}

# Powers of ten as Java's double literals 1e-308 .. 1e307 (Python parses them the same way).
_DOUBLE_POWERS_OF_10 = np.array([float(f"1e{e}") for e in range(-308, 308)])
_POWERS_OF_10 = np.array([10**e for e in range(19)], dtype=np.int64)
_POW10_HIGH = np.array([10**e >> 64 for e in range(39)], dtype=np.uint64)
_POW10_LOW = np.array([10**e & (2**64 - 1) for e in range(39)], dtype=np.uint64)
_REPUNITS = np.array([(10**n - 1) // 9 for n in range(20)], dtype=np.uint64)  # 0, 1, 11, ... 19 ones


# --------------------------------------------------------------------------- parameters


def _code_points(text: str) -> list[int]:
    return [ord(c) for c in text]


def _is_blank(text: str) -> bool:
    return not text.strip()


def _java_split(text: str, pattern: str) -> list[str]:
    """String.split: like re.split, but trailing empty strings are dropped."""
    parts = re.split(pattern, text)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _java_trim(text: str) -> str:
    """String.trim: strips every character up to U+0020 (controls included)."""
    return text.strip("".join(map(chr, range(33))))


def _java_parse_int(text: str) -> int:
    """Integer.parseInt: an optional sign and decimal digits (any script), within 32 bits."""
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ValueError(f"not an integer: {text!r}")
    value = int(text)
    if not -(2**31) <= value <= _INT32_MAX:
        raise ValueError(f"out of the 32-bit range: {text!r}")
    return value


def _digit_value(code_point: int) -> int:
    """Character.getNumericValue limited to 0..9, else the default 9 (getReplacementDigit)."""
    char = chr(code_point)
    # Java reads numeric values only from the Unicode data (number categories and a few CJK
    # compatibility ideographs); Python also knows the Unihan values of ideographs like 七.
    numeric = unicodedata.category(char).startswith("N") or 0xF900 <= code_point <= 0xFAFF
    numeric = numeric or 0x2F800 <= code_point <= 0x2FA1F
    value = unicodedata.numeric(char, None) if numeric else None
    if value is not None and value == int(value) and 0 <= value <= 9:
        return int(value)
    return DEFAULT_DIGIT


def _parse_time_fields(text: str | None) -> tuple[int, ...]:
    tokens = None if text is None or _is_blank(text) else _java_split(text, r"[^A-Za-z0-9_]+")
    fields = []
    for position, (name, default, maximum) in enumerate(TIME_FIELDS):
        if tokens is None or position >= len(tokens):
            fields.append(default)
            continue
        token = tokens[position]
        if token.startswith("_"):
            fields.append(KEEP_FIELD)
            continue
        bad = f"redact time parameter {position} ({name}) {token!r} in {text!r}"
        if not token:  # Java: StringIndexOutOfBoundsException on a leading separator
            raise ValueError(f"{bad}: empty field")
        try:
            value = _java_parse_int(token)
        except ValueError:
            raise ValueError(f"{bad}: not a number or _") from None
        if not -1 <= value <= maximum:
            raise ValueError(f"{bad}: must be 0..{maximum} or _")
        fields.append(value)
    return tuple(fields)


def _parse_unmask_ranges(text: str | None) -> tuple[tuple[int, int], ...]:
    if text is None or _is_blank(text):
        return ()
    ranges: dict[int, int] = {}  # Java keeps them in a map by start: a repeated start wins last
    for piece in _java_split(text, ","):
        pair = _java_split(_java_trim(piece), ":")
        try:
            if len(pair) < 2:
                raise ValueError("needs start:end")
            # Java reads the first two numbers and ignores anything after a second ':'
            ranges[_java_parse_int(pair[0])] = _java_parse_int(pair[1])
        except ValueError as exc:
            raise ValueError(f"redact unmask range {piece!r} in {text!r}: {exc}") from None
    return tuple(ranges.items())


# --------------------------------------------------------------------------- Unicode groups

#: code point -> group; 255 = not looked up yet (filled lazily: a full table costs ~0.5 s)
_GROUPS = np.full(0x110000, 255, dtype=np.uint8)
_GROUPS[:128] = [_GROUP_OF_CATEGORY.get(unicodedata.category(chr(c)), OTHER) for c in range(128)]


def _group(code_point: int) -> int:
    return _GROUP_OF_CATEGORY.get(unicodedata.category(chr(code_point)), OTHER)


def _groups_of(code_points: np.ndarray) -> np.ndarray:
    groups = _GROUPS[code_points]
    unknown = groups == 255
    if unknown.any():
        for cp in np.flatnonzero(np.bincount(code_points[unknown], minlength=0)):
            _GROUPS[cp] = _group(int(cp))
        groups = _GROUPS[code_points]
    return groups


def _java_utf8_length(code_points: np.ndarray) -> np.ndarray:
    """RedactMaskFactory.getCodepointLength: note `<` where UTF-8 has `<=` (0x7FF -> 3, 0xFFFF -> 4)."""
    if code_points.size and int(code_points.max()) >= 0x10FFFF:
        raise ValueError("redact: ORC Java cannot write code point U+10FFFF (IllegalArgumentException)")
    lengths = (code_points >= 0x80).astype(np.int32) + 1
    return lengths + (code_points >= 0x7FF) + (code_points >= 0xFFFF)


def _decode_utf8(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code points, byte position of each) of valid UTF-8 bytes."""
    starts = np.flatnonzero((data & 0xC0) != 0x80).astype(np.int32)
    code_points = data[starts].astype(np.int32)
    multi = np.flatnonzero(code_points >= 0xC0)  # usually few: decode only those further
    if multi.size:
        padded = np.concatenate([data, np.zeros(3, np.uint8)]).astype(np.int32)
        at = starts[multi]
        lead = code_points[multi]
        length = 2 + (lead >= 0xE0) + (lead >= 0xF0)
        value = lead & np.where(length == 2, 0x1F, np.where(length == 3, 0x0F, 0x07))
        for k in (1, 2, 3):
            more = length > k
            value = np.where(more, (value << 6) | (padded[at + k] & 0x3F), value)
        code_points[multi] = value
    return code_points, starts


_LEAD_BITS = np.array([0, 0x00, 0xC0, 0xE0, 0xF0], dtype=np.int32)  # by encoded length


def _encode_java_utf8(code_points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, running byte end of each code point) as RedactMaskFactory.writeCodepoint writes them."""
    lengths = _java_utf8_length(code_points)
    ends = np.cumsum(lengths, dtype=np.int64)
    out = np.empty(int(ends[-1]) if ends.size else 0, dtype=np.uint8)
    starts = ends - lengths
    out[starts] = _LEAD_BITS[lengths] | (code_points >> (6 * (lengths - 1)))
    multi = np.flatnonzero(lengths > 1)  # usually few: write their continuation bytes
    if multi.size:
        cps, length, at = code_points[multi], lengths[multi], starts[multi]
        for k in (1, 2, 3):
            more = length > k
            shift = 6 * (length[more] - 1 - k)
            out[at[more] + k] = 0x80 | ((cps[more] >> shift) & 0x3F)
    return out, ends


# --------------------------------------------------------------------------- Java number text


def _java_double_to_string(value: float) -> str:
    """Double.toString's layout (plain for 1e-3 <= |v| < 1e7, else d.dddE<n>) of the shortest
    digits that read back as `value`.

    Java 17 (before JDK 19) sometimes prints one more digit than the shortest (1e23 as
    9.999999999999999E22); for those values a mask with unmask ranges can differ from ORC Java.
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0.0"
    _, digits, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = list(digits)
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
        exponent += 1
    # value = 0.d1d2... x 10^(exponent + len(digits))
    return sign + _java_float_text(digits, exponent + len(digits))


def _java_float_text(digits: list[int], exponent: int) -> str:
    text = "".join(map(str, digits))
    if 0 < exponent < 8:
        whole = text[:exponent]
        if len(whole) < exponent:
            return whole + "0" * (exponent - len(whole)) + ".0"
        return whole + "." + (text[exponent:] or "0")
    if -3 < exponent <= 0:
        return "0." + "0" * -exponent + text
    shown = exponent - 1
    return f"{text[0]}.{text[1:] or '0'}E{shown}"


_JAVA_DOUBLE_TEXT = re.compile(r"-?(?:NaN|Infinity|[0-9]+\.[0-9]+(?:E-?[0-9]+)?)")
_HIVE_DECIMAL_TEXT = re.compile(r"-?[0-9]*\.?[0-9]*")
_EXACT_CONTEXT = Context(prec=200, rounding=ROUND_HALF_UP)


def _hive_decimal_text(unscaled: int, scale: int) -> str:
    """HiveDecimal.toString: plain notation, trailing fractional zeros removed."""
    if unscaled == 0:
        return "0"
    sign, magnitude = ("-" if unscaled < 0 else ""), abs(unscaled)
    whole, fraction = divmod(magnitude, 10**scale)
    fraction_text = str(fraction).rjust(scale, "0").rstrip("0") if scale else ""
    return sign + str(whole) + ("." + fraction_text if fraction_text else "")


def _hive_decimal_parse(text: str) -> Decimal | None:
    """HiveDecimal.create(String): ASCII digits only; more than 38 digits round half-up."""
    if not _HIVE_DECIMAL_TEXT.fullmatch(text) or not any(c.isdigit() for c in text):
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    value = value.normalize(_EXACT_CONTEXT) if value else Decimal(0)
    # HiveDecimal's precision counts whole digits (none below 1) plus fraction digits
    whole_digits = max(value.adjusted() + 1, 0)
    if whole_digits > 38:
        return None
    if whole_digits - min(value.as_tuple().exponent, 0) > 38:  # keep 38 digits, round half up
        value = value.quantize(Decimal(1).scaleb(whole_digits - 38), context=_EXACT_CONTEXT)
        if value.adjusted() + 1 > 38:
            return None
    return value


# --------------------------------------------------------------------------- the mask


@dataclass(frozen=True)
class RedactMask:
    """The parameters of one `redact` mask (see RedactMaskFactory's parameter docs)."""

    #: the replacement code point of each character group (UPPER .. OTHER); `_` keeps the character
    replacements: tuple[int, ...] = DEFAULT_REPLACEMENTS
    #: year, month (1-12), day, hour, minute, second; -1 keeps the field
    time_fields: tuple[int, ...] = (KEEP_FIELD, 1, 1, 0, 0, 0)
    #: (start, end) code point index ranges kept as they are; negative counts from the end
    unmask_ranges: tuple[tuple[int, int], ...] = ()

    @classmethod
    def parse(cls, parameters: Sequence[str]) -> RedactMask:
        """From the mask parameters as stored in ORC's DataMask.mask_parameters (already unquoted):
        [0] replacement characters, [1] time fields, [2] unmask ranges 'start:end,...'. Missing/blank = default.
        Raises ValueError with a message naming the bad parameter and value (e.g. a date field out of range,
        a malformed unmask range).

        As in Java, parameter 0 counts every code point, spaces too: only an empty one is all defaults."""
        params = list(parameters)
        # Java takes up to 10 code points from parameter 0, even spaces; fewer leave defaults.
        given = _code_points(params[0]) if params else []
        replacements = tuple(given[:10]) + DEFAULT_REPLACEMENTS[len(given[:10]) :]
        return cls(
            replacements=replacements,
            time_fields=_parse_time_fields(params[1] if len(params) > 1 else None),
            unmask_ranges=_parse_unmask_ranges(params[2] if len(params) > 2 else None),
        )

    # ----------------------------------------------------------------- derived settings

    @property
    def digit_code_point(self) -> int:
        return self.replacements[DIGIT]

    @property
    def digit(self) -> int:
        """The numeric replacement digit (0-9) used for numbers."""
        return _digit_value(self.digit_code_point)

    @property
    def masks_numbers(self) -> bool:
        return self.digit_code_point != UNMASKED

    @property
    def masks_dates(self) -> bool:
        return any(f != KEEP_FIELD for f in self.time_fields[:3])

    @property
    def masks_timestamps(self) -> bool:
        return any(f != KEEP_FIELD for f in self.time_fields)

    # ----------------------------------------------------------------- entry point

    def mask(self, values: pa.Array, orc_kind: int) -> pa.Array:
        """The masked array: same Arrow type and length, nulls stay null.
        orc_kind is the ORC proto Type.Kind number of the column: BOOLEAN 0, BYTE 1, SHORT 2, INT 3, LONG 4,
        FLOAT 5, DOUBLE 6, STRING 7, BINARY 8, TIMESTAMP 9, DECIMAL 14, DATE 15, VARCHAR 16, CHAR 17,
        TIMESTAMP_INSTANT 18. `values` is what pyarrow.orc reads for that type (bool, int8/16/32/64, float32/64,
        string, binary, timestamp[ns] (TIMESTAMP) / timestamp[ns, tz=UTC] (TIMESTAMP_INSTANT), decimal128(p,s),
        date32). Compound kinds (LIST 10, MAP 11, STRUCT 12, UNION 13) raise ValueError (the caller recurses)."""
        if not isinstance(values, pa.Array):
            raise TypeError(f"redact needs a pyarrow.Array, got {type(values).__name__}")
        if orc_kind in _COMPOUND:
            raise ValueError(f"redact masks primitive columns only; ORC kind {orc_kind} is compound")
        kind_type = values.type
        if orc_kind == kinds.BINARY:
            _require(pa.types.is_binary(kind_type) or pa.types.is_large_binary(kind_type), orc_kind, values)
            return pa.nulls(len(values), type=kind_type)
        if orc_kind == kinds.BOOLEAN:
            _require(pa.types.is_boolean(kind_type), orc_kind, values)
            return self._mask_booleans(values) if self.masks_numbers else values
        if orc_kind in _INTEGER_KINDS:
            _require(pa.types.is_integer(kind_type), orc_kind, values)
            return self._mask_integers(values, orc_kind) if self.masks_numbers else values
        if orc_kind in (kinds.FLOAT, kinds.DOUBLE):
            _require(pa.types.is_floating(kind_type), orc_kind, values)
            return self._mask_floats(values) if self.masks_numbers else values
        if orc_kind == kinds.DECIMAL:
            _require(pa.types.is_decimal128(kind_type), orc_kind, values)
            return self._mask_decimals(values) if self.masks_numbers else values
        if orc_kind in _STRING_KINDS:
            _require(pa.types.is_string(kind_type) or pa.types.is_large_string(kind_type), orc_kind, values)
            return self._mask_strings(values)
        if orc_kind == kinds.DATE:
            _require(pa.types.is_date32(kind_type), orc_kind, values)
            return self._mask_dates(values) if self.masks_dates else values
        if orc_kind in _TIMESTAMP_KINDS:
            _require(pa.types.is_timestamp(kind_type), orc_kind, values)
            return self._mask_timestamps(values) if self.masks_timestamps else values
        raise ValueError(f"redact: unknown ORC type kind {orc_kind}")

    # ----------------------------------------------------------------- per type

    def _mask_booleans(self, values: pa.Array) -> pa.Array:
        result = np.full(len(values), self.digit != 0)
        return pa.array(result, type=pa.bool_(), mask=_null_mask(values))

    def _mask_integers(self, values: pa.Array, orc_kind: int) -> pa.Array:
        source = _numbers(values).astype(np.int64)
        masked = self._mask_longs(source)
        # Java ANDs BYTE with 0xff and SHORT with 0xffff; the narrow column keeps the low bits.
        # INT is not cut by Java; a reader sees the low 32 bits, as the cast here does.
        result = masked.astype(_INTEGER_KINDS[orc_kind])
        return _rebuild(values, result.astype(_numpy_type(values.type), copy=False))

    def _mask_longs(self, values: np.ndarray) -> np.ndarray:
        """RedactMaskFactory.maskLong."""
        if self.unmask_ranges:
            return self._mask_longs_unmasking(values)
        digit = self.digit
        if digit == 0:
            return np.zeros_like(values)
        negative = values < 0
        magnitude = np.where(values == _INT64_MIN, _INT64_MAX, np.abs(values))
        digit_count = np.searchsorted(_POWERS_OF_10[1:], magnitude, side="right") + 1
        if digit == 9:  # 19 nines overflow a long: Java uses 18
            digit_count = np.minimum(digit_count, 18)
        masked = _REPUNITS[digit_count].astype(np.int64) * digit
        return np.where(negative, -masked, masked)

    def _mask_longs_unmasking(self, values: np.ndarray) -> np.ndarray:
        """maskLongWithUnmasking: mask Long.toString's digits outside the ranges, Long.parseLong back."""
        negative = values < 0
        bits = values.view(np.uint64)
        magnitude = np.where(negative, ~bits + np.uint64(1), bits)  # Long.MIN_VALUE -> 2**63
        digit_count = np.ones(len(values), dtype=np.int64)
        for e in range(1, 20):
            digit_count += magnitude >= np.uint64(10**e)
        length = digit_count + negative  # Long.toString's length: the sign is a character
        # Long.parseLong reads any BMP decimal digit; a non-digit replacement makes it fail
        replacement = unicodedata.decimal(chr(self.digit_code_point), None)
        if self.digit_code_point > 0xFFFF:
            replacement = None  # two UTF-16 surrogates, neither a digit to Java
        result = np.zeros(len(values), dtype=np.uint64)
        overflow = np.zeros(len(values), dtype=bool)
        rest = magnitude
        for place in range(20):  # from the last digit: place 0 is at character index length - 1
            rest, original = np.divmod(rest, np.uint64(10))
            in_number = place < digit_count
            index = length - 1 - place
            kept = np.zeros(len(values), dtype=bool)
            for start, end in self.unmask_ranges:
                first = start if start >= 0 else length + start
                last = end if end >= 0 else length + end
                kept |= (index >= first) & (index <= last)
            if replacement is None:
                overflow |= in_number & ~kept
                digit = original
            else:
                digit = np.where(kept, original, np.uint64(replacement))
            # at most 19 digits: 9999999999999999999 still fits in uint64
            result += np.where(in_number, digit * np.uint64(10**place), np.uint64(0))
        overflow |= result > np.where(negative, np.uint64(2**63), np.uint64(2**63 - 1))
        signed = np.where(negative, ~result + np.uint64(1), result).view(np.int64)
        return np.where(overflow, np.int64(OVERFLOW_REPLACEMENT * self.digit), signed)

    def _mask_floats(self, values: pa.Array) -> pa.Array:
        source = _numbers(values)
        if self.unmask_ranges:
            # Java's text route; per value, as it needs Java's Double.toString.
            masked = np.array([self._mask_double_unmasking(v) for v in source.astype(np.float64).tolist()])
        else:
            masked = self._mask_doubles(source.astype(np.float64))
        with np.errstate(over="ignore"):  # a double past float32's range is +-inf, as Java's (float)
            result = masked.astype(source.dtype)
        return _rebuild(values, result)

    def _mask_doubles(self, values: np.ndarray) -> np.ndarray:
        """RedactMaskFactory.maskDouble, same operations in the same order."""
        digit = self.digit
        positive = values > 0
        base = np.where(positive, 1.11111, -1.11111)
        magnitude = np.where(positive, values, -values)  # NaN stays NaN and sorts last, as in Java
        position = np.searchsorted(_DOUBLE_POWERS_OF_10, magnitude, side="right") - 1
        position = np.clip(position, 0, len(_DOUBLE_POWERS_OF_10) - 1)
        result = (digit * base) * _DOUBLE_POWERS_OF_10[position]
        zero = values == 0
        if digit == 0:
            zero[:] = True
        result[zero] = digit * 1.11111
        return result

    def _mask_double_unmasking(self, value: float) -> float:
        masked = self._mask_numeric_text(_java_double_to_string(value))
        if _JAVA_DOUBLE_TEXT.fullmatch(masked):  # Double.parseDouble takes ASCII digits only
            return float(masked)
        return float(OVERFLOW_REPLACEMENT * self.digit)

    def _mask_numeric_text(self, text: str) -> str:
        """maskNumericString: digits outside the unmask ranges become the digit replacement."""
        length = len(text)
        replacement = chr(self.digit_code_point)
        return "".join(
            c if self._unmasked(i, length) or unicodedata.category(c) != "Nd" else replacement
            for i, c in enumerate(text)
        )

    def _unmasked(self, index: int, length: int) -> bool:
        for start, end in self.unmask_ranges:
            first = start if start >= 0 else length + start
            last = end if end >= 0 else length + end
            if first <= index <= last:
                return True
        return False

    def _mask_decimals(self, values: pa.Array) -> pa.Array:
        scale = values.type.scale
        words = _numbers(values, np.uint64, width=2)
        low, high = words[:, 0], words[:, 1].view(np.int64)
        if not self.unmask_ranges and 0x30 <= self.digit_code_point <= 0x39:
            masked = self._mask_decimals_fast(low, high, scale)
        else:
            masked = self._mask_decimals_per_value(low, high, scale, _null_mask(values))
        return _rebuild(values, masked)

    def _mask_decimals_fast(self, low: np.ndarray, high: np.ndarray, scale: int) -> np.ndarray:
        """Without unmask ranges the result depends only on the sign and on how many whole and
        fraction digits the text has: compute those, and each distinct result once."""
        negative = high < 0
        limbs = _magnitude_limbs(low, high, negative)
        digit_count = _digit_counts(limbs)
        zeros = _trailing_zeros(limbs, np.where(digit_count > 0, scale, 0))
        fraction_digits = np.where(digit_count > 0, scale - zeros, 0)  # zero prints as "0"
        whole_digits = np.maximum(digit_count - scale, 1)
        key = (whole_digits * 64 + fraction_digits) * 2 + negative
        present = np.flatnonzero(np.bincount(key))
        table = np.zeros((len(present), 2), dtype=np.uint64)
        digit = chr(self.digit_code_point)
        for i, k in enumerate(present.tolist()):
            whole, fraction, neg = k // 128, (k // 2) % 64, k % 2
            text = ("-" if neg else "") + digit * whole + ("." + digit * fraction if fraction else "")
            unscaled = _decimal_unscaled(text, scale) % 2**128
            table[i] = unscaled & (2**64 - 1), unscaled >> 64
        return table[np.searchsorted(present, key)].reshape(-1)

    def _mask_decimals_per_value(self, low, high, scale: int, nulls: np.ndarray | None) -> np.ndarray:
        out = np.zeros((len(low), 2), dtype=np.uint64)
        for i, (lo, hi) in enumerate(zip(low.tolist(), high.tolist(), strict=True)):
            if nulls is not None and nulls[i]:
                continue
            text = self._mask_numeric_text(_hive_decimal_text((hi << 64) | lo, scale))
            unscaled = _decimal_unscaled(text, scale) % 2**128
            out[i] = unscaled & (2**64 - 1), unscaled >> 64
        return out.reshape(-1)

    def _mask_strings(self, values: pa.Array) -> pa.Array:
        fast = self._mask_ascii_strings(values)
        if fast is not None:
            return fast
        offsets, data = _string_buffers(values)
        ascii_table = self._ascii_table()
        out_offsets, out_data = [np.zeros(1, dtype=np.int64)], []
        end = 0
        # Slices of a few MB: fresh large temporaries cost more in page faults than the work.
        for first in range(0, len(values), _STRING_CHUNK):
            chunk = offsets[first : first + _STRING_CHUNK + 1]
            chunk_offsets, chunk_data = self._mask_string_chunk(
                chunk - chunk[0], data[chunk[0] : chunk[-1]], ascii_table
            )
            out_offsets.append(chunk_offsets[1:] + end)
            out_data.append(chunk_data)
            end += int(chunk_offsets[-1])
        joined = np.concatenate(out_data) if out_data else np.zeros(0, dtype=np.uint8)
        return _string_array(values, np.concatenate(out_offsets), joined)

    def _mask_ascii_strings(self, values: pa.Array) -> pa.Array | None:
        """The common case in one pass of bytes.translate: no unmask ranges and only ASCII
        characters whose replacements are one byte too. The lengths, offsets and nulls stay
        as they are, so only the bytes change. None when the values need the general path."""
        if self.unmask_ranges:
            return None
        validity, offset_buffer, data_buffer = values.buffers()
        index_type = np.int64 if pa.types.is_large_string(values.type) else np.int32
        offsets = np.frombuffer(offset_buffer, dtype=index_type, count=values.offset + len(values) + 1)
        end = int(offsets[-1])
        raw = data_buffer.to_pybytes()[:end] if data_buffer is not None else b""
        table = self._ascii_table()
        single_byte = bytes(c for c in range(128) if table[c] < 0x80)
        if raw.translate(None, single_byte):  # a byte outside: non-ASCII, or a multi-byte replacement
            return None
        # bytes that cannot occur here (checked just above) map to themselves
        translation = bytes(int(table[c]) if c < 128 and table[c] < 0x80 else c for c in range(256))
        data = pa.py_buffer(raw.translate(translation))
        return pa.Array.from_buffers(
            values.type, len(values), [validity, offset_buffer, data], values.null_count, values.offset
        )

    def _mask_string_chunk(self, offsets: np.ndarray, data: np.ndarray, ascii_table: np.ndarray):
        """(offsets, bytes) of the masked values of one slice; `offsets` start at 0."""
        if not self.unmask_ranges and (data.size == 0 or int(data.max()) < 0x80):
            present = np.flatnonzero(np.bincount(data, minlength=128))
            if (ascii_table[present] < 0x80).all():  # every replacement is one byte: map the bytes
                return offsets, ascii_table.astype(np.uint8)[data]
        code_points, starts = _decode_utf8(data)
        value_starts = np.searchsorted(starts, offsets, side="left")  # code point index of each value
        masked = np.array(self.replacements, dtype=np.int32)[_groups_of(code_points)]
        keep = masked == UNMASKED
        if self.unmask_ranges:
            counts = np.diff(value_starts)
            row = np.repeat(np.arange(len(counts)), counts)
            index = np.arange(len(code_points)) - value_starts[:-1][row]
            byte_length = np.diff(offsets)[row]  # Java's quirk: negative indexes count bytes
            for start, end in self.unmask_ranges:
                first = start if start >= 0 else byte_length + start
                last = end if end >= 0 else byte_length + end
                keep |= (index >= first) & (index <= last)
        masked = np.where(keep, code_points, masked)
        out, ends = _encode_java_utf8(masked)
        return np.concatenate([[0], ends])[value_starts], out

    def _ascii_table(self) -> np.ndarray:
        replacements = np.array(self.replacements, dtype=np.int32)[_GROUPS[:128]]
        return np.where(replacements == UNMASKED, np.arange(128), replacements)

    def _mask_dates(self, values: pa.Array) -> pa.Array:
        days = _numbers(values).astype(np.int64)
        masked = self._mask_days(days)
        # Java returns (int) of the day count: a date32 past the ends wraps like Java's int
        return _rebuild(values, masked.astype(np.int32))

    def _mask_days(self, days: np.ndarray) -> np.ndarray:
        """GregorianCalendar (UTC): set year/month/day on the calendar fields, read the day back."""
        year, month, day = _hybrid_fields(days)
        new_year, new_month, new_day = self.time_fields[:3]
        if new_year != KEEP_FIELD:
            # YEAR is set within the date's era: a BC date gets year `new_year` BC
            year = np.where(year <= 0, 1 - new_year, new_year)
        if new_month != KEEP_FIELD:
            month = np.full_like(month, new_month)
        if new_day != KEEP_FIELD:
            day = np.full_like(day, new_day)
        return _lenient_days(year, month, day)

    def _mask_timestamps(self, values: pa.Array) -> pa.Array:
        unit = _UNITS_PER_SECOND[values.type.unit]
        raw = _numbers(values).astype(np.int64)
        seconds = np.floor_divide(raw, unit)  # the fraction of a second is dropped (nanos 0)
        days, time = np.divmod(seconds, _SECONDS_PER_DAY)
        hour, rest = np.divmod(time, 3600)
        minute, second = np.divmod(rest, 60)
        days = self._mask_days(days) if self.masks_dates else days
        new_hour, new_minute, new_second = self.time_fields[3:]
        hour = hour if new_hour == KEEP_FIELD else np.full_like(hour, new_hour)
        minute = minute if new_minute == KEEP_FIELD else np.full_like(minute, new_minute)
        second = second if new_second == KEEP_FIELD else np.full_like(second, new_second)
        seconds = days * _SECONDS_PER_DAY + hour * 3600 + minute * 60 + second
        valid = ~_null_mask(values) if values.null_count else np.ones(len(values), dtype=bool)
        out_of_range = valid & ((seconds > _INT64_MAX // unit) | (seconds < -(2**63 // unit)))
        if out_of_range.any():
            first = int(seconds[np.flatnonzero(out_of_range)[0]])
            raise ValueError(
                f"redact: a masked timestamp ({first} s since 1970) does not fit {values.type}; "
                "pyarrow cannot read it from ORC either"
            )
        return _rebuild(values, np.where(valid, seconds * unit, 0))


# --------------------------------------------------------------------------- helpers


def _require(ok: bool, orc_kind: int, values: pa.Array) -> None:
    if not ok:
        raise TypeError(f"redact: ORC kind {orc_kind} cannot hold Arrow type {values.type}")


def _null_mask(values: pa.Array) -> np.ndarray | None:
    if not values.null_count:
        return None
    return values.is_null().to_numpy(zero_copy_only=False)


def _numpy_type(arrow_type: pa.DataType) -> np.dtype:
    """The numpy type of a fixed-width Arrow type's values buffer (dates and timestamps as ints)."""
    if pa.types.is_floating(arrow_type):
        return np.dtype(f"float{arrow_type.bit_width}")
    if pa.types.is_unsigned_integer(arrow_type):
        return np.dtype(f"uint{arrow_type.bit_width}")
    return np.dtype(f"int{arrow_type.bit_width}")


def _numbers(values: pa.Array, dtype=None, width: int = 1) -> np.ndarray:
    """The values buffer of a fixed-width array as numpy (nulls hold whatever is there)."""
    dtype = dtype or _numpy_type(values.type)
    buffer = values.buffers()[1]
    count = (values.offset + len(values)) * width
    data = np.frombuffer(buffer, dtype=dtype, count=count)[values.offset * width :]
    return data.reshape(-1, width) if width > 1 else data


def _validity(values: pa.Array) -> pa.Buffer | None:
    if not values.null_count:
        return None
    if values.offset == 0:
        return values.buffers()[0]
    return values.is_valid().buffers()[1]  # a bitmap of its own, starting at bit 0


def _rebuild(values: pa.Array, data: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(
        values.type,
        len(values),
        [_validity(values), pa.py_buffer(np.ascontiguousarray(data))],
        values.null_count,
    )


def _string_buffers(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Offsets from 0 (int64) and the value bytes of a string array; nulls read as empty."""
    if values.null_count:
        values = pc.if_else(values.is_null(), pa.scalar("", values.type), values)
    index_type = np.int64 if pa.types.is_large_string(values.type) else np.int32
    _, offset_buffer, data_buffer = values.buffers()
    offsets = np.frombuffer(offset_buffer, dtype=index_type, count=values.offset + len(values) + 1)
    offsets = offsets[values.offset :].astype(np.int64)
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    data = data[offsets[0] : offsets[-1]]
    return offsets - offsets[0], data


def _string_array(values: pa.Array, offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    large = pa.types.is_large_string(values.type)
    if not large and offsets.size and offsets[-1] > _INT32_MAX:
        raise ValueError("redact: the masked strings exceed 2 GiB; mask a smaller slice")
    offsets = offsets.astype(np.int64 if large else np.int32)
    buffers = [_validity(values), pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(values.type, len(values), buffers, values.null_count)


def _decimal_unscaled(text: str, scale: int) -> int:
    """The masked decimal text as HiveDecimal reads it, at the column's scale, wrapped to 128 bits."""
    value = _hive_decimal_parse(text)
    if value is None:
        raise ValueError(
            f"redact: ORC Java cannot store the masked decimal {text!r} (HiveDecimal parse fails)"
        )
    # exact: the masked text never has more fraction digits than the column
    unscaled = int(value.scaleb(scale, context=_EXACT_CONTEXT))
    return _wrap(unscaled, 128)


def _wrap(value: int, bits: int) -> int:
    """`value` as a two's-complement integer of `bits` bits."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _magnitude_limbs(low: np.ndarray, high: np.ndarray, negative: np.ndarray) -> list[np.ndarray]:
    """|value| of 128-bit integers as four 32-bit limbs (uint64 arrays), least significant first."""
    high_u = high.view(np.uint64)
    neg_low = ~low + np.uint64(1)
    neg_high = ~high_u + (low == 0).astype(np.uint64)
    low = np.where(negative, neg_low, low)
    high_u = np.where(negative, neg_high, high_u)
    mask = np.uint64(0xFFFFFFFF)
    return [low & mask, low >> np.uint64(32), high_u & mask, high_u >> np.uint64(32)]


def _divide(limbs: list[np.ndarray], divisor: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Long division of 32-bit limbs by a divisor below 2**32 (every step fits in uint64)."""
    remainder = np.zeros(len(limbs[0]), dtype=np.uint64)
    quotient = list(limbs)
    d = np.uint64(divisor)
    for i in (3, 2, 1, 0):
        current = (remainder << np.uint64(32)) | limbs[i]
        quotient[i], remainder = current // d, current % d
    return quotient, remainder


def _trailing_zeros(limbs: list[np.ndarray], allowed: np.ndarray) -> np.ndarray:
    """Trailing decimal zeros of each magnitude, at most `allowed`: greedy steps of 10**9, then
    8, 4, 2, 1 zeros (a step divides exactly or leaves the value as it is)."""
    zeros = np.zeros(len(allowed), dtype=np.int64)
    work = [limb.copy() for limb in limbs]
    for step in (9, 9, 9, 9, 8, 4, 2, 1):
        rows = np.flatnonzero(zeros + step <= allowed)
        if not rows.size:
            continue
        quotient, remainder = _divide([limb[rows] for limb in work], 10**step)
        exact = rows[remainder == 0]
        zeros[exact] += step
        for limb, q in zip(work, quotient, strict=True):
            limb[exact] = q[remainder == 0]
    return zeros


def _digit_counts(limbs: list[np.ndarray]) -> np.ndarray:
    """Decimal digits of each magnitude (0 for zero): a float estimate, corrected exactly."""
    high = (limbs[3] << np.uint64(32)) | limbs[2]
    low = (limbs[1] << np.uint64(32)) | limbs[0]
    approx = high.astype(np.float64) * 2.0**64 + low.astype(np.float64)
    with np.errstate(divide="ignore"):
        estimate = np.where(approx > 0, np.floor(np.log10(np.maximum(approx, 1.0))).astype(np.int64) + 1, 0)
    count = np.clip(estimate, 0, 39)
    for _ in range(2):  # the estimate is off by at most one either way
        below = np.clip(count - 1, 0, 38)
        too_big = (count > 0) & _less(high, low, _POW10_HIGH[below], _POW10_LOW[below])
        count -= too_big
        too_small = (count < 39) & ~_less(
            high, low, _POW10_HIGH[np.clip(count, 0, 38)], _POW10_LOW[np.clip(count, 0, 38)]
        )
        count += too_small & (count < 39)
    return count


def _less(high, low, other_high, other_low) -> np.ndarray:
    return (high < other_high) | ((high == other_high) & (low < other_low))


def _hybrid_fields(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(astronomical year, month 1-12, day) in Java's calendar: Julian before 1582-10-15."""
    year, month, day = _gregorian_from_days(days)
    julian = days < _GREGORIAN_CUTOVER_DAY
    if julian.any():
        j_year, j_month, j_day = _julian_from_days(days)
        year, month, day = (
            np.where(julian, j, g) for j, g in ((j_year, year), (j_month, month), (j_day, day))
        )
    return year, month, day


def _gregorian_from_days(days: np.ndarray):
    z = days + 719_468
    era = np.floor_divide(z, 146_097)
    day_of_era = z - era * 146_097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    mp = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * mp + 2) // 5 + 1
    month = np.where(mp < 10, mp + 3, mp - 9)
    year = year_of_era + era * 400 + (month <= 2)
    return year, month, day


def _julian_from_days(days: np.ndarray):
    z = days + 719_470  # days since 0000-03-01 (Julian)
    era = np.floor_divide(z, 1461)
    day_of_era = z - era * 1461
    year_of_era = (day_of_era - day_of_era // 1460) // 365
    day_of_year = day_of_era - 365 * year_of_era
    mp = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * mp + 2) // 5 + 1
    month = np.where(mp < 10, mp + 3, mp - 9)
    year = year_of_era + era * 4 + (month <= 2)
    return year, month, day


def _days_from_gregorian(year: np.ndarray, month: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of the first of `month` (1-12) in proleptic Gregorian `year`."""
    y = year - (month <= 2)
    era = np.floor_divide(y, 400)
    year_of_era = y - era * 400
    day_of_year = (153 * np.where(month > 2, month - 3, month + 9) + 2) // 5
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146_097 + day_of_era - 719_468


def _days_from_julian(year: np.ndarray, month: np.ndarray) -> np.ndarray:
    y = year - (month <= 2)
    era = np.floor_divide(y, 4)
    year_of_era = y - era * 4
    day_of_year = (153 * np.where(month > 2, month - 3, month + 9) + 2) // 5
    return era * 1461 + year_of_era * 365 + day_of_year - 719_470


def _lenient_days(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """GregorianCalendar.computeTime for YEAR, MONTH (month 0 = December before) and DAY_OF_MONTH."""
    carry, month0 = np.divmod(month - 1, 12)
    normal_year = year + carry
    offset = day - 1  # from the first of the month: day 0 is the day before, 31 may run over
    gregorian = _days_from_gregorian(normal_year, month0 + 1) + offset
    julian = _days_from_julian(normal_year, month0 + 1) + offset
    # Java picks the calendar from the year as set (before the month carries), then falls back
    # to Julian when the Gregorian answer lands before the cutover (the skipped days included).
    use_gregorian = (year >= 1582) & (gregorian >= _GREGORIAN_CUTOVER_DAY)
    return np.where(use_gregorian, gregorian, julian)
