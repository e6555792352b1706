"""The usage index and table facts read from the lineage graph (READS, FLOWS_TO, INFLUENCES)."""

from __future__ import annotations

from watershed.graph import ids
from watershed.graph.catalog import Catalog, CatalogTable
from watershed.graph.lineage import Predicate, TableRead
from watershed.graph.store import GraphStore
from watershed.ttl_advisor.uses import UsageIndex

COLUMN_USES = "MATCH (s:Column)-[r:FLOWS_TO]->(t:Column) RETURN s.id, r.task, r.kind, t.table"
WEAK_USES = "MATCH (s:Column)-[r:INFLUENCES]->(t:Table) RETURN s.id, r.task, r.role, t.id"
READS = "MATCH (k:Task)-[r:READS]->(t:Table) RETURN k.id, t.id, r.predicates, r.partition_window, r.unparsed"
TABLES = "MATCH (t:Table) OPTIONAL MATCH (t)-[:HAS_COLUMN]->(c:Column) RETURN t.id, t.ttl_days, t.partitioned_by, t.location, collect(c.name)"


def catalog_from_graph(store: GraphStore) -> Catalog:
    tables = {}
    for table_id, ttl_days, partitioned_by, location, columns in store.read(TABLES):
        partitions = list(partitioned_by or [])
        tables[table_id] = CatalogTable(
            name=table_id,
            columns=[name for name in columns if name not in partitions],
            partitioned_by=partitions,
            ttl_days=ttl_days,
            location=location,
        )
    return Catalog(tables=tables)


def index_graph(store: GraphStore, catalog: Catalog) -> UsageIndex:
    reads: dict[tuple[str, str], TableRead] = {}
    for task_id, table, predicates, window, unparsed in store.read(READS):
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
    for column, task_id, kind, target_table in store.read(COLUMN_USES):
        index.add(column, task_id, f"value:{kind}", target_table, reads.get((task_id, ids.parent(column))))
    for column, task_id, role, target_table in store.read(WEAK_USES):
        index.add(column, task_id, role, target_table, reads.get((task_id, ids.parent(column))))
    return index
