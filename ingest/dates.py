"""Dates in partition predicates, and the partition window they imply.

A date is a `DatePoint`: either absolute (an ordinal day) or relative to a
symbol that is still unknown, such as an unsubstituted `${date}` or
`current_date()`. Windows are computed on these points, so
`dt >= date_sub('${date}', 20)` gives 21 days whether or not the date is known.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from functools import lru_cache

from sqlglot import exp

ABSOLUTE = ""


@dataclass(frozen=True, slots=True)
class DatePoint:
    anchor: str  # ABSOLUTE, or the symbol the offset is relative to
    offset: int  # ordinal day when absolute, else days from the anchor

    def shift(self, days: int) -> DatePoint:
        return DatePoint(self.anchor, self.offset + days)

    def render(self) -> str:
        """Normalised SQL text: an ISO literal, or date arithmetic on the symbol."""
        if self.anchor == ABSOLUTE:
            return f"'{_dt.date.fromordinal(self.offset).isoformat()}'"
        base = "current_date()" if self.anchor == "current_date" else f"'{self.anchor}'"
        if self.offset == 0:
            return base
        if self.offset < 0:
            return f"date_sub({base}, {-self.offset})"
        return f"date_add({base}, {self.offset})"

    def value(self) -> str:
        if self.anchor == ABSOLUTE:
            return _dt.date.fromordinal(self.offset).isoformat()
        return self.render()


@lru_cache(maxsize=4096)
def parse_date_text(text: str) -> DatePoint | None:
    """'2024-01-31', '20240131', '2024-01-31 10:00:00' or a text holding `${var}`.

    Cached: a warehouse's scripts repeat the same few date literals endlessly.
    """
    text = text.strip()
    if "${" in text:
        return DatePoint(text, 0)
    try:
        if len(text) == 8 and text.isdigit():
            return DatePoint(ABSOLUTE, _dt.date(int(text[:4]), int(text[4:6]), int(text[6:])).toordinal())
        if len(text) >= 10 and text[4] == "-" and text[7] == "-":
            return DatePoint(ABSOLUTE, _dt.date.fromisoformat(text[:10]).toordinal())
    except ValueError:
        return None
    return None


def int_value(node: exp.Expression | None) -> int | None:
    """Evaluate small integer arithmetic (`-6`, `3 * -1`, `(7)`)."""
    if node is None:
        return None
    if isinstance(node, exp.Literal):
        if node.is_string:
            text = node.this.strip()
            return int(text) if text.lstrip("-").isdigit() else None
        try:
            return int(node.this)
        except ValueError:
            return None
    if isinstance(node, exp.Neg):
        inner = int_value(node.this)
        return None if inner is None else -inner
    if isinstance(node, exp.Paren):
        return int_value(node.this)
    if isinstance(node, (exp.Mul, exp.Add, exp.Sub)):
        left, right = int_value(node.this), int_value(node.expression)
        if left is None or right is None:
            return None
        if isinstance(node, exp.Mul):
            return left * right
        return left + right if isinstance(node, exp.Add) else left - right
    if isinstance(node, exp.Cast):
        return int_value(node.this)
    return None


_PASS_THROUGH = (
    exp.TsOrDsToDate,
    exp.TimeToStr,
    exp.StrToUnix,
    exp.UnixToStr,
    exp.Cast,
    exp.TryCast,
    exp.RegexpReplace,
    exp.Paren,
    exp.StrToTime,
    exp.StrToDate,
    exp.TsOrDsToTimestamp,
    exp.TimeStrToTime,
    exp.TimeStrToDate,
    exp.Date,
)
_PASS_THROUGH_NAMES = frozenset(
    {"date_format", "from_unixtime", "unix_timestamp", "to_date", "regexp_replace"}
)


def date_point(node: exp.Expression | None) -> DatePoint | None:
    """The date an expression without columns evaluates to, if it is one."""
    if node is None:
        return None
    if isinstance(node, exp.Literal):
        return parse_date_text(node.this) if node.is_string else parse_date_text(str(node.this))
    if isinstance(node, exp.TsOrDsAdd | exp.DateAdd | exp.DateSub):
        # `date_add(d, n)` counts days; `DATEADD(week, n, d)` and MySQL's `DATE_SUB(d, INTERVAL n
        # MONTH)` name their unit
        unit = node.args.get("unit")
        base, count = date_point(node.this), int_value(node.expression)
        if base is None or count is None:
            return None
        return _moved(base, -count if isinstance(node, exp.DateSub) else count, unit.name if unit else "DAY")
    if isinstance(node, exp.Add | exp.Sub):
        return _interval_arithmetic(node)
    if isinstance(node, exp.AddMonths):
        base, months = date_point(node.this), int_value(node.expression)
        if base is None or months is None:
            return None
        return base.shift(_month_days(base, months))
    if isinstance(node, exp.CurrentDate | exp.CurrentTimestamp):
        return DatePoint("current_date", 0)
    if isinstance(node, _PASS_THROUGH):
        return date_point(node.this)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in _PASS_THROUGH_NAMES and node.expressions:
        return date_point(node.expressions[0])
    return None


#: units that move a date by whole days, and by calendar months
_UNIT_DAYS = {"DAY": 1, "DAYS": 1, "WEEK": 7, "WEEKS": 7}
_UNIT_MONTHS = {"MONTH": 1, "MONTHS": 1, "YEAR": 12, "YEARS": 12}


def _moved(base: DatePoint, count: int, unit: str) -> DatePoint | None:
    """`base` moved by `count` units; None for a unit finer than a day (hours) or unknown."""
    name = unit.upper()
    days = _UNIT_DAYS.get(name)
    if days is not None:
        return base.shift(count * days)
    months = _UNIT_MONTHS.get(name)
    if months is not None:
        return base.shift(_month_days(base, count * months))
    return None


def _interval_arithmetic(node: exp.Add | exp.Sub) -> DatePoint | None:
    """`date ± INTERVAL n unit` (or `INTERVAL n unit + date`); a unit-less interval is no date."""
    left, right = node.this, node.expression
    if type(right) is exp.Interval:
        base_node, interval = left, right
    elif type(left) is exp.Interval and type(node) is exp.Add:
        base_node, interval = right, left
    else:
        return None
    unit = interval.args.get("unit")
    count = int_value(interval.this)
    if unit is None or count is None:
        return None
    base = date_point(base_node)
    if base is None:
        return None
    return _moved(base, -count if type(node) is exp.Sub else count, unit.name)


def _month_days(base: DatePoint, months: int) -> int:
    if base.anchor != ABSOLUTE:
        # Unknown calendar position: 31 days a month never under-estimates a window.
        return 31 * months
    day = _dt.date.fromordinal(base.offset)
    total = day.year * 12 + day.month - 1 + months
    year, month = divmod(total, 12)
    month += 1
    last = (_dt.date(year + month // 12, month % 12 + 1, 1) - _dt.timedelta(days=1)).day
    return _dt.date(year, month, min(day.day, last)).toordinal() - base.offset


@dataclass(slots=True)
class DayRange:
    """Inclusive day bounds read from one partition column; None is open."""

    low: DatePoint | None = None
    high: DatePoint | None = None


def _comparable(a: DatePoint, b: DatePoint) -> bool:
    return a.anchor == b.anchor


def intersect(ranges: list[DayRange]) -> DayRange | None:
    """The conjunction of several constraints; None when their anchors cannot be compared."""
    low: DatePoint | None = None
    high: DatePoint | None = None
    for r in ranges:
        if r.low is not None:
            if low is not None and not _comparable(low, r.low):
                return None
            low = r.low if low is None or r.low.offset > low.offset else low
        if r.high is not None:
            if high is not None and not _comparable(high, r.high):
                return None
            high = r.high if high is None or r.high.offset < high.offset else high
    return DayRange(low, high)


def hull(ranges: list[DayRange]) -> DayRange | None:
    """The disjunction of several constraints (an OR): the range covering all of them."""
    low: DatePoint | None = None
    high: DatePoint | None = None
    for index, r in enumerate(ranges):
        if r.low is None:
            return DayRange(None, None)
        if index == 0:
            low, high = r.low, r.high
            continue
        if low is None or not _comparable(low, r.low):
            return None
        low = r.low if r.low.offset < low.offset else low
        if high is None or r.high is None:
            high = None
        elif _comparable(high, r.high):
            high = r.high if r.high.offset > high.offset else high
        else:
            return None
    return DayRange(low, high)


def window_days(day_range: DayRange | None, run_date: DatePoint | None) -> int | None:
    """How many days back from the run date a read reaches; None when unbounded.

    The upper end is the later of the range's upper bound and the run date
    (the anchor of a relative bound is the run date), because retention must
    keep the oldest partition the task reads on the day it runs.
    """
    if day_range is None or day_range.low is None:
        return None
    low = day_range.low
    references: list[DatePoint] = []
    if low.anchor != ABSOLUTE:
        references.append(DatePoint(low.anchor, 0))
    elif run_date is not None and run_date.anchor == ABSOLUTE:
        references.append(run_date)
    if day_range.high is not None:
        references.append(day_range.high)
    references = [r for r in references if _comparable(r, low)]
    if not references:
        return None
    top = max(r.offset for r in references)
    return max(top - low.offset + 1, 0)
