"""From a column's sampled values to a proposal: confidence, evidence that reveals nothing, and the
content fingerprint that decides whether a rejected proposal may come back.

Confidence is the share of the column's non-null, non-blank sampled values that the best
detector validates; the proposal says how many values that share is of. A column is proposed
when the share reaches `min_confidence` (or `min_confidence_named` when the policy's name rules
give it the same pii_type) over at least `min_sampled` values. Evidence is a count per detector
and at most two of the winning detector's values, masked by that detector's mask.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from watershed.discovery.detectors import Detector
from watershed.graph.model import ColumnProposal, ProposalEvidence

#: at most this many masked examples per proposal
MAX_EXAMPLES = 2


@dataclass(frozen=True)
class Thresholds:
    min_confidence: float = 0.8
    min_confidence_named: float = 0.5
    min_sampled: int = 10


@dataclass
class ColumnVerdict:
    """What the detectors made of one column's sample (no value in it but masked examples)."""

    sampled: int = 0
    #: detector name -> values it validated
    counts: dict[str, int] = field(default_factory=dict)
    #: detector name -> masked examples (at most MAX_EXAMPLES)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def best(self, detectors: Sequence[Detector]) -> Detector | None:
        """The detector that validated most values (the earlier one in `detectors` on a tie)."""
        found = [d for d in detectors if self.counts.get(d.name)]
        return max(found, key=lambda d: self.counts[d.name]) if found else None

    def share(self, detector: Detector) -> float:
        return self.counts.get(detector.name, 0) / self.sampled if self.sampled else 0.0


def judge(values: Sequence[str], detectors: Sequence[Detector]) -> ColumnVerdict:
    """Run every detector over every non-blank value (a value may validate under several)."""
    verdict = ColumnVerdict()
    for value in values:
        if not value.strip():
            continue
        verdict.sampled += 1
        for detector in detectors:
            if detector.matches(value):
                verdict.counts[detector.name] = verdict.counts.get(detector.name, 0) + 1
                examples = verdict.examples.setdefault(detector.name, [])
                if len(examples) < MAX_EXAMPLES:
                    examples.append(detector.masked(value))
    return verdict


def content_fingerprint(verdict: ColumnVerdict, detectors: Sequence[Detector], floor: float) -> str:
    """Which pii types the column holds, by the sample (each type validating at least `floor` of
    it), hashed: stable while the content is the same kind of data, whatever rows were read."""
    kinds = sorted({d.pii_type for d in detectors if verdict.share(d) >= floor})
    return hashlib.sha256(",".join(kinds).encode()).hexdigest()[:16]


#: pii_type -> (tag key -> value) of the tags a proposal of that type sets (the use case builds
#: it from the policy)
TagsOf = Callable[[Detector], dict[str, str] | None]


def propose(
    column: str,
    table: str,
    verdict: ColumnVerdict,
    detectors: Sequence[Detector],
    tags_of: TagsOf,
    thresholds: Thresholds,
    *,
    at: str,
    run: str | None = None,
    name_type: str | None = None,
) -> ColumnProposal | None:
    """The proposal for `column`, or None when its sample proves nothing sensitive.

    `tags_of` gives a detector's tags under the policy (None: the policy has no such type, so no
    proposal); `name_type` is the pii_type the policy's name rules give the column.
    """
    best = verdict.best(detectors)
    if best is None or verdict.sampled < thresholds.min_sampled:
        return None
    confidence = verdict.share(best)
    needed = thresholds.min_confidence_named if name_type == best.pii_type else thresholds.min_confidence
    if confidence < needed:
        return None
    tags = tags_of(best)
    if not tags:
        return None
    return ColumnProposal(
        column=column,
        table=table,
        tags=tags,
        confidence=round(confidence, 4),
        sampled=verdict.sampled,
        evidence=ProposalEvidence(
            detectors=dict(sorted(verdict.counts.items())),
            examples=list(verdict.examples.get(best.name, []))[:MAX_EXAMPLES],
            name_rule=name_type,
        ),
        content=content_fingerprint(verdict, detectors, thresholds.min_confidence_named),
        at=at,
        run=run,
    )


def level_tags(
    detector: Detector, family: str, types_key: str, levels: Sequence[str], named: Mapping[str, str]
) -> dict[str, str]:
    """The tags of a detector under a sensitivity family: the level the name rules give its type
    (`named`: pii_type -> level), else the detector's default when the family has it, else the
    family's highest level (a value a library validated as an identifier is no low level)."""
    level = named.get(detector.pii_type) or detector.level
    if level not in levels:
        level = levels[-1]
    return {family: level, types_key: detector.pii_type}


__all__ = [
    "MAX_EXAMPLES",
    "ColumnVerdict",
    "TagsOf",
    "Thresholds",
    "content_fingerprint",
    "judge",
    "level_tags",
    "propose",
]
