"""Masking decisions: which output columns of an allowed query are masked for a user, and why.

The rule: an output is protected when any protected value can decide it (its value, a map or
array subscript's key, a CASE/IF/decode/COALESCE choice, a returned comparison, a lambda, a
window's spec, a scalar subquery's clauses, a join that looks a read's rows up by it, a
position in an array it decides), unless the function-effect table says the value is
destroyed. A join source counts only where the read's own side it was matched against is
less protected than it (`_counts`); a policy secret function's result is never returned
unless it only keys a hash of a protected column (`_secret_returned`). The points (`ingest.points`, the resolver's strict mode) list every such base
column as a source; per output column, its tags are derived from those sources with the
propagation rules in their strict mode (`propagation.rules.derive(strict=True)`: one
`Incoming` per source carrying the base column's effective tags, the path's kind and
functions), so a `count` or a `length` of the column, or a keyed hash (or a plain hash of a
type the policy does not call enumerable), no longer carries the sensitive level: the same
function effect table as propagation. Strict: a conditional value keeps its tags whatever the
policy's `conditional_value`, a function the table does not name keeps them, and a drop or
downgrade counts only while the path holds the column's whole value (a count of a CASE, a
length of a substring, a hash of a choice keep the level). The first protection rule of the policy matching those tags
(`ProtectionPolicy.rule_for`) names the mask. The column is masked unless the user holds
`unmask` (or `all`) covering every base source that on its own carries the protected tag;
a row-scoped unmask grant counts only when every read of that table implies its condition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pydantic import TypeAdapter

from watershed.api.service.authz.decide import ParsedGrant, Tags, covers
from watershed.graph import ids
from watershed.graph.authz import OutputColumn, OutputMask, OutputSource, QueryPoints
from watershed.ingest.rewrite import MASKS
from watershed.propagation.policy import Policy
from watershed.propagation.rules import Incoming, TagValue, derive


def plain_tags(tags: Mapping[str, TagValue]) -> dict[str, list[str]]:
    """A node's tags as key -> sorted values (what decisions and answers hold)."""
    return {key: sorted(tag.values) for key, tag in sorted(tags.items())}


def _incoming(source, tags: Mapping[str, Mapping[str, TagValue]]) -> Incoming:
    return Incoming(
        source=source.column,
        source_tags=dict(tags.get(source.column, {})),
        task=None,
        kind=source.kind,
        functions=tuple(source.functions),
    )


#: where a join condition decides a read's rows (ingest.points), followed by the read's own side
_JOIN = "decides:join"
_AGAINST = "against:"


def _counts(
    source,
    tags: Mapping[str, Mapping[str, TagValue]],
    policy: Policy,
    derived: dict[tuple[str, tuple[str, ...]], Mapping[str, TagValue]],
) -> bool:
    """Whether a source deciding an output through joins counts: not when, at some join on its
    path, the read's own side it was matched against is at least as protected as the value so
    far (`orders.phone = users.phone` choosing `users.name`: the matched phone is no less
    secret). A lookup keyed by it (`digits.k = substr(phone, 11, 1)`) counts. `derived` keeps
    the tags of each (column, path) met, for the query's other sources."""
    functions = source.functions
    if _JOIN not in functions:
        return True
    if not any(key in policy.sensitivity for key in tags.get(source.column, ())):
        # a value with no sensitivity level is matched by any side: it never counts at a join
        return False
    for position, function in enumerate(functions):
        if function != _JOIN:
            continue
        value = _derived_path(source.column, tuple(functions[:position]), tags, policy, derived)
        matched: dict[str, TagValue] = {}
        for mark in functions[position + 1 :]:
            if not mark.startswith(_AGAINST):
                break
            column, _, via = mark[len(_AGAINST) :].partition(" via ")
            side = _derived_path(column, tuple(via.split(",")) if via else (), tags, policy, derived)
            _merge_levels(matched, side, policy)
        if _no_less_protected(matched, value, policy):
            return False
    return True


def _derived_path(
    column: str,
    functions: tuple[str, ...],
    tags: Mapping[str, Mapping[str, TagValue]],
    policy: Policy,
    derived: dict[tuple[str, tuple[str, ...]], Mapping[str, TagValue]],
) -> Mapping[str, TagValue]:
    """The strict tags of `column` through `functions`, derived once per check."""
    key = (column, functions)
    found = derived.get(key)
    if found is None:
        found = derived[key] = (
            derive([_incoming_path(column, functions, tags)], policy, strict=True) if tags.get(column) else {}
        )
    return found


def _merge_levels(matched: dict[str, TagValue], side: Mapping[str, TagValue], policy: Policy) -> None:
    """`matched` joined with one more side's sensitivity levels: all that `_no_less_protected` reads
    of several sides derived together (a level is the maximum of its contributions)."""
    for key, tag in side.items():
        family = policy.sensitivity.get(key)
        if family is None:
            continue
        held = matched.get(key)
        if held is None or max(map(family.rank, tag.values)) > max(map(family.rank, held.values)):
            matched[key] = tag


def _secret_returned(sources, tags: Mapping[str, Mapping[str, TagValue]], policy: Policy) -> str | None:
    """The policy secret function whose result the output holds (a source `<name>()`, ingest.points),
    unless it only keys a hash of a protected column: a hash follows it on its path, and a
    source with a sensitivity tag reaches that hash with the function beside it, not through a
    CASE/IF branch (whose other branch may be a candidate the asker wrote)."""
    for source in sources:
        name = source.column[:-2] if source.column.endswith("()") else ""
        if name not in policy.secret_functions:
            continue
        if not any(policy.is_hash(f) for f in source.functions):
            return name
        keyed = [
            other
            for other in sources
            if other.kind != "conditional-value"
            and name in other.functions
            and any(policy.is_hash(f) for f in other.functions[other.functions.index(name) :])
            and any(key in policy.sensitivity for key in tags.get(other.column, {}))
        ]
        if not keyed:
            return name
    return None


def _incoming_path(column: str, functions, tags: Mapping[str, Mapping[str, TagValue]]) -> Incoming:
    return Incoming(
        source=column,
        source_tags=dict(tags.get(column, {})),
        task=None,
        kind="expression",
        functions=tuple(functions),
    )


def _no_less_protected(
    matched: Mapping[str, TagValue], value: Mapping[str, TagValue], policy: Policy
) -> bool:
    """Every sensitivity level of `value` is matched by one at least as high in `matched`."""
    for key, family in policy.sensitivity.items():
        tag = value.get(key)
        if tag is None:
            continue
        other = matched.get(key)
        if other is None or max(map(family.rank, other.values)) < max(map(family.rank, tag.values)):
            return False
    return True


def mask_name(orc_mask: str) -> str:
    """The mask of a rule's ORC mask text (`redact,params` → `redact`); unknown ones nullify."""
    name = orc_mask.split(",", 1)[0].strip().lower()
    return name if name in MASKS else "nullify"


def output_masks(
    points: QueryPoints,
    grants: Sequence[ParsedGrant],
    tags: Mapping[str, Mapping[str, TagValue]],
    policy: Policy,
    plain: Tags | None = None,
) -> list[OutputMask]:
    """One OutputMask per output column of `points` (see the module docstring). `plain`: `tags`
    as `plain_tags` gives them, when the caller has them already."""
    if plain is None:
        plain = {node: plain_tags(t) for node, t in tags.items()}
    scopes: dict[str, list] = {}
    for scope in points.rows:
        scopes.setdefault(scope.table, []).append(scope.conditions)
    # a read's join decisions are on every output of it: each (column, path) is derived once
    derived: dict[tuple[str, tuple[str, ...]], Mapping[str, TagValue]] = {}
    #: by source object: the points hold one per (column, kind, path) for all outputs, and its
    #: path (often tens of marks long) is not hashed again per output
    counts: dict[int, bool] = {}

    def counted(source) -> bool:
        key = id(source)
        found = counts.get(key)
        if found is None:
            found = counts[key] = _counts(source, tags, policy, derived)
        return found

    # validated as one list: a model per output costs half again as much on a wide query
    return _OUTPUT_MASKS.validate_python(
        [_mask(column, grants, tags, plain, scopes, policy, counted) for column in points.columns]
    )


_OUTPUT_MASKS = TypeAdapter(list[OutputMask])


def _mask(
    column: OutputColumn,
    grants: Sequence[ParsedGrant],
    tags: Mapping[str, Mapping[str, TagValue]],
    plain: Tags,
    scopes: dict[str, list],
    policy: Policy,
    counted: Callable[[OutputSource], bool],
) -> dict:
    """The fields of `column`'s OutputMask; `counted(source)` is `_counts` of a source, kept."""
    sources = column.sources
    secret = _secret_returned(sources, tags, policy)
    if secret is not None:
        # no grant unmasks a secret: it is the key that makes a keyed hash safe
        return {
            "position": column.position,
            "name": column.name,
            "masked": True,
            "mask": "nullify",
            "tags": {},
            "why": f"returns the policy's secret function {secret}(), which may only key a hash of "
            "a protected column",
        }
    if any(_JOIN in source.functions for source in sources):
        sources = [source for source in sources if counted(source)]
    if any(tags.get(source.column) for source in sources):
        incoming = [_incoming(source, tags) for source in sources]
        derived = plain_tags(derive(incoming, policy, strict=True))
    else:
        # most outputs read no tagged column: derive would give {}, which no rule matches, so
        # `incoming` (read below only when a rule matched) is never needed for them
        incoming, derived = [], {}
    protection = policy.protection
    # no tags, no rule: a rule always names a tag
    found = protection.rule_for(derived) if protection is not None and derived else None
    if found is None:
        if not column.sources:
            why = "computed from no base column"
        elif protection is None:
            why = "the policy has no protection rules"
        else:
            why = f"no protection rule matches its tags {derived or '{}'}"
        return {
            "position": column.position,
            "name": column.name,
            "masked": False,
            "tags": derived,
            "why": why,
        }
    rule, level = found
    tag = f"{rule.tag}={level}"
    # what each source carries on its own, through its path's functions
    alone = [
        (source, plain_tags(derive([edge], policy, strict=True)))
        for source, edge in zip(sources, incoming, strict=True)
    ]
    carriers = [(source, t) for source, t in alone if rule.matches(t) is not None]
    if not carriers:
        # level and type from different sources: every source with a protected level, else all
        carriers = [(source, t) for source, t in alone if any(v in rule.levels for v in t.get(rule.tag, ()))]
        carriers = carriers or [(s, {}) for s in sources]
    uncovered, unmasked_by = [], []
    for source, _ in carriers:
        reads = scopes.get(ids.parent(source.column)) or [[]]
        grant = next(
            (
                g
                for g in grants
                if all(covers(g, source.column, conditions, "unmask", plain, policy) for conditions in reads)
            ),
            None,
        )
        if grant is None:
            uncovered.append(source)
        else:
            unmasked_by.append(f"{source.column} by grant {grant.grant.id}")

    def path(source) -> str:
        functions = f" through {', '.join(source.functions)}" if source.functions else ""
        return f"{source.column} ({source.kind}{functions})"

    if not uncovered:
        return {
            "position": column.position,
            "name": column.name,
            "masked": False,
            "tags": derived,
            "why": f"{tag} from {', '.join(path(s) for s, _ in carriers)} (rule {rule.tag} "
            f"{'/'.join(rule.levels)}, mask {rule.mask}); unmask held: {'; '.join(unmasked_by)}",
        }
    return {
        "position": column.position,
        "name": column.name,
        "masked": True,
        "mask": mask_name(rule.mask),
        "tags": derived,
        "why": f"{tag} from {', '.join(path(s) for s in uncovered)} (rule {rule.tag} {'/'.join(rule.levels)}, "
        f"mask {rule.mask}); no unmask grant covers {', '.join(s.column for s in uncovered)}",
    }
