"""The `GraphStore` interface, and the loading logic both backends share.

A backend provides `read(query, params) -> rows` and `write_all(statements)`
(one transaction of several parameterised statements) plus its schema; they are
public for the layers that own their Cypher (propagation/queries.py, ttl_advisor);
the
task-level semantics live here:

- a task is loaded as a unit: if the stored version equals the new one
  nothing happens; otherwise the task's version is cleared, its old edges
  are deleted, the new ones created, and the version set last (see
  `queries.UNSET_TASK_VERSIONS`): a load cut short by a crash leaves a task
  without a version, which the next load replaces whatever it brings;
- deleting a task removes its edges and its Task node (Table and Column
  nodes stay: other tasks or later versions may refer to them).
"""

from __future__ import annotations

import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from watershed.graph import ids as node_ids
from watershed.graph import queries
from watershed.graph.catalog import Catalog, CatalogColumn, CatalogTable
from watershed.graph.lineage import SqlTask, TaskLineage
from watershed.graph.model import (
    ColumnProposal,
    Direction,
    DiscoveryFlag,
    GraphEdge,
    GraphNode,
    GraphStats,
    HarvestRun,
    Level,
    LineageDirection,
    LineageEdge,
    LineageNode,
    LineageSubgraph,
    LineageView,
    LoadResult,
)
from watershed.graph.rows import LoadRows

# One hop of a bounded lineage walk from a batch of nodes; rows: near id, far id, task, kind,
# functions, far type (columns) or layer (tables), far tags. FLOWS_TO joins nodes of one label only.
_HOP = {
    ("Column", "upstream"): "UNWIND $ids AS id MATCH (n:Column {id: id})<-[r:FLOWS_TO]-(o) ",
    ("Column", "downstream"): "UNWIND $ids AS id MATCH (n:Column {id: id})-[r:FLOWS_TO]->(o) ",
    ("Table", "upstream"): "UNWIND $ids AS id MATCH (n:Table {id: id})<-[r:FLOWS_TO]-(o) ",
    ("Table", "downstream"): "UNWIND $ids AS id MATCH (n:Table {id: id})-[r:FLOWS_TO]->(o) ",
}
_HOP_RETURN = {
    "Column": "WHERE $kinds IS NULL OR r.kind IN $kinds "
    "RETURN n.id, o.id, r.task, r.kind, r.functions, o.tags LIMIT $cap",
    "Table": "RETURN n.id, o.id, r.task, null AS kind, null AS functions, o.tags LIMIT $cap",
}
_ROOT = {
    "Column": "MATCH (n:Column {id: $id}) RETURN n.tags",
    "Table": "MATCH (n:Table {id: $id}) RETURN n.tags",
}

#: the change stamp every write through `execute` and `write_all` moves (graph.kept)
DATA_STAMP = "data"

#: catalog tables written per transaction by `upsert_catalog` (as a harvest sends them: its
#: `harvest_catalog_tables`): a whole large catalog in one transaction outgrows a server's
#: transaction memory (Neo4j's `dbms.memory.transaction.total.max`, 70 % of its heap, refused a
#: 1,000,000-column catalog with a 4 GB heap)
CATALOG_TABLES_PER_WRITE = 2000
#: what of a query word the description index is asked for: its first run of letters, digits and
#: `_`, which neither index's query syntax gives a meaning to (lowercased, so Lucene's AND/OR/NOT
#: stay words), and which starts a word of the description in both indexes' tokenizers
_INDEX_WORD = re.compile(r"\w+")


def description_terms(words: Sequence[str]) -> list[str]:
    """The prefixes the description index is asked for, one per query word holding a letter or digit."""
    found = (_INDEX_WORD.search(word.lower()) for word in words)
    return [match.group() for match in found if match]


def chunks(rows: Sequence[dict], size: int) -> Iterable[Sequence[dict]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def catalog_entry(row: Sequence[Any]) -> CatalogTable:
    """A table's catalog entry from a row of `queries.CATALOG_ENTRIES` (see
    `GraphStore.catalog_entries`); a reader that fetches the entry with more in one statement
    (the gateway's check) builds it from the same fields."""
    table_id, format_, location, owner, layer, ttl_days, partitioned, order, view_sql, dialect = row[:10]
    readers = list(row[10] or [])
    types = {name: type_ for name, type_ in row[11] if name is not None}
    names = list(dict.fromkeys([*(order or []), *sorted(types)]))
    partition_names = list(partitioned or [])
    partitions = set(partition_names)

    def column(name: str) -> CatalogColumn:
        return CatalogColumn(name=name, type=types.get(name) or "string")

    return CatalogTable(
        name=table_id,
        columns=[column(n) for n in names if n not in partitions],
        partitioned_by=[column(n) for n in partition_names],
        format=format_,
        location=location,
        owner=owner,
        layer=layer,
        ttl_days=ttl_days,
        view_sql=view_sql,
        view_dialect=dialect,
        external_readers=readers,
        # by name unless column_order lists every column the graph has
        columns_ordered=bool(order) and set(order) >= {*types, *partitions},
    )


class GraphStore(ABC):
    batch_size: int = 5000
    #: Column ids this store has written or found in the graph. Columns are never deleted
    #: (only `clear` empties the graph, and it forgets them), so task loads skip the
    #: existence check for these; in a harvest, `upsert_catalog` fills it up front.
    _known_columns: set[str]

    # ------------------------------------------------------------ backend

    @abstractmethod
    def read(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """Run one read query; rows as lists."""

    @abstractmethod
    def write_all(self, statements: list[tuple[str, dict[str, Any]]]) -> None:
        """Run several write statements as one unit (a transaction where the backend has them).
        A backend with stamps moves the data stamp after them (`graph.kept.DATA_STAMP`), even when
        one fails: what they wrote must not stay hidden behind values kept from before (a backend
        whose failed transaction writes nothing may move it inside the transaction instead)."""

    @abstractmethod
    def execute(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """Run one write statement atomically and return its rows (conditional writes report what
        they did); the data stamp moves after it as after `write_all`."""

    def record(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """Run one write of what nothing kept under the data stamp reads (a decision's audit entry,
        API tokens and browser sessions, which the accounts stamp covers): as `execute`, but the
        data stamp stays, so a check's own audit entry, or a login, does not make the next check
        in every process read everything again."""
        return self.execute(query, params)

    def queue_record(
        self,
        statement: str,
        row: dict[str, Any],
        *,
        stamp_name: str = DATA_STAMP,
        stamp: str | None = None,
    ) -> str | None:
        """Have `record(statement, {"rows": [row]})` run: durably queued before this returns where
        the backend has a queue (FalkorDB), run at once elsewhere. `statement` writes each row of
        `$rows`; queued rows of one statement are written together by `run_queued`, and only
        then can be read. It must be idempotent (a MERGE on an id): a run cut short runs again.

        With `stamp`, only while `stamp_name`'s stamp is still `stamp`: a caller that decided
        under values kept under that stamp has its record written only if they were still
        current. Returns None when the record is written or queued, else the stamp now, with
        nothing written."""
        if stamp is not None:
            now = self.change_stamp(stamp_name)
            if now != stamp:
                return now
        self.record(statement, {"rows": [row]})
        return None

    def run_queued(self) -> int:
        """Write every row `queue_record` queued, oldest first; how many. A reader of what queued
        records write calls it first."""
        return 0

    def ping(self) -> None:
        """Raise when the graph does not answer (a server down, wrong credentials)."""
        self.read("RETURN 1")

    @abstractmethod
    def ensure_schema(self) -> None:
        """Create the indexes/constraints the queries rely on (idempotent)."""

    @abstractmethod
    def clear(self) -> None:
        """Delete the whole graph (tests, benchmarks)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        pass

    # ------------------------------------------------------------ change stamps

    def change_stamp(self, name: str) -> str | None:
        """A value that moves whenever `restamp(name)` runs or the graph is cleared; None when this
        backend keeps no stamps (then a reader must read afresh every time).

        A process may keep what it read under a stamp for as long as the stamp is unchanged; the
        stamp is read in one cheap round trip outside the graph's query threads.
        """
        return None

    def restamp(self, name: str) -> None:  # noqa: B027 - optional hook
        """Move `name`'s stamp after a change to what it covers (a no-op without stamps)."""

    # ------------------------------------------------------------- writes

    def table_ids(self) -> list[str]:
        """Every table id, sorted here. Batches of a whole-graph pass page through this list:
        FalkorDB's indexed `t.id > $after` does not order strings as ORDER BY does (non-ASCII ids,
        case twins such as `path:` tables), so keyset pages in the graph skipped or repeated
        tables; the ids alone are a few MB at 65,000 tables."""
        return sorted({row[0] for row in self.read(queries.TABLE_IDS) if row[0] is not None})

    def stored_versions(self, task_ids: Sequence[str]) -> dict[str, str]:
        rows = self.read(queries.TASK_VERSIONS, {"ids": list(task_ids)})
        return {row[0]: row[1] for row in rows}

    def upsert_tasks(
        self,
        items: Iterable[tuple[SqlTask, TaskLineage | Callable[[], TaskLineage]]],
        catalog: Catalog | None = None,
        *,
        seen_at: str | None = None,
        also: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> LoadResult:
        """Load many tasks' lineage; each task replaces its previous version as a unit.

        A task's lineage may come as a function returning it, called only when the task's version
        changed: the harvest then decodes an executor's result only for a task it loads.

        Every task, loaded or unchanged, gets its `source` (when it names one: the later load
        takes a task over from another source) and `seen_at` (UTC ISO text, default now): an
        unchanged task costs one cheap statement for the batch, not a reload.

        `also`: statements written in the same unit, after the load (the OpenLineage intake's run
        state and audit entry): one round trip, and no crash between the load and them.
        """
        began = time.monotonic()
        items = list(items)
        stored = {
            row[0]: (row[1], row[2])
            for row in self.read(
                queries.TASK_VERSIONS_AND_SOURCES, {"ids": [task.task_id for task, _ in items]}
            )
        }
        at = seen_at or datetime.now(UTC).isoformat(timespec="seconds")
        rows = LoadRows()
        changed: list[str] = []
        touched: list[list[Any]] = []
        taken_over: list[str] = []
        unchanged = 0
        seen: set[str] = set()
        for task, lineage in items:
            if task.task_id in seen:
                continue
            seen.add(task.task_id)
            touched.append([task.task_id, task.source, at])
            version, source = stored.get(task.task_id, (None, None))
            if task.source is not None and source is not None and source != task.source:
                taken_over.append(task.task_id)
            if version is not None and version == task.effective_version:
                unchanged += 1
                continue
            changed.append(task.task_id)
            rows.add(task, lineage() if callable(lineage) else lineage, catalog)
        touches = [(queries.TOUCH_TASKS, {"rows": list(batch)}) for batch in chunks(touched, self.batch_size)]
        if changed:
            known = self.known_columns()
            new_columns = {i: row for i, row in rows.columns.items() if i not in known}
            rows.columns = new_columns
            self.write_all(self._load_statements(changed, rows) + touches + list(also))
            known.update(new_columns)
        elif touches or also:
            self.write_all(touches + list(also))
        return LoadResult(
            loaded=len(changed),
            unchanged=unchanged,
            column_edges=len(rows.column_edges),
            weak_edges=len(rows.weak_edges),
            table_edges=len(rows.table_edges),
            seconds=time.monotonic() - began,
            taken_over=taken_over,
        )

    def upsert_catalog(self, catalog: Catalog) -> int:
        """Create the catalog's tables and columns (with their properties) ahead of the tasks' lineage.

        Optional: task loads create the nodes they need. A harvest knows its
        catalog before it extracts anything, and with the nodes in place the
        task loads only match them by id and create edges. Returns the number
        of column rows sent.

        One transaction per `CATALOG_TABLES_PER_WRITE` tables; each is idempotent (MERGEs and
        creates of what is missing), so a load cut between two converges when it is repeated.
        """
        names = list(catalog.tables)
        if len(names) > CATALOG_TABLES_PER_WRITE:
            sent = 0
            for step in chunks(names, CATALOG_TABLES_PER_WRITE):
                part = Catalog.model_construct(
                    default_database=catalog.default_database,
                    tables={name: catalog.tables[name] for name in step},
                )
                sent += self.upsert_catalog(part)
            return sent
        rows = LoadRows()
        for table_id, entry in catalog.tables.items():
            rows.add_table(table_id, catalog)
            for name in entry.all_columns:
                rows.add_column(node_ids.child(table_id, name), catalog)
        statements: list[tuple[str, dict[str, Any]]] = []
        for query, data in (
            (queries.MERGE_TABLES, list(rows.tables.values())),
            (queries.CREATE_MISSING_COLUMNS, list(rows.columns.values())),
            (queries.SET_COLUMN_TYPES, [c for c in rows.columns.values() if c[3] is not None]),
            (queries.SET_COLUMN_DESCRIPTIONS, [c for c in rows.columns.values() if c[4] is not None]),
        ):
            statements += [(query, {"rows": list(batch)}) for batch in chunks(data, self.batch_size)]
        if statements:
            self.write_all(statements)
        self.known_columns().update(rows.columns)
        return len(rows.columns)

    def known_columns(self) -> set[str]:
        if not hasattr(self, "_known_columns"):
            self._known_columns = set()
        return self._known_columns

    def forget_columns(self) -> None:
        """Drop the cache of known columns (after the graph was emptied)."""
        self._known_columns = set()

    def _load_statements(self, task_ids: list[str], rows: LoadRows) -> list[tuple[str, dict[str, Any]]]:
        statements: list[tuple[str, dict[str, Any]]] = []
        for ids in chunks(task_ids, self.batch_size):
            ids = list(ids)
            statements += [
                (queries.UNSET_TASK_VERSIONS, {"ids": ids}),
                (queries.MARK_TASK_WRITES_CHANGED, {"ids": ids}),
                *[(query, {"ids": ids}) for query in queries.MARK_TASK_USES_CHANGED],
                (queries.DELETE_TASK_COLUMN_EDGES, {"ids": ids}),
                (queries.DELETE_TASK_TABLE_EDGES, {"ids": ids}),
                (queries.DELETE_TASK_OWN_EDGES, {"ids": ids}),
            ]
        for query, data in (
            (queries.MERGE_TABLES, list(rows.tables.values())),
            (queries.CREATE_MISSING_COLUMNS, list(rows.columns.values())),
            (queries.SET_COLUMN_TYPES, [c for c in rows.columns.values() if c[3] is not None]),
            (queries.SET_COLUMN_DESCRIPTIONS, [c for c in rows.columns.values() if c[4] is not None]),
            (queries.MERGE_TASKS, rows.tasks),
            (queries.CREATE_READS, rows.reads),
            (queries.CREATE_WRITES, rows.writes),
            (queries.CREATE_COLUMN_EDGES, rows.column_edges),
            (queries.CREATE_WEAK_EDGES, rows.weak_edges),
            (queries.CREATE_TABLE_EDGES, rows.table_edges),
        ):
            statements += [(query, {"rows": list(batch)}) for batch in chunks(data, self.batch_size)]
        # the tables whose columns the new versions use: their TTL advice is recomputed
        used = sorted(
            {row[1] for row in rows.reads}
            | {node_ids.parent(row[0]) for row in [*rows.column_edges, *rows.weak_edges]}
        )
        for batch in chunks(used, self.batch_size):
            statements.append((queries.MARK_TABLES_USES_CHANGED, {"ids": list(batch)}))
        for batch in chunks(rows.tasks, self.batch_size):
            statements.append((queries.SET_TASK_VERSIONS, {"rows": list(batch)}))
        return statements

    def delete_tasks(self, task_ids: Sequence[str]) -> None:
        ids = list(task_ids)
        # Idempotent after a crash at any statement: the version goes first, so a Task node
        # left behind without its edges is reloaded (never "unchanged") if the task comes back.
        self.write_all(
            [
                (queries.UNSET_TASK_VERSIONS, {"ids": ids}),
                (queries.MARK_TASK_WRITES_CHANGED, {"ids": ids}),
                *[(query, {"ids": ids}) for query in queries.MARK_TASK_USES_CHANGED],
                (queries.DELETE_TASK_COLUMN_EDGES, {"ids": ids}),
                (queries.DELETE_TASK_TABLE_EDGES, {"ids": ids}),
                (queries.DELETE_TASK_OWN_EDGES, {"ids": ids}),
                (queries.DELETE_TASK_NODES, {"ids": ids}),
            ]
        )

    def task_ids(self) -> list[str]:
        return [row[0] for row in self.read(queries.TASK_IDS)]

    def task_ids_of_source(self, source: str | None) -> list[str]:
        """The ids of the tasks `source` last loaded; None: of the tasks loaded before sources existed."""
        if source is None:
            return [row[0] for row in self.read(queries.SOURCELESS_TASK_IDS)]
        return [row[0] for row in self.read(queries.TASK_IDS_OF_SOURCE, {"source": source})]

    def adopt_tasks(self, task_ids: Sequence[str], source: str) -> None:
        """Give the source-less tasks among `task_ids` to `source` (tasks with a source keep it)."""
        ids = list(task_ids)
        if ids:
            self.write_all(
                [
                    (queries.ADOPT_TASKS, {"ids": list(batch), "source": source})
                    for batch in chunks(ids, self.batch_size)
                ]
            )

    def record_run(self, run: HarvestRun) -> None:
        self.write_all([(queries.RECORD_RUN, run.model_dump())])

    # -------------------------------------------------------------- reads

    def lineage(
        self, node_id: str, direction: Direction, depth: int = 10, level: Level = "column"
    ) -> LineageSubgraph:
        """The node's lineage within `depth` hops: every FLOWS_TO edge on such a path, with its nodes.

        An unknown node gives an empty subgraph (no nodes).
        """
        label = "Column" if level == "column" else "Table"
        node_types: dict[str, str | None] = {}
        edges: list[GraphEdge] = []
        for source, node_type, target, task, kind, key, functions in self._lineage_rows(
            label, direction, depth, node_id
        ):
            if target is None:  # the root's own row
                node_types.setdefault(source, node_type)
                continue
            node_types[source if direction == "upstream" else target] = node_type
            properties: dict[str, Any] = {"task": task}
            if kind is not None:
                properties["kind"] = kind
                properties["functions"] = list(functions or [])
            if key:
                properties["key"] = key
            edges.append(GraphEdge(source=source, target=target, type="FLOWS_TO", properties=properties))
        if level == "column":
            # Column properties are its id, its table and name (both parts of the id) and its type.
            nodes = [
                GraphNode(
                    id=i,
                    label="Column",
                    properties={"id": i, "table": node_ids.parent(i), "name": node_ids.name(i)}
                    | ({"type": t} if t is not None else {}),
                )
                for i, t in sorted(node_types.items())
            ]
        else:
            nodes = self.nodes(sorted(node_types))
        return LineageSubgraph(
            root=node_id, direction=direction, level=level, depth=depth, nodes=nodes, edges=edges
        )

    def bounded_lineage(
        self,
        node_id: str,
        direction: LineageDirection,
        depth: int = 3,
        limit: int = 500,
        level: Level = "column",
        kinds: Sequence[str] | None = None,
    ) -> LineageView | None:
        """The node's lineage hop by hop (breadth first), stopping once `limit` nodes are in: never unbounded.

        One round trip per hop and direction, each capped by LIMIT; an edge whose far node would
        exceed the limit is left out and the answer says `truncated`. `kinds` keeps only column
        edges of those transform kinds. None when the node does not exist.
        """
        label = "Column" if level == "column" else "Table"
        root = self.read(_ROOT[label], {"id": node_id})
        if not root:
            return None
        nodes = {node_id: LineageNode.at(node_id, label, root[0][0])}
        edges: dict[tuple, LineageEdge] = {}
        truncated = False
        # Each hop fetches at most this many edges: enough for every kept node to bring several.
        cap = limit * 4 + 1
        walks: list[Direction] = ["upstream", "downstream"] if direction == "both" else [direction]
        for walk in walks:
            frontier = [node_id]
            query = _HOP[(label, walk)] + _HOP_RETURN[label]
            for _ in range(depth):
                if not frontier:
                    break
                rows = self.read(
                    query, {"ids": frontier, "kinds": list(kinds) if kinds else None, "cap": cap}
                )
                frontier, cut = self._lineage_hop(rows, walk, label, limit, cap, nodes, edges)
                truncated = truncated or cut
        return LineageView(
            root=node_id,
            direction=direction,
            level=level,
            depth=depth,
            nodes=list(nodes.values()),
            edges=list(edges.values()),
            truncated=truncated,
        )

    @staticmethod
    def _lineage_hop(
        rows: list[list[Any]],
        walk: Direction,
        label: str,
        limit: int,
        cap: int,
        nodes: dict[str, LineageNode],
        edges: dict[tuple, LineageEdge],
    ) -> tuple[list[str], bool]:
        """One hop's rows (a `_HOP` query's, in its order) taken into `nodes` and `edges`: the next
        hop's frontier (the far nodes new to `nodes`, while fewer than `limit`), and whether the
        hop was cut (its rows reached `cap`, or a new far node found no room)."""
        truncated = len(rows) >= cap
        following: list[str] = []
        for near, far, task, kind, functions, far_tags in rows:
            if far not in nodes:
                if len(nodes) >= limit:
                    truncated = True
                    continue
                nodes[far] = LineageNode.at(far, label, far_tags)
                following.append(far)
            source, target = (far, near) if walk == "upstream" else (near, far)
            edges.setdefault(
                (source, target, task, kind),
                LineageEdge(
                    source=source, target=target, kind=kind, task=task, functions=list(functions or [])
                ),
            )
        return following, truncated

    def _lineage_rows(self, label: str, direction: str, depth: int, node_id: str) -> list[tuple]:
        """(source, far node type, target, task, kind, key, functions) rows; the root's row has no target."""
        return [
            tuple(row)
            for row in self.read(queries.lineage_subgraph(label, direction, depth), {"id": node_id})
        ]

    def catalog_entries(self, table_ids: Sequence[str]) -> dict[str, CatalogTable]:
        """The catalog entries of the known tables among `table_ids` (unknown ids are absent).

        Columns in `column_order` (the catalog's order, data then partition columns) when the
        graph has it, then any other column of the table by name; partition columns are those
        of `partitioned_by`; `columns_ordered` is False unless `column_order` covers every
        column. A column whose type the graph does not know reads as `string` (the catalog's
        default). One read per `batch_size` ids.
        """
        entries: dict[str, CatalogTable] = {}
        wanted = list(dict.fromkeys(table_ids))
        for batch in chunks(wanted, self.batch_size):
            for row in self.read(queries.CATALOG_ENTRIES, {"ids": list(batch)}):
                entries[row[0]] = catalog_entry(row)
        return entries

    def nodes(self, ids: Sequence[str]) -> list[GraphNode]:
        rows = self.read(queries.NODE_PROPERTIES, {"ids": list(ids)})
        return [GraphNode(id=i, label=label, properties=dict(p or {})) for i, label, p in rows]

    def neighbours(self, ids: Sequence[str], direction: Direction) -> dict[str, list[GraphEdge]]:
        """Incoming (upstream) or outgoing (downstream) lineage edges of a batch of nodes, in one round trip."""
        query = queries.NEIGHBOURS_IN if direction == "upstream" else queries.NEIGHBOURS_OUT
        out: dict[str, list[GraphEdge]] = {i: [] for i in ids}
        for node, other, rel_type, props in self.read(query, {"ids": list(ids)}):
            if direction == "upstream":
                edge = GraphEdge(source=other, target=node, type=rel_type, properties=dict(props or {}))
            else:
                edge = GraphEdge(source=node, target=other, type=rel_type, properties=dict(props or {}))
            out[node].append(edge)
        return out

    def search(self, prefix: str, limit: int = 50) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for label in ("Table", "Column"):
            rows = self.read(queries.SEARCH.format(label=label), {"prefix": prefix.lower(), "limit": limit})
            found += [(row[0], row[1]) for row in rows]
        return sorted(found)[:limit]

    @abstractmethod
    def description_matches(self, label: str, words: Sequence[str], skip: int, limit: int) -> list[str]:
        """Ids of `label` nodes (Table or Column) whose description (the shown one) has, for each
        query word, a word starting with its `description_terms` prefix: the graph's full-text
        index, in its own order (stable while the graph is), from `skip`, at most `limit`; none
        when no word holds a letter or digit. The caller checks the words themselves."""

    @abstractmethod
    def id_word_matches(
        self, label: str, words: Sequence[str], skip: int, limit: int, near: Sequence[str] = ()
    ) -> list[str]:
        """Ids of `label` nodes (Table or Column) whose id has, for each query word, a word starting
        with its `description_terms` prefix: the graph's full-text index on `id_words` (the id cut
        at `queries.ID_WORD_SEPARATORS`, set by every write that creates the node), in its own order
        from `skip`, at most `limit`; none when no word holds a letter or digit. With `near` (words
        of letters and digits: search's typo stage), also, for each, a whole word at most one edit
        from it (a character added, dropped or changed; Neo4j's index also counts two neighbours
        swapped as one). The caller checks the words themselves."""

    def stats(self) -> GraphStats:
        return GraphStats(**{name: self.read(query)[0][0] for name, query in queries.STATS.items()})

    # ------------------------------------------------------------ discovery

    def root_table_ids(self) -> list[str]:
        """Tables with a location and no table upstream: what discovery samples to find seeds."""
        return sorted(row[0] for row in self.read(queries.ROOT_TABLE_IDS))

    def located_table_ids(self) -> list[str]:
        """Every table with a location, roots and derived: what discovery samples to check tags."""
        return sorted(row[0] for row in self.read(queries.LOCATED_TABLE_IDS))

    def discovery_fingerprints(self, table_ids: Sequence[str]) -> dict[str, str]:
        """The files' fingerprint each table was last sampled under (tables never sampled are absent)."""
        found: dict[str, str] = {}
        for batch in chunks(list(table_ids), self.batch_size):
            found.update({row[0]: row[1] for row in self.read(queries.DISCOVERY_SCANS, {"ids": list(batch)})})
        return found

    def discovery_proposals_of(self, column_ids: Sequence[str]) -> dict[str, ColumnProposal]:
        found: dict[str, ColumnProposal] = {}
        for batch in chunks(list(column_ids), self.batch_size):
            for row in self.read(queries.DISCOVERY_PROPOSALS_OF, {"ids": list(batch)}):
                found[row[0]] = _proposal(row)
        return found

    def discovery_proposals(
        self,
        *,
        status: str | None = None,
        table: str | None = None,
        after: str | None = None,
        limit: int = 50,
    ) -> list[ColumnProposal]:
        """Proposals in column id order after `after`, at most `limit`."""
        rows = self.read(
            queries.DISCOVERY_PROPOSALS,
            {"after": after or "", "status": status, "table": table, "limit": limit},
        )
        return [_proposal(row) for row in rows]

    def discovery_flags(
        self,
        *,
        kind: str | None = None,
        table: str | None = None,
        column: str | None = None,
        after: str | None = None,
        limit: int = 50,
    ) -> list[DiscoveryFlag]:
        """Leak and over-tag flags in column id order after `after`, at most `limit`."""
        rows = self.read(
            queries.DISCOVERY_FLAGS,
            {"after": after or "", "kind": kind, "table": table, "column": column, "limit": limit},
        )
        return [DiscoveryFlag.model_validate_json(row[0]) for row in rows]

    @staticmethod
    def discovery_statements(
        scans: Sequence[dict[str, Any]],
        proposals: Sequence[ColumnProposal],
        withdrawn: Sequence[str],
        flags: dict[str, Sequence[DiscoveryFlag]] | None = None,
    ) -> list[tuple[str, dict[str, Any]]]:
        """What one discovery writes: each table's scan (id, fingerprint, at, run, protected), its
        proposals, the open proposals its sample no longer supports, and (`flags`: table -> its
        flags now) the flags of each table, replacing its earlier ones; for one `write_all` with
        the audit entry."""
        statements: list[tuple[str, dict[str, Any]]] = []
        if flags is not None:
            statements.append((queries.DELETE_TABLE_DISCOVERY_FLAGS, {"tables": sorted(flags)}))
            rows = [
                {"id": f.column, "table": f.table, "kind": f.kind, "record": f.model_dump_json()}
                for table_flags in flags.values()
                for f in table_flags
            ]
            if rows:
                statements.append((queries.MERGE_DISCOVERY_FLAGS, {"rows": rows}))
        if scans:
            statements.append((queries.MERGE_DISCOVERY_SCANS, {"rows": list(scans)}))
        if proposals:
            rows = [
                {
                    "id": p.column,
                    "table": p.table,
                    "tags": json.dumps(p.tags, sort_keys=True),
                    "confidence": p.confidence,
                    "sampled": p.sampled,
                    "evidence": p.evidence.model_dump_json(),
                    "content": p.content,
                    "status": p.status,
                    "at": p.at,
                    "by": p.by,
                    "run": p.run,
                }
                for p in proposals
            ]
            statements.append((queries.MERGE_DISCOVERY_PROPOSALS, {"rows": rows}))
        if withdrawn:
            statements.append((queries.DELETE_DISCOVERY_PROPOSALS, {"ids": list(withdrawn)}))
        return statements

    @staticmethod
    def decide_proposal_statement(column: str, status: str, by: str, at: str) -> tuple[str, dict[str, Any]]:
        return queries.DECIDE_DISCOVERY_PROPOSAL, {"id": column, "status": status, "by": by, "at": at}


def _proposal(row: Sequence[Any]) -> ColumnProposal:
    column, table, tags, confidence, sampled, evidence, content, status, at, by, run = row
    return ColumnProposal(
        column=column,
        table=table,
        tags=json.loads(tags) if tags else {},
        confidence=confidence,
        sampled=sampled,
        evidence=json.loads(evidence) if evidence else {},
        content=content,
        status=status,
        at=at,
        by=by,
        run=run,
    )
