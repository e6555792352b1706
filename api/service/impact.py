"""Impact analysis: every table and column downstream of a table or column, with the owner, layer,
tags and retention of each, grouped by owner (`watershed impact`, GET /impact/{id}, the UI's
Impact link).

The walk is breadth first, one round trip per hop, and bounded twice: it stops once WALK_CAP
nodes are found (`total_bounded`), and only the `limit` nearest of them are detailed and listed
(`truncated`). Columns are reached along value edges (FLOWS_TO). Tables are reached by value
(`via: flows_to`: a table FLOWS_TO edge, or holding a downstream column) or only by a weak edge
(`via: influences`: a downstream column, or the node itself, filters, joins or conditions what the
table holds without its value flowing there); the walk does not continue past a weak edge.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, Field

from watershed.graph import ids, queries
from watershed.graph.store import GraphStore
from watershed.propagation.graph_store import decode_tags

#: the most downstream nodes one walk finds: past it the total is a lower bound
WALK_CAP = 10_000
DEFAULT_LIMIT = 500
MAX_LIMIT = 5_000
#: ids per detail statement
_BATCH = 1_000
Kind = Literal["column", "table"]
Via = Literal["flows_to", "influences"]


class ImpactItem(BaseModel):
    id: str
    kind: Kind
    #: flows_to: the node's value derives from the root; influences: a weak edge only
    via: Via
    #: hops from the root (from the table's columns, for a table)
    hops: int
    owner: str | None = None
    #: catalog: the table's owner; task: no catalog owner, the owner of a task writing the table
    owner_from: Literal["catalog", "task"] | None = None
    layer: str | None = None
    #: tag key -> values, as the last propagation run computed them
    tags: dict[str, list[str]] = Field(default_factory=dict)
    #: the table's retention
    ttl_days: int | None = None
    #: a column's TTL advice, as the last TTL run stored it
    ttl_status: str | None = None
    ttl_days_recommended: int | None = None


class ImpactGroup(BaseModel):
    owner: str | None
    count: int
    items: list[ImpactItem]


class Impact(BaseModel):
    node: str
    kind: Kind
    limit: int
    #: downstream nodes the caller may see; a lower bound when `total_bounded`
    total: int
    total_bounded: bool
    #: fewer items listed than exist (the limit, or the walk's cap)
    truncated: bool
    #: downstream nodes left out because they lie in databases the caller may not see
    hidden: int = 0
    groups: list[ImpactGroup]


class ImpactError(ValueError):
    """A bad request (the message names the input)."""


def impact(
    graph: GraphStore,
    node_id: str,
    kind: Kind,
    limit: int = DEFAULT_LIMIT,
    databases: list[str] | None = None,
    walk_cap: int = WALK_CAP,
) -> Impact | None:
    """The downstream impact of `node_id` (canonical id), None when the node does not exist.

    `databases` (None = all) limits what is listed: the walk still passes through other databases,
    so a visible node downstream of a hidden one is found, and `hidden` counts what was left out.
    """
    if not 1 <= limit <= MAX_LIMIT:
        raise ImpactError(f"limit {limit}: expected 1 to {MAX_LIMIT}")
    label = "Column" if kind == "column" else "Table"
    if not graph.read(f"MATCH (n:{label} {{id: $id}}) RETURN n.id", {"id": node_id}):
        return None
    found: dict[tuple[Kind, str], tuple[Via, int]] = {}
    bounded = _walk(graph, node_id, kind, found, walk_cap)
    visible = [
        (key, reach) for key, reach in found.items() if databases is None or ids.split(key[1])[0] in databases
    ]
    visible.sort(key=lambda pair: (pair[1][1], pair[0][0] != "table", pair[0][1]))
    shown = visible[:limit]
    items = _details(graph, shown)
    groups: dict[str | None, list[ImpactItem]] = {}
    for item in items:
        groups.setdefault(item.owner, []).append(item)
    ordered = sorted(groups.items(), key=lambda group: (-len(group[1]), group[0] is None, group[0] or ""))
    return Impact(
        node=node_id,
        kind=kind,
        limit=limit,
        total=len(visible),
        total_bounded=bounded,
        truncated=bounded or len(shown) < len(visible),
        hidden=len(found) - len(visible),
        groups=[ImpactGroup(owner=owner, count=len(members), items=members) for owner, members in ordered],
    )


def _walk(graph: GraphStore, node_id: str, kind: Kind, found: dict, cap: int) -> bool:
    """Fill `found` ((kind, id) -> (via, hops)); True when `cap` stopped the walk."""
    bounded = False

    def room() -> int:
        return cap - len(found)

    if kind == "column":
        seeds, root_table = [node_id], None
    else:
        seeds = [r[0] for r in graph.read(queries.IMPACT_TABLE_COLUMNS, {"id": node_id, "cap": cap})]
        root_table = node_id
    columns: dict[str, int] = {}
    frontier, seen, hop = list(seeds), set(seeds), 0
    while frontier and not bounded:
        hop += 1
        most = room() + 1
        rows = graph.read(queries.IMPACT_COLUMN_HOP, {"ids": frontier, "cap": most})
        # a full answer may have left out new columns behind ones already seen
        bounded = len(rows) >= most
        following = []
        for (far,) in rows:
            if far in seen:
                continue
            if len(found) >= cap:
                bounded = True
                break
            seen.add(far)
            columns[far] = hop
            found[("column", far)] = ("flows_to", hop)
            following.append(far)
        frontier = following
    tables: dict[str, int] = {}
    for column, hops in columns.items():
        table = ids.parent(column)
        tables[table] = min(hops, tables.get(table, hops))
    if root_table is not None:
        frontier, hop, seen = [root_table], 0, {root_table}
        while frontier and not bounded:
            hop += 1
            rows = graph.read(queries.IMPACT_TABLE_HOP, {"ids": frontier, "cap": cap + 1})
            bounded = len(rows) > cap or len(tables) + len(rows) > cap
            frontier = [far for (far,) in rows if far not in seen]
            seen.update(frontier)
            for far in frontier:
                tables[far] = min(hop, tables.get(far, hop))
    for table, hops in sorted(tables.items(), key=lambda pair: pair[1]):
        if table == root_table:
            continue
        if len(found) >= cap:
            return True
        found[("table", table)] = ("flows_to", hops)
    sources = [(s, 0) for s in seeds] + sorted(columns.items(), key=lambda pair: pair[1])
    weak: dict[str, int] = {}
    for batch in _chunks(sources, _BATCH):
        hops_of = dict(batch)
        rows = graph.read(queries.IMPACT_INFLUENCED_TABLES, {"ids": list(hops_of), "cap": cap + 1})
        bounded = bounded or len(rows) > cap
        for source, table in rows:
            if table != root_table and ("table", table) not in found:
                weak[table] = min(hops_of[source] + 1, weak.get(table, hops_of[source] + 1))
    for table, hops in sorted(weak.items(), key=lambda pair: pair[1]):
        if len(found) >= cap:
            return True
        found[("table", table)] = ("influences", hops)
    return bounded


def _details(graph: GraphStore, shown: list) -> list[ImpactItem]:
    """The listed nodes with their table's owner, layer and retention and their own tags and advice."""
    reach = {key[1]: (key[0], via, hops) for key, (via, hops) in shown}
    rows: list[list] = []
    for kind, query in (("column", queries.IMPACT_COLUMN_DETAILS), ("table", queries.IMPACT_TABLE_DETAILS)):
        wanted = [key[1] for key, _ in shown if key[0] == kind]
        for batch in _chunks(wanted, _BATCH):
            rows += graph.read(query, {"ids": batch})
    items = []
    for node, tags, owner, layer, ttl_days, writers, ttl_status, recommended in rows:
        kind, via, hops = reach[node]
        writers = sorted(w for w in writers or [] if w)
        items.append(
            ImpactItem(
                id=node,
                kind=kind,
                via=via,
                hops=hops,
                owner=owner or (writers[0] if writers else None),
                owner_from="catalog" if owner else "task" if writers else None,
                layer=layer,
                tags={key: sorted(tag.values) for key, tag in sorted(decode_tags(tags).items())},
                ttl_days=ttl_days,
                ttl_status=ttl_status,
                ttl_days_recommended=recommended,
            )
        )
    items.sort(key=lambda item: (item.hops, item.kind != "table", item.id))
    return items


CSV_FIELDS = (
    "owner",
    "id",
    "kind",
    "via",
    "hops",
    "layer",
    "tags",
    "ttl_days",
    "ttl_status",
    "ttl_days_recommended",
)


def impact_csv(found: Impact) -> str:
    """The listed items as CSV, one row per node in group order (tags as key=value;key=value)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for group in found.groups:
        for item in group.items:
            tags = ";".join(f"{key}={value}" for key, values in item.tags.items() for value in values)
            writer.writerow(
                [
                    item.owner or "",
                    item.id,
                    item.kind,
                    item.via,
                    item.hops,
                    item.layer or "",
                    tags,
                    "" if item.ttl_days is None else item.ttl_days,
                    item.ttl_status or "",
                    "" if item.ttl_days_recommended is None else item.ttl_days_recommended,
                ]
            )
    return out.getvalue()


def _chunks(values: list, size: int) -> Iterable[list]:
    for start in range(0, len(values), size):
        yield values[start : start + size]
