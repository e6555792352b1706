"""What the read commands (and later the API) show of a node's tags: pydantic views of the engine's values.

The engine works on slotted dataclasses for speed; these models are the
boundary shape, built from them on the way out.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from watershed.propagation.rules import Provenance, TagValue


class TagSource(BaseModel):
    """One edge a propagated tag came in by."""

    source: str
    task: str | None
    kind: str
    rule: str
    hops: int

    @classmethod
    def of(cls, p: Provenance) -> TagSource:
        return cls(source=p.source, task=p.task, kind=p.kind, rule=p.rule, hops=p.hops)


class NodeTag(BaseModel):
    key: str
    values: list[str]
    origin: str
    hops: int
    provenance: list[TagSource] = Field(default_factory=list)

    @classmethod
    def of(cls, tag: TagValue) -> NodeTag:
        return cls(
            key=tag.key,
            values=sorted(tag.values),
            origin=tag.origin,
            hops=tag.hops,
            provenance=sorted(
                (TagSource.of(p) for p in tag.provenance),
                key=lambda s: (s.source, s.task or "", s.kind, s.rule),
            ),
        )


class OwnEntry(BaseModel):
    """What a steward or a rule set on the node itself: a tag or a block."""

    type: str
    origin: str | None = None
    key: str
    value: Any = None
    by: str | None = None
    at: str | None = None
    rule: str | None = None


class NodeTags(BaseModel):
    """`tag show`: a node's tags with their provenance, and what was set on it."""

    node: str
    tags: list[NodeTag] = Field(default_factory=list)
    set_here: list[OwnEntry] = Field(default_factory=list)


class WhyStep(BaseModel):
    """A node on the way back from a tag to its seeds; `via` is the hop into the node below it."""

    node: str
    values: list[str] | None = None
    origin: str  # manual, rule, propagated, or "gone" when the source no longer holds the tag
    via: TagSource | None = None
    sources: list[WhyStep] = Field(default_factory=list)


class WhyPaths(BaseModel):
    """`tag why`: every path from the seed(s) to a node's tag, as a tree rooted at the node."""

    node: str
    key: str
    paths: int
    stopped_at_max_paths: bool
    tree: WhyStep
