"""Cypher shared by the FalkorDB and Neo4j backends (the subset both accept).

Schema statements (indexes, constraints) differ per backend and live there.
"""

from __future__ import annotations

TASK_IDS = "MATCH (k:Task) RETURN k.id"
#: every table id (GraphStore.table_ids sorts them)
TABLE_IDS = "MATCH (t:Table) RETURN t.id"
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

#: where an id is cut into words for search's id-word index (api/service/search.py): the id's part
#: separators and what either index's tokenizer would keep inside a word (RediSearch keeps `_`, `/`
#: and a backtick, Lucene `_` and, between letters, `.`, `:` and `'`)
ID_WORD_SEPARATORS = "._-:'/`"


def id_words(expression: str) -> str:
    """Cypher (both backends) for the id `expression` with every `ID_WORD_SEPARATORS` character a
    space: the `id_words` every write that creates a Table or Column sets with the node."""
    for separator in ID_WORD_SEPARATORS:
        expression = f"replace({expression}, \"{separator}\", ' ')"
    return expression


# Load rows are lists; their layouts are in `graph.rows`.
MERGE_TABLES = (
    "UNWIND $rows AS r MERGE (t:Table {id: r[0]}) "
    f"SET t.id_words = {id_words('r[0]')} "
    # first, before the catalog's values are replaced: a changed owner or comment marks the table
    # for the next propagation run's descriptions-and-owners pass (propagation/metadata.py)
    "SET t.metadata_changed_at = CASE WHEN coalesce(r[5], t.owner_catalog, '') <> coalesce(t.owner_catalog, '') "
    "OR coalesce(r[13], t.description_catalog, '') <> coalesce(t.description_catalog, '') "
    "THEN timestamp() ELSE t.metadata_changed_at END, "
    # and a changed TTL, partitioning, location, outside reader, format or column order marks it for
    # the next TTL advice and protection plan (ttl_advisor/batches.py, orc_crypto/protect/plan.py:
    # they redo the marked tables and carry the rest forward)
    "t.uses_changed_at = CASE WHEN coalesce(r[7], t.ttl_days, -1) <> coalesce(t.ttl_days, -1) "
    "OR coalesce(r[8], t.partitioned_by, []) <> coalesce(t.partitioned_by, []) "
    "OR coalesce(r[4], t.location, '') <> coalesce(t.location, '') "
    "OR coalesce(r[12], t.external_readers, []) <> coalesce(t.external_readers, []) "
    "OR coalesce(r[3], t.format, '') <> coalesce(t.format, '') "
    "OR coalesce(r[9], t.column_order, []) <> coalesce(t.column_order, []) "
    "THEN timestamp() ELSE t.uses_changed_at END, "
    "t.db = r[1], t.name = r[2], t.format = coalesce(r[3], t.format), "
    "t.location = coalesce(r[4], t.location), "
    # the catalog's owner and comment are kept apart from a steward's, which wins over them
    # (propagation/metadata.py): a harvest never overwrites what a steward set
    "t.owner_catalog = coalesce(r[5], t.owner_catalog), t.owner = coalesce(t.owner_steward, r[5], t.owner), "
    "t.owner_source = CASE WHEN t.owner_steward IS NOT NULL THEN 'steward' "
    "WHEN coalesce(r[5], t.owner_catalog) IS NOT NULL THEN 'catalog' ELSE t.owner_source END, "
    "t.description_catalog = coalesce(r[13], t.description_catalog), "
    "t.description = coalesce(t.description_steward, r[13], t.description), "
    "t.description_source = CASE WHEN t.description_steward IS NOT NULL THEN 'steward' "
    "WHEN coalesce(r[13], t.description_catalog) IS NOT NULL THEN 'catalog' ELSE t.description_source END, "
    "t.layer = coalesce(r[6], t.layer), t.ttl_days = coalesce(r[7], t.ttl_days), "
    "t.partitioned_by = coalesce(r[8], t.partitioned_by), t.column_order = coalesce(r[9], t.column_order), "
    "t.view_sql = coalesce(r[10], t.view_sql), t.external_readers = coalesce(r[12], t.external_readers), "
    # a view's dialect goes with its SQL: a new definition never keeps the old one's dialect
    "t.view_dialect = CASE WHEN r[10] IS NULL THEN t.view_dialect ELSE r[11] END"
)
# Columns: create the missing ones with their HAS_COLUMN edge in one statement (atomic, so two
# loaders never both create one), then set a type only where the catalog gave one that differs.
# Merging every column and its HAS_COLUMN edge instead took most of a load's server time.
CREATE_MISSING_COLUMNS = (
    "UNWIND $rows AS r OPTIONAL MATCH (c:Column {id: r[0]}) WITH r, c WHERE c IS NULL "
    "MATCH (t:Table {id: r[1]}) CREATE (t)-[:HAS_COLUMN]->(:Column {id: r[0], table: r[1], name: r[2], type: r[3], created_at: timestamp(), "
    f"id_words: {id_words('r[0]')}}}) "
    # a new column needs its TTL advice: its table is marked (see MERGE_TABLES)
    "SET t.uses_changed_at = timestamp()"
)
SET_COLUMN_TYPES = (
    "UNWIND $rows AS r MATCH (c:Column {id: r[0]}) WHERE coalesce(c.type, '') <> r[3] SET c.type = r[3]"
)
#: a catalog comment (rows with r[4] set) is the column's description unless a steward set one; it
#: replaces a description propagated from upstream (the next propagation run passes it on)
SET_COLUMN_DESCRIPTIONS = (
    "UNWIND $rows AS r MATCH (c:Column {id: r[0]}) WHERE coalesce(c.description_catalog, '') <> r[4] "
    "SET c.metadata_changed_at = timestamp(), c.description_catalog = r[4], "
    "c.description = coalesce(c.description_steward, r[4]), "
    "c.description_source = CASE WHEN c.description_steward IS NOT NULL THEN 'steward' ELSE 'catalog' END "
    # one removal per SET clause: FalkorDB 4.16 removes the wrong properties when one clause
    # removes several (propagation/metadata.py `one_by_one`)
    "WITH c SET c.description_from = null WITH c SET c.description_via = null WITH c SET c.description_hops = null"
)
# A load or a deletion first takes the task's version away and a load sets it again in its last
# statement: a task's version is visible only with all its edges. Neither backend needs more: Neo4j
# runs the load in one transaction, and FalkorDB's append-only file is an ordered log, so after a
# crash a surviving version implies that every statement before it survived too. A task whose load
# was cut short has no version, and the next harvest loads it again whatever version it brings.
UNSET_TASK_VERSIONS = "UNWIND $ids AS id MERGE (k:Task {id: id}) SET k.version = null"
MERGE_TASKS = (
    "UNWIND $rows AS r MERGE (k:Task {id: r[0]}) "
    "SET k.sql_hash = r[2], k.owner = r[3], k.schedule = r[4], k.dialect = r[5], k.errors = r[6], k.sql = r[7], "
    "k.source = coalesce(r[8], k.source)"
)
SET_TASK_VERSIONS = "UNWIND $rows AS r MATCH (k:Task {id: r[0]}) SET k.version = r[1]"

# Sources (api/service/lineage_sources.py, ingest/harvest.py): a task's `source` names the harvest
# corpus or OpenLineage namespace that last loaded it, `seen_at` (UTC ISO text) when it last did.
#: what upsert_tasks compares a batch against: stored version and source
TASK_VERSIONS_AND_SOURCES = "UNWIND $ids AS id MATCH (k:Task {id: id}) RETURN k.id, k.version, k.source"
#: every task loaded or found unchanged: rows [id, source, seen_at]; a load naming no source keeps the task's
TOUCH_TASKS = (
    "UNWIND $rows AS r MATCH (k:Task {id: r[0]}) SET k.source = coalesce(r[1], k.source), k.seen_at = r[2]"
)
TASK_IDS_OF_SOURCE = "MATCH (k:Task) WHERE k.source = $source RETURN k.id"
#: tasks loaded before sources existed
SOURCELESS_TASK_IDS = "MATCH (k:Task) WHERE k.source IS NULL RETURN k.id"
#: source-less tasks a harvest adopts as its own (ingest/harvest.py says when)
ADOPT_TASKS = "UNWIND $ids AS id MATCH (k:Task {id: id}) WHERE k.source IS NULL SET k.source = $source"
#: per source: its tasks, the newest seen time, and how many were last seen before $cutoff (or never)
TASK_SOURCES = (
    "MATCH (k:Task) RETURN k.source, count(k), max(k.seen_at), "
    "sum(CASE WHEN k.seen_at IS NULL OR k.seen_at < $cutoff THEN 1 ELSE 0 END)"
)
#: a page of stale tasks in id order after $after: of one source, or ($source null) of every OpenLineage one
STALE_TASKS = (
    "MATCH (k:Task) WHERE ($source IS NULL AND k.source STARTS WITH 'openlineage:' OR k.source = $source) "
    "AND (k.seen_at IS NULL OR k.seen_at < $cutoff) AND toString(k.id) > $after "
    "RETURN k.id, k.source, k.seen_at ORDER BY k.id LIMIT $n"
)
# Edges of a (re)loaded task version are created, not merged: its old edges were deleted first.
# The deletes find a task's edges from the tables it WRITES, so a load creates its WRITES (and
# READS) before any other edge: edges of a load cut short are then always found by the next one.
CREATE_COLUMN_EDGES = (
    "UNWIND $rows AS r MATCH (a:Column {id: r[0]}) MATCH (b:Column {id: r[1]}) "
    "CREATE (a)-[:FLOWS_TO {task: r[2], kind: r[3], functions: r[4], key: r[5], description: r[6]}]->(b)"
)
CREATE_WEAK_EDGES = (
    "UNWIND $rows AS r MATCH (a:Column {id: r[0]}) MATCH (b:Table {id: r[1]}) "
    "CREATE (a)-[:INFLUENCES {task: r[2], role: r[3]}]->(b)"
)
CREATE_TABLE_EDGES = (
    "UNWIND $rows AS r MATCH (a:Table {id: r[0]}) MATCH (b:Table {id: r[1]}) "
    "CREATE (a)-[:FLOWS_TO {task: r[2]}]->(b)"
)
CREATE_READS = (
    "UNWIND $rows AS r MATCH (k:Task {id: r[0]}) MATCH (t:Table {id: r[1]}) "
    "CREATE (k)-[:READS {predicates: r[2], partition_window: r[3], unparsed: r[4], filters: r[5]}]->(t)"
)
CREATE_WRITES = (
    "UNWIND $rows AS r MATCH (k:Task {id: r[0]}) MATCH (t:Table {id: r[1]}) CREATE (k)-[:WRITES]->(t) "
    "SET t.lineage_changed_at = timestamp()"
)
# Before a task's edges go (a new version or a deletion), the tables it wrote are marked: their
# columns may lose inputs, and an incremental propagation starts from what changed since its last run.
MARK_TASK_WRITES_CHANGED = (
    "UNWIND $ids AS id MATCH (k:Task {id: id})-[:WRITES]->(t:Table) SET t.lineage_changed_at = timestamp()"
)
# A column's TTL advice is its first-level uses (ttl_advisor): before a task's edges go, the tables
# it read and those whose columns its edges leave are marked (the new version's are marked by
# MARK_TABLES_USES_CHANGED after its edges are created); the marks are written in the load's unit.
MARK_TASK_USES_CHANGED = (
    "UNWIND $ids AS id MATCH (k:Task {id: id})-[:READS]->(t:Table) SET t.uses_changed_at = timestamp()",
    "UNWIND $ids AS id MATCH (k:Task {id: id})-[:WRITES]->(:Table)-[:HAS_COLUMN]->(:Column)<-[r:FLOWS_TO]-(s:Column) "
    "WHERE r.task = id WITH DISTINCT s.table AS name MATCH (t:Table {id: name}) SET t.uses_changed_at = timestamp()",
    "UNWIND $ids AS id MATCH (k:Task {id: id})-[:WRITES]->(:Table)<-[r:INFLUENCES]-(s:Column) "
    "WHERE r.task = id WITH DISTINCT s.table AS name MATCH (t:Table {id: name}) SET t.uses_changed_at = timestamp()",
)
MARK_TABLES_USES_CHANGED = "UNWIND $ids AS id MATCH (t:Table {id: id}) SET t.uses_changed_at = timestamp()"

#: a table `t`'s catalog fields after its id, in the order `store.catalog_entry` reads them (also
#: read by the gateway's batched read, api/service/authz/reads.py)
CATALOG_ENTRY_FIELDS = (
    "t.format, t.location, t.owner, t.layer, t.ttl_days, t.partitioned_by, t.column_order, "
    "t.view_sql, t.view_dialect, t.external_readers"
)
# Catalog entries of a batch of tables (GraphStore.catalog_entries): each with its columns' names
# and types; a table without Column nodes still gives its row (OPTIONAL MATCH).
CATALOG_ENTRIES = (
    "UNWIND $ids AS id MATCH (t:Table {id: id}) OPTIONAL MATCH (t)-[:HAS_COLUMN]->(c:Column) "
    f"RETURN t.id, {CATALOG_ENTRY_FIELDS}, collect([c.name, c.type])"
)


def _pattern(label: str, direction: str, depth: int) -> str:
    if not 1 <= depth <= 100:
        raise ValueError(f"depth must be between 1 and 100, got {depth}")
    if direction == "upstream":
        return f"(n:{label})-[:FLOWS_TO*1..{depth}]->(root)"
    return f"(root)-[:FLOWS_TO*1..{depth}]->(n:{label})"


def lineage_subgraph(label: str, direction: str, depth: int) -> str:
    """Every FLOWS_TO edge on a path of at most `depth` hops to (upstream) or from (downstream) one node.

    Those are the edges whose end nearer the root lies within `depth - 1`
    hops, so the query collects that distinct node set first (asking for
    paths would enumerate every path of a diamond-shaped lineage:
    exponential) and expands each member by one hop; no edge leaves the
    subgraph, so nothing is fetched to be thrown away. `WITH DISTINCT root`
    makes the plan start from the indexed node. FLOWS_TO only joins nodes of
    one label, so the walk needs no label filter (which costs a check per
    node). Rows: source id, the far node's type, target id, task, kind, key,
    functions; then one row for the root itself (target null).
    """
    if not 1 <= depth <= 100:
        raise ValueError(f"depth must be between 1 and 100, got {depth}")
    root = f"MATCH (root:{label} {{id: $id}}) WITH DISTINCT root "
    if direction == "upstream":
        walk = f"MATCH (root)<-[:FLOWS_TO*0..{depth - 1}]-(v) WITH DISTINCT v MATCH (u)-[r:FLOWS_TO]->(v) "
        far = "u"
    else:
        walk = f"MATCH (root)-[:FLOWS_TO*0..{depth - 1}]->(u) WITH DISTINCT u MATCH (u)-[r:FLOWS_TO]->(v) "
        far = "v"
    return (
        root
        + walk
        + f"RETURN u.id AS source, {far}.type AS type, v.id AS target, r.task AS task, r.kind AS kind, "
        "r.key AS key, r.functions AS functions "
        "UNION ALL "
        + f"MATCH (root:{label} {{id: $id}}) RETURN root.id AS source, root.type AS type, null AS target, "
        "null AS task, null AS kind, null AS key, null AS functions"
    )


def lineage_count(label: str, direction: str, depth: int) -> str:
    """The bare count over the same traversal (the baseline of the query benchmark)."""
    return f"MATCH (root:{label} {{id: $id}}) WITH DISTINCT root MATCH {_pattern(label, direction, depth)} RETURN count(DISTINCT n)"


# A node is looked up under each label in turn: a match without a label cannot use the id
# indexes and scans every node.
NODE_PROPERTIES = (
    "UNWIND $ids AS id MATCH (n:Column {id: id}) RETURN n.id AS id, 'Column' AS label, properties(n) AS p "
    "UNION ALL UNWIND $ids AS id MATCH (n:Table {id: id}) RETURN n.id AS id, 'Table' AS label, properties(n) AS p "
    "UNION ALL UNWIND $ids AS id MATCH (n:Task {id: id}) RETURN n.id AS id, 'Task' AS label, properties(n) AS p"
)


def _neighbours(pattern: str) -> str:
    return " UNION ALL ".join(
        f"UNWIND $ids AS id MATCH (n:{label} {{id: id}}){pattern} "
        "RETURN n.id AS id, o.id AS other, type(r) AS type, properties(r) AS p"
        for label in ("Column", "Table")
    )


#: incoming FLOWS_TO and INFLUENCES of a batch of columns and tables
NEIGHBOURS_IN = _neighbours("<-[r:FLOWS_TO|INFLUENCES]-(o)")
#: outgoing FLOWS_TO and INFLUENCES of a batch of columns and tables
NEIGHBOURS_OUT = _neighbours("-[r:FLOWS_TO|INFLUENCES]->(o)")

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

# Discovery (discovery/, api/service/discovery.py): a DiscoveryScan per sampled table keeps the
# fingerprint of its files, a DiscoveryProposal per column (id = the column id) the proposed tags,
# confidence, masked evidence (JSON text) and the steward's decision. No sampled value is stored.
ROOT_TABLE_IDS = (
    "MATCH (t:Table) WHERE t.location IS NOT NULL AND NOT ((:Table)-[:FLOWS_TO]->(t)) RETURN t.id"
)
LOCATED_TABLE_IDS = "MATCH (t:Table) WHERE t.location IS NOT NULL RETURN t.id"
DISCOVERY_SCANS = "UNWIND $ids AS id MATCH (s:DiscoveryScan {id: id}) RETURN s.id, s.fingerprint"
MERGE_DISCOVERY_SCANS = (
    "UNWIND $rows AS r MERGE (s:DiscoveryScan {id: r.id}) "
    "SET s.fingerprint = r.fingerprint, s.at = r.at, s.run = r.run, s.protected = r.protected"
)
_PROPOSAL_FIELDS = (
    "p.id, p.table, p.tags, p.confidence, p.sampled, p.evidence, p.content, p.status, p.at, p.by, p.run"
)
MERGE_DISCOVERY_PROPOSALS = (
    "UNWIND $rows AS r MERGE (p:DiscoveryProposal {id: r.id}) "
    "SET p.table = r.table, p.tags = r.tags, p.confidence = r.confidence, p.sampled = r.sampled, "
    "p.evidence = r.evidence, p.content = r.content, p.status = r.status, p.at = r.at, p.by = r.by, "
    "p.run = r.run"
)
DELETE_DISCOVERY_PROPOSALS = "UNWIND $ids AS id MATCH (p:DiscoveryProposal {id: id}) DELETE p"
DISCOVERY_PROPOSALS_OF = f"UNWIND $ids AS id MATCH (p:DiscoveryProposal {{id: id}}) RETURN {_PROPOSAL_FIELDS}"
#: a page of proposals in id order, after `$after`, optionally of one status and one table
DISCOVERY_PROPOSALS = (
    "MATCH (p:DiscoveryProposal) WHERE p.id > $after AND ($status IS NULL OR p.status = $status) "
    f"AND ($table IS NULL OR p.table = $table) RETURN {_PROPOSAL_FIELDS} ORDER BY p.id LIMIT $limit"
)
#: a steward's decision (accepted, rejected) and who made it when
DECIDE_DISCOVERY_PROPOSAL = (
    "MATCH (p:DiscoveryProposal {id: $id}) SET p.status = $status, p.by = $by, p.at = $at RETURN p.id"
)
# A DiscoveryFlag per derived column whose content disagrees with its tags (id = the column id;
# `record`: the flag as JSON text); a table's scan replaces all of its table's flags.
DELETE_TABLE_DISCOVERY_FLAGS = "UNWIND $tables AS t MATCH (f:DiscoveryFlag {table: t}) DELETE f"
MERGE_DISCOVERY_FLAGS = (
    "UNWIND $rows AS r MERGE (f:DiscoveryFlag {id: r.id}) SET f.table = r.table, f.kind = r.kind, "
    "f.record = r.record"
)
#: a page of flags in column id order, after `$after`, optionally of one kind, table or column
DISCOVERY_FLAGS = (
    "MATCH (f:DiscoveryFlag) WHERE f.id > $after AND ($kind IS NULL OR f.kind = $kind) "
    "AND ($table IS NULL OR f.table = $table) AND ($column IS NULL OR f.id = $column) "
    "RETURN f.record ORDER BY f.id LIMIT $limit"
)

# Impact analysis (api/service/impact.py): a breadth-first walk downstream, one round trip per hop,
# each capped by $cap, then the details of the nodes it kept. Owner, layer and retention are the
# table's; a table without a catalog owner answers the owners of the tasks that write it.
#: the columns of a table (the seeds of a table's column walk)
IMPACT_TABLE_COLUMNS = "MATCH (t:Table {id: $id})-[:HAS_COLUMN]->(c:Column) RETURN c.id LIMIT $cap"
#: columns one value hop (FLOWS_TO) downstream of a batch of columns
IMPACT_COLUMN_HOP = (
    "UNWIND $ids AS id MATCH (:Column {id: id})-[:FLOWS_TO]->(o:Column) RETURN DISTINCT o.id LIMIT $cap"
)
#: tables one value hop (FLOWS_TO) downstream of a batch of tables
IMPACT_TABLE_HOP = (
    "UNWIND $ids AS id MATCH (:Table {id: id})-[:FLOWS_TO]->(o:Table) RETURN DISTINCT o.id LIMIT $cap"
)
#: [column, table] pairs: tables a batch of columns influences without flowing into (INFLUENCES:
#: filters, joins, conditions)
IMPACT_INFLUENCED_TABLES = (
    "UNWIND $ids AS id MATCH (:Column {id: id})-[:INFLUENCES]->(t:Table) RETURN DISTINCT id, t.id LIMIT $cap"
)
#: rows [id, tags, table owner, layer, ttl_days, writers' owners, ttl_status, ttl_days_recommended]
IMPACT_COLUMN_DETAILS = (
    "UNWIND $ids AS id MATCH (c:Column {id: id}) OPTIONAL MATCH (t:Table {id: c.table}) "
    "OPTIONAL MATCH (k:Task)-[:WRITES]->(t) "
    "RETURN c.id, c.tags, t.owner, t.layer, t.ttl_days, collect(DISTINCT k.owner), c.ttl_status, "
    "c.ttl_days_recommended"
)
#: rows [id, tags, owner, layer, ttl_days, writers' owners, null, null] (the column rows' layout)
IMPACT_TABLE_DETAILS = (
    "UNWIND $ids AS id MATCH (t:Table {id: id}) OPTIONAL MATCH (k:Task)-[:WRITES]->(t) "
    "RETURN t.id, t.tags, t.owner, t.layer, t.ttl_days, collect(DISTINCT k.owner), null AS ttl_status, "
    "null AS ttl_days_recommended"
)
