"""What a check reads from the graph, in one batched read.

A check needs the catalog entries of the tables its query names, the current tags of those
tables and of the columns it reads, the user's grants and, for a denial's suggestions, the
admins. Read one kind at a time they were four round trips, most of a check with nothing
kept. The tags a check needs follow from its points, which need the entries first; so the
read brings, with each table's entry, the current tags of the table and of every one of its
columns (most carry none), and a check then needs nothing more of those tables. The parts are
one statement joined by UNION ALL (plain Cypher: the same text on FalkorDB and Neo4j); a
check asks only for the parts it has not kept. A view's definition names more tables, known
only once the view's entry is read: one more read per level of views.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from watershed.api.service.authz.grants import GRANT_FIELDS, admins, grant_of_row, user_grants
from watershed.graph.authz import Grant
from watershed.graph.catalog import CatalogTable
from watershed.graph.queries import CATALOG_ENTRY_FIELDS
from watershed.graph.store import GraphStore, catalog_entry
from watershed.propagation.graph_store import node_tags
from watershed.propagation.rules import TagValue

#: a node's own tags and blocks (`n`), as `propagation.queries.CURRENT_TAGS` reads them; a MATCH,
#: not an OPTIONAL MATCH per column, which on FalkorDB cost ten times the entries' read
_OWN = (
    "-[g:TAGGED|BLOCKS]->(x:Tag) WHERE type(g) = 'BLOCKS' OR g.origin <> 'propagated' "
    "RETURN 'own' AS kind, n.id AS id, [type(g), g.origin, x.key, x.value] AS fields, "
    "null AS columns, null AS tags"
)
#: rows: 'table', the table id, its `graph.queries.CATALOG_ENTRY_FIELDS`, its
#: columns [name, type, id, derived tags], its derived tags; then 'own' rows: a node of those
#: tables (the table or a column) and one of its own tags or blocks [type, origin, key, value]
TABLES_PART = (
    "UNWIND $tables AS id MATCH (t:Table {id: id}) OPTIONAL MATCH (t)-[:HAS_COLUMN]->(c:Column) "
    "WITH t, collect([c.name, c.type, c.id, c.tags]) AS columns "
    f"RETURN 'table' AS kind, t.id AS id, [{CATALOG_ENTRY_FIELDS}] AS fields, columns, t.tags AS tags "
    "UNION ALL UNWIND $tables AS id MATCH (n:Table {id: id})" + _OWN + " "
    "UNION ALL UNWIND $tables AS id MATCH (:Table {id: id})-[:HAS_COLUMN]->(n:Column)" + _OWN
)
#: rows: 'grant', the grant's id, its `GRANT_FIELDS`
GRANTS_PART = user_grants(
    f"'grant' AS kind, g.id AS id, [{GRANT_FIELDS}] AS fields, null AS columns, null AS tags"
)
#: rows: 'admin', the admin's name, [name, databases] as `grants.ADMINS` reads them
ADMINS_PART = admins(
    "'admin' AS kind, u.name AS id, [u.name, u.databases] AS fields, null AS columns, null AS tags"
)


@dataclass(frozen=True, slots=True)
class TableRead:
    """A table's catalog entry with the current tags of the table and its columns."""

    entry: CatalogTable
    #: the nodes read: the table and each of its columns
    nodes: frozenset[str]
    #: those of them with tags ({key: TagValue}), as `GraphTagStore.current_tags` answers
    tags: dict[str, dict[str, TagValue]]

    @property
    def weight(self) -> int:
        return len(self.entry.all_columns) + len(self.tags)


@dataclass(slots=True)
class CheckRead:
    #: every table asked for; None = the graph has no such table
    tables: dict[str, TableRead | None] = field(default_factory=dict)
    #: the user's grants by id; None = not asked for
    grants: list[Grant] | None = None
    #: the admins as `grants.ADMINS` rows (name, databases), by name; None = not asked for
    admins: list[list[Any]] | None = None


def read_for_check(
    graph: GraphStore, tables: Sequence[str], user: str | None = None, *, with_admins: bool = False
) -> CheckRead:
    """`tables`' entries and tags, `user`'s grants (None: not wanted) and the admins (if
    `with_admins`), in one read; nothing asked, no read."""
    parts: list[str] = []
    params: dict[str, Any] = {}
    if tables:
        parts.append(TABLES_PART)
        params["tables"] = list(dict.fromkeys(tables))
    if user is not None:
        parts.append(GRANTS_PART)
        params["user"] = user
    if with_admins:
        parts.append(ADMINS_PART)
    found = CheckRead(
        tables=dict.fromkeys(params.get("tables", ())),
        grants=[] if user is not None else None,
        admins=[] if with_admins else None,
    )
    if not parts:
        return found
    tables: list[tuple[str, list, list, str | None]] = []
    own: dict[str, list[list[Any]]] = {}
    for kind, id_, fields, columns, derived in graph.read(" UNION ALL ".join(parts), params):
        if kind == "table":
            tables.append((id_, fields, columns, derived))
        elif kind == "own":
            own.setdefault(id_, []).append(fields)
        elif kind == "grant":
            found.grants.append(grant_of_row(fields))
        else:
            found.admins.append(fields)
    for table, fields, columns, derived in tables:
        found.tables[table] = _table(table, fields, columns, derived, own)
    # in the order the single reads gave them: a decision's reasons and unmasks name the first
    if found.grants:
        found.grants.sort(key=lambda g: g.id)
    if found.admins:
        found.admins.sort(key=lambda a: a[0])
    return found


def _table(
    table: str, fields: list, columns: list, derived: str | None, own: dict[str, list[list[Any]]]
) -> TableRead:
    entry = catalog_entry([table, *fields, [(name, type_) for name, type_, *_ in columns]])
    nodes = {table}
    tags: dict[str, dict[str, TagValue]] = {}
    if found := node_tags(derived, own.get(table)):
        tags[table] = found
    for name, _, column, column_derived in columns:
        if name is None:
            continue  # a table without columns
        nodes.add(column)
        if found := node_tags(column_derived, own.get(column)):
            tags[column] = found
    return TableRead(entry, frozenset(nodes), tags)
