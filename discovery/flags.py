"""Leak and over-tag flags: a derived column's sampled content judged against the tags propagation
gave it (the use case, api/service/discovery.py, walks the lineage and stores the flags).

- **leak**: the content supports a sensitivity tag (the same bar as a proposal) and the column holds
  no tag of that family, or a lower level: propagation missed it (an untagged root, an opaque UDF, a
  function the effect table drops, lineage the harvest cannot see).
- **over-tag**: the column holds a *propagated* tag whose types a detector knows, enough values were
  sampled, and at most `max_share` of them validate as any of those types. Only judged when every
  function on the tag's path keeps a value's form (`FORM_KEEPING`): after a hash, a substring or a
  concatenation the content may rightly look like nothing the detectors know.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from watershed.discovery.detectors import Detector
from watershed.discovery.proposals import ColumnVerdict, Thresholds

#: functions whose result is the value itself, maybe recased, trimmed, cast or chosen among rows:
#: content that validated before them validates after
FORM_KEEPING = frozenset(
    {
        "cast",
        "trim",
        "ltrim",
        "rtrim",
        "upper",
        "lower",
        "coalesce",
        "nvl",
        "min",
        "max",
        "first",
        "last",
        "first_value",
        "last_value",
    }
)


def is_leak(level: str, held: str | None, levels: Sequence[str]) -> bool:
    """Whether a column the content puts at `level` is held at a lower level, or none (`held`)."""
    if held not in levels:
        return True
    return levels.index(held) < levels.index(level)


def keeps_form(functions: Iterable[str]) -> bool:
    """Whether a value passed through `functions` (in path order) still validates as it did."""
    return all(f in FORM_KEEPING for f in functions)


def clearly_not(
    verdict: ColumnVerdict,
    detectors: Sequence[Detector],
    types: Iterable[str],
    thresholds: Thresholds,
    max_share: float,
) -> float | None:
    """The share of the sample that validates as any of `types`, when that share shows the column
    holds none of them: enough values sampled and at most `max_share` validate. None when it cannot
    be said (too few values, no type, a type no detector knows) or enough values validate."""
    wanted = set(types)
    judges = [d for d in detectors if d.pii_type in wanted]
    if not wanted or verdict.sampled < thresholds.min_sampled:
        return None
    if wanted - {d.pii_type for d in judges}:
        return None
    share = max(verdict.share(d) for d in judges)
    return share if share <= max_share else None


__all__ = ["FORM_KEEPING", "clearly_not", "is_leak", "keeps_form"]
