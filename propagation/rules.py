"""The semantic rules: a node's tags recomputed from all its incoming contributions.

`derive` is a pure function. Given what every incoming lineage edge delivers
(the source's tags, the edge's kind and functions, the filters of the task on
the source table), the node's own seeds, manual tags and blocks, and the
policy, it returns the node's tags with their provenance. Because a node is
always recomputed from all its inputs (never appended to), running it again
on the same inputs gives the same answer, in any order.

- Sensitivity levels follow value edges through the function effects on the
  path (keep, drop, downgrade, retype); a node's level is the maximum of its
  contributions. A plain hash (not keyed, no secret salt before it) of a value
  whose type the policy calls enumerable (a phone number, an ssn) keeps the
  level: every candidate can be hashed and compared.
- `strict` (the query gateway's question, "can a protected value decide this
  output?"): the policy's conditional-value effect and its unknown-function
  effect do not apply, and a drop or downgrade counts only while the path has
  passed the source on whole (`Policy.takes_whole`): `length(phone)` drops,
  `length(regexp_replace(phone, ...))`, `count(CASE WHEN phone ... END)` and
  a hash of a substring keep the level.
- Sensitivity types follow the same edges; `retype` replaces them.
- Business values follow value edges, narrowed by the task's filters on the
  dimension columns of the source table; contributions are united.
- Weak references carry nothing unless the policy says `business`.
- Precedence for a key: a block removes it (a block of a sensitivity family
  removes its type key too, `Policy.blocked_keys`); else a manual tag; else a seed
  (an accepted discovery over a policy rule seed, `OWN_PRECEDENCE`); else what
  propagation derived.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from watershed.propagation.policy import Policy, SensitivityFamily

SEED, MANUAL, PROPAGATED = "seed", "manual", "propagated"
#: a seed a steward accepted from content discovery (api/service/discovery.py)
DISCOVERED = "discovered"
#: which of a node's own tags wins for one key when several origins set it (last wins): a
#: steward's accepted discovery, made on the column's content, over a policy name rule; a steward's
#: manual tag over both (kept apart as `manual`). An origin not listed ranks below rule seeds.
OWN_PRECEDENCE = (SEED, DISCOVERED, MANUAL)
#: the kind of a table-level FLOWS_TO edge
TABLE_EDGE = "table"


@dataclass(frozen=True, slots=True)
class Provenance:
    source: str
    task: str | None
    kind: str
    rule: str
    hops: int


@dataclass(slots=True)
class TagValue:
    key: str
    values: frozenset[str]
    origin: str
    provenance: tuple[Provenance, ...] = ()

    @property
    def hops(self) -> int:
        return min((p.hops for p in self.provenance), default=0)


@dataclass(frozen=True, slots=True)
class Incoming:
    """What one lineage edge into the node delivers."""

    source: str
    source_tags: dict[str, TagValue]
    task: str | None
    kind: str  # direct, expression, ..., or the weak role (filter, join, ...)
    functions: tuple[str, ...] = ()
    weak: bool = False
    #: dimension -> values the task's filters on the source table allow
    filters: dict[str, frozenset[str]] = field(default_factory=dict)


@dataclass(slots=True)
class _Candidate:
    values: frozenset[str]
    provenance: list[Provenance]


def derive(
    incoming: list[Incoming],
    policy: Policy,
    *,
    seeds: dict[str, TagValue] | None = None,
    manual: dict[str, TagValue] | None = None,
    blocks: frozenset[str] = frozenset(),
    strict: bool = False,
) -> dict[str, TagValue]:
    derived = _propagated(incoming, policy, strict)
    result: dict[str, TagValue] = {}
    blocks = policy.blocked_keys(blocks) if blocks else blocks
    for key in {*derived, *(seeds or {}), *(manual or {})}:
        if key in blocks:
            continue
        if manual and key in manual:
            result[key] = manual[key]
        elif seeds and key in seeds:
            result[key] = seeds[key]
        else:
            result[key] = derived[key]
    return result


def _propagated(incoming: list[Incoming], policy: Policy, strict: bool) -> dict[str, TagValue]:
    levels: dict[str, list[_Candidate]] = {}
    sets: dict[str, list[_Candidate]] = {}
    for edge in incoming:
        if edge.kind == TABLE_EDGE:
            _table_edge(edge, policy, sets)
            continue
        if edge.weak and policy.weak_references == "none":
            continue
        for key, tag in edge.source_tags.items():
            hops = tag.hops + 1
            family = policy.sensitivity.get(key)
            if family is not None:
                if edge.weak:
                    continue
                outcome = _sensitivity(tag, edge, policy, key, strict)
                if outcome is not None:
                    level, rule = outcome
                    levels.setdefault(key, []).append(
                        _Candidate(
                            frozenset([level]), [Provenance(edge.source, edge.task, edge.kind, rule, hops)]
                        )
                    )
                continue
            typed = policy.family_of_type_key(key)
            if typed is not None:
                if edge.weak:
                    continue
                outcome_types = _types(tag, edge, policy, typed[0], strict)
                if outcome_types is not None:
                    values, rule = outcome_types
                    sets.setdefault(key, []).append(
                        _Candidate(values, [Provenance(edge.source, edge.task, edge.kind, rule, hops)])
                    )
                continue
            if key in policy.business:
                values = tag.values
                rule = "inherit"
                allowed = edge.filters.get(key)
                if allowed is not None:
                    values = values & allowed
                    rule = f"narrow:{key} in {sorted(allowed)}"
                if values:
                    sets.setdefault(key, []).append(
                        _Candidate(values, [Provenance(edge.source, edge.task, edge.kind, rule, hops)])
                    )
                continue
            if not edge.weak and edge.kind == "direct" and not edge.functions:
                sets.setdefault(key, []).append(
                    _Candidate(tag.values, [Provenance(edge.source, edge.task, edge.kind, "inherit", hops)])
                )
    result: dict[str, TagValue] = {}
    for key, candidates in levels.items():
        family = policy.sensitivity[key]
        top = max(family.rank(next(iter(c.values))) for c in candidates)
        winners = [p for c in candidates if family.rank(next(iter(c.values))) == top for p in c.provenance]
        result[key] = TagValue(key, frozenset([family.levels[top]]), PROPAGATED, _sorted(winners))
    for key, candidates in sets.items():
        values = frozenset().union(*(c.values for c in candidates))
        result[key] = TagValue(
            key, values, PROPAGATED, _sorted([p for c in candidates for p in c.provenance])
        )
    return result


def _sensitivity(
    tag: TagValue, edge: Incoming, policy: Policy, key: str, strict: bool
) -> tuple[str, str] | None:
    """The level a sensitivity tag has after the edge's functions (and CASE/IF value rule), or None if dropped."""
    family = policy.sensitivity[key]
    level = max(tag.values, key=family.rank)
    enumerable = _enumerable(edge, family)
    applied: list[str] = []
    for effect, position in _steps(edge, policy, family, strict):
        if effect == "drop":
            return None
        if effect.startswith("downgrade:"):
            if (
                enumerable
                and position is not None
                and policy.plain_hash(edge.functions, position, strict=strict)
            ):
                applied.append(f"keep:{edge.functions[position]} of enumerable {','.join(enumerable)}")
                continue
            target = effect.split(":", 1)[1]
            if family.rank(target) < family.rank(level):
                level = target
                name = "conditional" if position is None else edge.functions[position]
                applied.append(f"downgrade:{name}->{target}")
    return level, ", ".join(applied) or "keep"


def _steps(
    edge: Incoming, policy: Policy, family: SensitivityFamily, strict: bool
) -> list[tuple[str, int | None]]:
    """(effect, position) per step of the edge's path: a function's position in it, None for
    the CASE/IF value rule (`conditional_value`). `strict`: once a function has not passed the source on whole (a part,
    a comparison, a choice), no later function lowers the tag: what it takes was decided by
    the source, and a length, a count or a hash of that tells the decision."""
    steps: list[tuple[str, int | None]] = []
    whole = True
    for position, function in enumerate(edge.functions):
        effect = policy.effect(function, family, strict=strict)
        steps.append((effect if whole or not strict else "keep", position))
        whole = whole and policy.takes_whole(function)
    if edge.kind == "conditional-value" and not strict:
        steps.append((policy.conditional_value, None))
    return steps


def _enumerable(edge: Incoming, family: SensitivityFamily) -> list[str]:
    """The source's types (of `family`) that the policy calls enumerable."""
    if family.types_key is None or not family.enumerable:
        return []
    types = edge.source_tags.get(family.types_key)
    return sorted(types.values & set(family.enumerable)) if types is not None else []


def _types(
    tag: TagValue, edge: Incoming, policy: Policy, family_name: str, strict: bool
) -> tuple[frozenset[str], str] | None:
    family = policy.sensitivity[family_name]
    values = tag.values
    rule = "keep"
    for effect, position in _steps(edge, policy, family, strict):
        if effect == "drop":
            return None
        if position is not None and effect.startswith("retype:"):
            values = frozenset([effect.split(":", 1)[1]])
            rule = f"retype:{edge.functions[position]}"
    return values, rule


def _sorted(provenance: list[Provenance]) -> tuple[Provenance, ...]:
    unique = {(p.source, p.task or "", p.kind, p.rule, p.hops): p for p in provenance}
    return tuple(unique[k] for k in sorted(unique))


def _table_edge(edge: Incoming, policy: Policy, sets: dict[str, list[_Candidate]]) -> None:
    """A table-level edge carries business values only: the input table's, narrowed by the task's filters.

    An input without a value for a dimension contributes nothing for it, even
    when the task filters on it: letting the filter's values stand in for the
    missing tag would make a table's values shrink once its input is tagged,
    and a lineage cycle would then keep values that lost their support.
    """
    for key in policy.business:
        tag = edge.source_tags.get(key)
        if tag is None:
            continue
        allowed = edge.filters.get(key)
        values = tag.values & allowed if allowed is not None else tag.values
        rule = f"narrow:{key} in {sorted(allowed)}" if allowed is not None else "union"
        if values:
            sets.setdefault(key, []).append(
                _Candidate(values, [Provenance(edge.source, edge.task, TABLE_EDGE, rule, tag.hops + 1)])
            )


def filter_values(predicates: list[tuple[str, str, list[str]]], policy: Policy) -> dict[str, frozenset[str]]:
    """Dimension values allowed by a task's filters on one source table: (column, op, values) triples."""
    allowed: dict[str, frozenset[str]] = {}
    for column, op, values in predicates:
        found = policy.dimension_of_column(column.lower())
        if found is None or op not in ("=", "in"):
            continue
        name, dimension = found
        mapped = frozenset(dimension.map_value(column.lower(), v) for v in values)
        allowed[name] = allowed[name] & mapped if name in allowed else mapped
    return allowed
