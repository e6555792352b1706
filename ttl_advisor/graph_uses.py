"""The usage index and table facts read from the lineage graph (READS, FLOWS_TO, INFLUENCES).

Two ways to read them: the whole graph at once (`catalog_from_graph`, `index_graph`: tests and
small graphs), or one batch of tables at a time (`table_pages`, `read_batch`: what a run does,
see `ttl_advisor.batches`). A column's advice needs only its own table's facts, the edges leaving
the column, and the READS of the tasks at the other end of those edges into that table, so a
batch of tables with their columns (found by HAS_COLUMN: every Column node hangs off its table,
including columns only lineage mentions) gives exactly the advice the whole graph gives for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from watershed.graph import ids
from watershed.graph.catalog import Catalog, CatalogTable
from watershed.graph.lineage import Predicate, TableRead
from watershed.graph.store import GraphStore
from watershed.ttl_advisor.uses import UsageIndex

COLUMN_USES = "MATCH (s:Column)-[r:FLOWS_TO]->(t:Column) RETURN s.id, r.task, r.kind, t.table"
WEAK_USES = "MATCH (s:Column)-[r:INFLUENCES]->(t:Table) RETURN s.id, r.task, r.role, t.id"
READS = "MATCH (k:Task)-[r:READS]->(t:Table) RETURN k.id, t.id, r.predicates, r.partition_window, r.unparsed"
TABLES = (
    "MATCH (t:Table) OPTIONAL MATCH (t)-[:HAS_COLUMN]->(c:Column) "
    "RETURN t.id, t.ttl_days, t.partitioned_by, t.location, t.external_readers, collect(c.name)"
)

ANY_TABLE = "MATCH (t:Table) RETURN t.id LIMIT 1"
BATCH_TABLES = (
    "UNWIND $ids AS id MATCH (t:Table {id: id}) OPTIONAL MATCH (t)-[:HAS_COLUMN]->(c:Column) "
    "RETURN t.id, t.ttl_days, t.partitioned_by, t.location, t.external_readers, collect(c.name)"
)
BATCH_COLUMN_USES = (
    "UNWIND $ids AS id MATCH (:Table {id: id})-[:HAS_COLUMN]->(s:Column)-[r:FLOWS_TO]->(t:Column) "
    "RETURN s.id, r.task, r.kind, t.table"
)
BATCH_WEAK_USES = (
    "UNWIND $ids AS id MATCH (:Table {id: id})-[:HAS_COLUMN]->(s:Column)-[r:INFLUENCES]->(t:Table) "
    "RETURN s.id, r.task, r.role, t.id"
)
BATCH_READS = (
    "UNWIND $ids AS id MATCH (k:Task)-[r:READS]->(t:Table {id: id}) "
    "RETURN k.id, t.id, r.predicates, r.partition_window, r.unparsed"
)


@dataclass
class GraphBatch:
    """The facts of a batch of tables: their catalog entries and the uses of their columns."""

    tables: list[str]
    catalog: Catalog
    index: UsageIndex


def catalog_from_graph(store: GraphStore) -> Catalog:
    return _catalog(store.read(TABLES))


def index_graph(store: GraphStore, catalog: Catalog) -> UsageIndex:
    return _index(store.read(READS), store.read(COLUMN_USES), store.read(WEAK_USES), catalog)


def has_tables(store: GraphStore) -> bool:
    return bool(store.read(ANY_TABLE))


def table_pages(store: GraphStore, size: int) -> Iterator[list[str]]:
    """Every table id, in id order, `size` at a time (only the ids are read whole)."""
    if size < 1:
        raise ValueError(f"ttl_batch_tables must be 1 or more, not {size}")
    ordered = store.table_ids()
    for start in range(0, len(ordered), size):
        yield ordered[start : start + size]


def read_batch(store: GraphStore, table_ids: list[str]) -> GraphBatch:
    """The catalog entries of `table_ids` and the usage index of their columns (four reads)."""
    params = {"ids": list(table_ids)}
    catalog = _catalog(store.read(BATCH_TABLES, params))
    index = _index(
        store.read(BATCH_READS, params),
        store.read(BATCH_COLUMN_USES, params),
        store.read(BATCH_WEAK_USES, params),
        catalog,
    )
    return GraphBatch(tables=list(table_ids), catalog=catalog, index=index)


def _catalog(rows: Iterable[list[Any]]) -> Catalog:
    tables = {}
    for table_id, ttl_days, partitioned_by, location, readers, columns in rows:
        partitions = list(partitioned_by or [])
        tables[table_id] = CatalogTable(
            name=table_id,
            columns=[name for name in columns if name not in partitions],
            partitioned_by=partitions,
            ttl_days=ttl_days,
            location=location,
            external_readers=list(readers or []),
        )
    return Catalog(tables=tables)


def _in_order(rows: Iterable[list[Any]]) -> list[list[Any]]:
    # The graph returns edges in no set order, and a use's roles and targets keep the order they
    # were added in: sorted, a batch and the whole graph store the same evidence, run after run.
    return sorted(rows, key=lambda row: tuple("" if value is None else str(value) for value in row))


def _index(
    read_rows: Iterable[list[Any]],
    column_rows: Iterable[list[Any]],
    weak_rows: Iterable[list[Any]],
    catalog: Catalog,
) -> UsageIndex:
    reads: dict[tuple[str, str], TableRead] = {}
    for task_id, table, predicates, window, unparsed in _in_order(read_rows):
        entry = catalog.get(table)
        reads[(task_id, table)] = TableRead(
            table=table,
            predicates=[
                Predicate(column=text.split(" ", 1)[0], op="", text=text) for text in predicates or []
            ],
            partition_window_days=window,
            partition_columns=entry.partition_column_names if entry is not None else [],
            unparsed_partition_predicates=list(unparsed or []),
        )
    index = UsageIndex()
    for column, task_id, kind, target_table in _in_order(column_rows):
        index.add(column, task_id, f"value:{kind}", target_table, reads.get((task_id, ids.parent(column))))
    for column, task_id, role, target_table in _in_order(weak_rows):
        index.add(column, task_id, role, target_table, reads.get((task_id, ids.parent(column))))
    return index
