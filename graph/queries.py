"""Cypher shared by the FalkorDB and Neo4j backends (the subset both accept).

Schema statements (indexes, constraints) differ per backend and live there.
"""

from __future__ import annotations

TASK_IDS = "MATCH (k:Task) RETURN k.id"
TASK_VERSIONS = "UNWIND $ids AS id MATCH (k:Task {id: id}) RETURN k.id, k.version"

# A task's edges all end at a table it writes (or its columns), or start at the task itself:
# deleting them from there never scans the whole graph.
DELETE_TASK_COLUMN_EDGES = (
    "UNWIND $ids AS id MATCH (k:Task {id: id})-[:WRITES]->(:Table)-[:HAS_COLUMN]->(:Column)<-[r:FLOWS_TO]-(:Column) "
    "WHERE r.task = id DELETE r"
)
DELETE_TASK_TABLE_EDGES = (
    "UNWIND $ids AS id MATCH (k:Task {id: id})-[:WRITES]->(:Table)<-[r:INFLUENCES|FLOWS_TO]-() "
    "WHERE r.task = id DELETE r"
)
DELETE_TASK_OWN_EDGES = "UNWIND $ids AS id MATCH (k:Task {id: id})-[r:READS|WRITES]->() DELETE r"
DELETE_TASK_NODES = "UNWIND $ids AS id MATCH (k:Task {id: id}) DELETE k"

MERGE_TABLES = (
    "UNWIND $rows AS r MERGE (t:Table {id: r.id}) "
    "SET t.db = r.db, t.name = r.name, t.format = r.format, t.location = r.location, "
    "t.owner = r.owner, t.layer = r.layer, t.ttl_days = r.ttl_days, "
    "t.partitioned_by = coalesce(r.partitioned_by, t.partitioned_by)"
)
MERGE_COLUMNS = (
    "UNWIND $rows AS r MATCH (t:Table {id: r.table}) MERGE (c:Column {id: r.id}) "
    "SET c.table = r.table, c.name = r.name, c.type = r.type MERGE (t)-[:HAS_COLUMN]->(c)"
)
MERGE_TASKS = (
    "UNWIND $rows AS r MERGE (k:Task {id: r.id}) "
    "SET k.version = r.version, k.sql_hash = r.sql_hash, k.owner = r.owner, k.schedule = r.schedule, "
    "k.dialect = r.dialect, k.errors = r.errors"
)
# Edges of a (re)loaded task version are created, not merged: its old edges were deleted first.
CREATE_COLUMN_EDGES = (
    "UNWIND $rows AS r MATCH (a:Column {id: r.s}) MATCH (b:Column {id: r.t}) "
    "CREATE (a)-[:FLOWS_TO {task: r.task, kind: r.kind, functions: r.functions, key: r.key}]->(b)"
)
CREATE_WEAK_EDGES = (
    "UNWIND $rows AS r MATCH (a:Column {id: r.s}) MATCH (b:Table {id: r.t}) "
    "CREATE (a)-[:INFLUENCES {task: r.task, role: r.role}]->(b)"
)
CREATE_TABLE_EDGES = "UNWIND $rows AS r MATCH (a:Table {id: r.s}) MATCH (b:Table {id: r.t}) CREATE (a)-[:FLOWS_TO {task: r.task}]->(b)"
CREATE_READS = (
    "UNWIND $rows AS r MATCH (k:Task {id: r.task}) MATCH (t:Table {id: r.table}) "
    "CREATE (k)-[:READS {predicates: r.predicates, partition_window: r.window, unparsed: r.unparsed}]->(t)"
)
CREATE_WRITES = (
    "UNWIND $rows AS r MATCH (k:Task {id: r.task}) MATCH (t:Table {id: r.table}) CREATE (k)-[:WRITES]->(t)"
)


def _pattern(label: str, direction: str, depth: int) -> str:
    if not 1 <= depth <= 100:
        raise ValueError(f"depth must be between 1 and 100, got {depth}")
    if direction == "upstream":
        return f"(n:{label})-[:FLOWS_TO*1..{depth}]->(root)"
    return f"(root)-[:FLOWS_TO*1..{depth}]->(n:{label})"


def lineage_subgraph(label: str, direction: str, depth: int, packed: bool = False) -> str:
    """Every FLOWS_TO edge touching the nodes within `depth` hops of one node, in one traversal.

    The reached nodes are found first as a distinct set (asking for paths
    would enumerate every path of a diamond-shaped lineage: exponential), then
    each is expanded by one hop; the caller keeps the edges whose other end is
    in the subgraph. `WITH DISTINCT` makes the plan start from the indexed
    root. With `packed`, ids, task, kind and key come as one tab-separated
    string per edge: FalkorDB's Python client decodes typed values slowly.
    """
    if direction == "upstream":
        expand = "MATCH (n)-[r:FLOWS_TO]->(m:{label})"
    else:
        expand = "MATCH (m:{label})-[r:FLOWS_TO]->(n)"
    head = (
        f"MATCH (root:{{label}} {{{{id: $id}}}}) WITH DISTINCT root MATCH {_pattern(label, direction, depth)} "
        f"WITH DISTINCT n {expand} "
    ).format(label=label)
    if direction == "upstream":
        ends = "n.id + '\\t' + m.id"
        plain = "n.id, m.id"
    else:
        ends = "m.id + '\\t' + n.id"
        plain = "m.id, n.id"
    if packed:
        return (
            head
            + f"RETURN {ends} + '\\t' + coalesce(r.task, '') + '\\t' + coalesce(r.kind, '') + '\\t' + coalesce(r.key, ''), r.functions"
        )
    return head + f"RETURN {plain}, r.task, r.kind, r.key, r.functions"


def lineage_count(label: str, direction: str, depth: int) -> str:
    """The bare count over the same traversal (the baseline of the query benchmark)."""
    return f"MATCH (root:{label} {{id: $id}}) WITH DISTINCT root MATCH {_pattern(label, direction, depth)} RETURN count(DISTINCT n)"


NODE_PROPERTIES = "UNWIND $ids AS id MATCH (n {id: id}) RETURN n.id, labels(n)[0], properties(n)"

NEIGHBOURS_IN = (
    "UNWIND $ids AS id MATCH (n {id: id})<-[r:FLOWS_TO|INFLUENCES]-(s) "
    "RETURN n.id, s.id, type(r), properties(r)"
)
NEIGHBOURS_OUT = (
    "UNWIND $ids AS id MATCH (n {id: id})-[r:FLOWS_TO|INFLUENCES]->(t) "
    "RETURN n.id, t.id, type(r), properties(r)"
)

SEARCH = (
    "MATCH (n:{label}) WHERE n.id STARTS WITH $prefix RETURN n.id, labels(n)[0] ORDER BY n.id LIMIT $limit"
)

STATS = {
    "tables": "MATCH (n:Table) RETURN count(n)",
    "columns": "MATCH (n:Column) RETURN count(n)",
    "tasks": "MATCH (n:Task) RETURN count(n)",
    "column_edges": "MATCH (:Column)-[r:FLOWS_TO]->(:Column) RETURN count(r)",
    "weak_edges": "MATCH ()-[r:INFLUENCES]->() RETURN count(r)",
    "table_edges": "MATCH (:Table)-[r:FLOWS_TO]->(:Table) RETURN count(r)",
}

RECORD_RUN = (
    "MERGE (h:HarvestRun {id: $id}) SET h.started_at = $started_at, h.inputs = $inputs, h.tasks = $tasks, "
    "h.errors = $errors, h.loaded = $loaded, h.unchanged = $unchanged, h.seconds = $seconds"
)
