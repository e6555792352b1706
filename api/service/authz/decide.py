"""Decisions: may a user run a query, given its points, the user's grants and the columns' tags.

A pure function of (points, grants, tags, policy), so it is tested without a graph:

- a query with unknown tables or unresolved columns is denied with `error` (a column the graph
  does not know cannot be checked, so it is never let through);
- every cell's columns must each be covered for `select` (or `all`) by one grant: a database
  grant on its database; a table grant on its table whose columns (if listed) hold it and whose
  condition (if any) the cell's conditions imply (`conditions.implies`); a tag grant whose
  expression matches the column's effective tags (inside its database, if it names one);
- a cell without columns (`count(*)`) needs one select grant covering the table: as above, with
  a tag grant matched against the table's own tags;
- every written table needs `insert` from a database grant or a table grant without columns and
  condition (an insert writes whole rows; a tag grant never covers a write).

Missing cells are listed (at most `limit`, the rest counted in `more_missing`) with the
columns, the cell's conditions, the reason and a SuggestedGrant asking for exactly the cell.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from watershed.api.service.authz.conditions import implies, parse_condition
from watershed.api.service.authz.errors import AuthzError
from watershed.api.service.authz.tag_scope import TagScope, matches, parse_tag
from watershed.graph import ids
from watershed.graph.authz import (
    Action,
    Cell,
    Decision,
    Grant,
    MissingCell,
    QueryPoints,
    RowCondition,
    SuggestedGrant,
)
from watershed.propagation.policy import Policy

#: missing cells listed in a decision; the rest are counted
MAX_MISSING = 100

Tags = Mapping[str, Mapping[str, Sequence[str]]]


@dataclass(frozen=True)
class ParsedGrant:
    grant: Grant
    conditions: tuple[RowCondition, ...] | None
    tag: TagScope | None
    #: a stored grant that no longer parses (the policy changed its levels): it covers nothing
    broken: bool = False

    def allows(self, action: Action) -> bool:
        return not self.broken and (action in self.grant.actions or "all" in self.grant.actions)


@lru_cache(maxsize=4096)
def _condition(text: str) -> tuple[RowCondition, ...]:
    # a grant's condition is parsed with sqlglot; every check of every user holding it needs it
    return tuple(parse_condition(text))


def parse_grants(grants: Sequence[Grant], policy: Policy) -> list[ParsedGrant]:
    parsed = []
    for grant in grants:
        try:
            conditions = _condition(grant.condition) if grant.condition else None
            tag = parse_tag(grant.tag, policy) if grant.tag else None
        except AuthzError:
            parsed.append(ParsedGrant(grant, None, None, broken=True))
            continue
        parsed.append(ParsedGrant(grant, conditions, tag))
    return parsed


def _database(node_id: str) -> str:
    return ids.split(node_id)[0]


def covers(
    grant: ParsedGrant,
    node: str,
    conditions: Sequence[RowCondition],
    action: Action,
    tags: Tags,
    policy: Policy,
) -> bool:
    """Whether `grant` gives `action` on `node` read under `conditions`: a base column (its values),
    or a table (its rows, no column values read)."""
    if not grant.allows(action):
        return False
    g = grant.grant
    if g.tag is not None:
        if g.database is not None and g.database != _database(node):
            return False
        return grant.tag is not None and matches(grant.tag, tags.get(node, {}), policy)
    if g.table is not None:
        column = ids.depth(node) == 3
        if g.table != (ids.parent(node) if column else node):
            return False
        if column and g.columns is not None and ids.name(node) not in g.columns:
            return False
        return grant.conditions is None or implies(list(conditions), list(grant.conditions))
    return g.database == _database(node)


def _covers_write(grant: ParsedGrant, table: str) -> bool:
    if not grant.allows("insert") or grant.grant.tag is not None:
        return False
    g = grant.grant
    if g.table is not None:
        return g.table == table and g.columns is None and g.condition is None
    return g.database == _database(table)


def _reason(cell: Cell, missing: list[str], grants: list[ParsedGrant]) -> str:
    names = ", ".join(ids.name(c) for c in missing) or "(its rows)"
    limited = [
        g.grant
        for g in grants
        if g.allows("select")
        and g.grant.table == cell.table
        and g.grant.condition is not None
        and (g.grant.columns is None or any(ids.name(c) in g.grant.columns for c in missing))
    ]
    if limited:
        where = "; ".join(f"{g.id} only where {g.condition}" for g in limited[:3])
        shown = " AND ".join(c.text for c in cell.conditions) or "no condition"
        return (
            f"no select grant covers {names} of {cell.table} under {shown}: "
            f"row-scoped grants ({where}) are not implied by the query's conditions"
        )
    return f"no select grant covers {names} of {cell.table}"


def decide(
    user: str,
    points: QueryPoints,
    grants: Sequence[Grant],
    tags: Tags,
    policy: Policy,
    *,
    admins_of: Callable[[str], list[str]] | None = None,
    limit: int = MAX_MISSING,
) -> Decision:
    """The decision for `user` running the query whose points these are (see the module docstring).

    `tags` holds the effective tags ({key: [values]}) of the points' base columns and tables;
    `admins_of(database)` names who may grant there (for the suggestions).
    """
    # a query that cannot be read whole is denied before any grant is looked at
    unreadable = (
        f"unknown table: {', '.join(points.unknown_tables)}"
        if points.unknown_tables
        else f"cannot check the query: {'; '.join(points.problems[:10])}"
        if points.problems
        else None
    )
    if unreadable is not None:
        return Decision(
            user=user, query_hash=points.query_hash, allowed=False, error=unreadable, points=points
        )
    parsed = parse_grants(grants, policy)
    asked: dict[str, list[str]] = {}

    def request_from(table: str) -> list[str]:
        database = _database(table)
        if database not in asked:
            asked[database] = admins_of(database) if admins_of else []
        return asked[database]

    missing: list[MissingCell] = []
    for cell in points.cells:
        if cell.columns:
            uncovered = [
                column
                for column in cell.columns
                if not any(covers(g, column, cell.conditions, "select", tags, policy) for g in parsed)
            ]
            if not uncovered:
                continue
        elif any(covers(g, cell.table, cell.conditions, "select", tags, policy) for g in parsed):
            continue
        else:
            uncovered = []
        condition = " AND ".join(c.text for c in cell.conditions) or None
        missing.append(
            MissingCell(
                table=cell.table,
                action="select",
                columns=uncovered,
                conditions=list(cell.conditions),
                reason=_reason(cell, uncovered, parsed),
                suggestion=SuggestedGrant(
                    action="select",
                    table=cell.table,
                    columns=[ids.name(c) for c in uncovered],
                    condition=condition,
                    request_from=request_from(cell.table),
                ),
            )
        )
    for table in points.writes:
        if any(_covers_write(g, table) for g in parsed):
            continue
        missing.append(
            MissingCell(
                table=table,
                action="insert",
                reason=f"no insert grant on {table} or its database",
                suggestion=SuggestedGrant(action="insert", table=table, request_from=request_from(table)),
            )
        )
    return Decision(
        user=user,
        query_hash=points.query_hash,
        allowed=not missing,
        missing=missing[:limit],
        more_missing=max(0, len(missing) - limit),
        points=points,
    )
