"""The Cypher propagation runs on the lineage graph (the subset FalkorDB and Neo4j 5 both accept).

Where tags live (architecture.md, "The graph"):

- `(n)-[:TAGGED {origin, run, from, via_task, kind, rule, hops}]->(:Tag {id, key, value})`
  for every value of every tag of a Column or Table; `origin` is `manual` (a
  steward's `tag set`), `seed` (a name-pattern rule of the policy) or
  `propagated`;
- `(n)-[:BLOCKS {key, by, at}]->(:Tag {id: key, key, value: '*'})` for a steward's block;
- `n.tags`: the node's resulting tags with their provenance as one JSON
  string, written in the same statement as its propagated TAGGED edges. It is
  what workers read: one property per source instead of a row per tag value.

Every write of a run is fenced: it only happens while the run's token is the
newest one on the `PropagationFence` node, so a stale worker or coordinator
from an earlier run can never overwrite a newer run's results.
"""

from __future__ import annotations

FENCE_ID = "propagation"

RAISE_FENCE = (
    "MERGE (f:PropagationFence {id: $fence}) "
    "SET f.token = CASE WHEN f.token IS NULL OR f.token < $token THEN $token ELSE f.token END "
    "RETURN f.token"
)
FENCE_TOKEN = "MATCH (f:PropagationFence {id: $fence}) RETURN f.token"

_FENCED = "MATCH (f:PropagationFence {id: $fence}) WHERE f.token = $token "


def read_batch() -> str:
    """Incoming edges of a batch with their sources' tags and the task's filters, plus the nodes' own state.

    Rows: kind (`edge`, `weak`, `table`, `node`), node, source, task, edge
    kind or role, functions, the source's (or node's) tags JSON, filters JSON
    (for `node` rows: the own tags as [type, origin, key, value] lists, and
    the write stamp in the task column).
    """
    returns = "AS row, n.id AS node, {source} AS source, {task} AS task, {kind} AS kind, {functions} AS functions, {tags} AS tags, {extra} AS extra"
    parts = [
        "UNWIND $columns AS id MATCH (n:Column {id: id})<-[r:FLOWS_TO]-(s:Column) "
        "OPTIONAL MATCH (:Task {id: r.task})-[rd:READS]->(:Table {id: s.table}) "
        "RETURN 'edge' "
        + returns.format(
            source="s.id",
            task="r.task",
            kind="r.kind",
            functions="r.functions",
            tags="s.tags",
            extra="rd.filters",
        ),
        "UNWIND $tables AS id MATCH (n:Table {id: id})<-[r:INFLUENCES]-(s:Column) "
        "RETURN 'weak' "
        + returns.format(
            source="s.id", task="r.task", kind="r.role", functions="[]", tags="s.tags", extra="null"
        ),
        "UNWIND $tables AS id MATCH (n:Table {id: id})<-[r:FLOWS_TO]-(s:Table) "
        "OPTIONAL MATCH (:Task {id: r.task})-[rd:READS]->(s) "
        "RETURN 'table' "
        + returns.format(
            source="s.id", task="r.task", kind="'table'", functions="[]", tags="s.tags", extra="rd.filters"
        ),
    ]
    for label, ids in (("Column", "$columns"), ("Table", "$tables")):
        parts.append(
            f"UNWIND {ids} AS id MATCH (n:{label} {{id: id}}) "
            "OPTIONAL MATCH (n)-[g:TAGGED|BLOCKS]->(t:Tag) "
            "WHERE type(g) = 'BLOCKS' OR g.origin <> 'propagated' "
            "WITH n, collect([type(g), g.origin, t.key, t.value]) AS own "
            "RETURN 'node' "
            + returns.format(
                source="null", task="n.tag_stamp", kind="null", functions="[]", tags="n.tags", extra="own"
            )
        )
    return " UNION ALL ".join(parts)


READ_BATCH = read_batch()

DOWNSTREAM = (
    "UNWIND $columns AS id MATCH (:Column {id: id})-[:FLOWS_TO|INFLUENCES]->(o) RETURN DISTINCT o.id AS id "
    "UNION "
    "UNWIND $tables AS id MATCH (:Table {id: id})-[:FLOWS_TO]->(o:Table) RETURN DISTINCT o.id AS id"
)

# the nodes a tag reaches these from (value edges only: weak references carry no sensitivity)
UPSTREAM = (
    "UNWIND $columns AS id MATCH (s:Column)-[:FLOWS_TO]->(:Column {id: id}) RETURN DISTINCT s.id AS id "
    "UNION "
    "UNWIND $tables AS id MATCH (s:Table)-[:FLOWS_TO]->(:Table {id: id}) RETURN DISTINCT s.id AS id"
)
# stewards' blocks of any of $keys on the nodes named; rows: [node, key, by, at]
BLOCKS_ON = (
    "UNWIND $columns AS id MATCH (n:Column {id: id})-[b:BLOCKS]->(:Tag) WHERE b.key IN $keys "
    "RETURN n.id AS node, b.key AS key, b.by AS by, b.at AS at "
    "UNION "
    "UNWIND $tables AS id MATCH (n:Table {id: id})-[b:BLOCKS]->(:Tag) WHERE b.key IN $keys "
    "RETURN n.id AS node, b.key AS key, b.by AS by, b.at AS at"
)


def write_tags(label: str) -> str:
    """Replace the propagated tags of a batch of nodes; rows: [id, tags JSON, [[tag id, key, value, from, via_task, kind, rule, hops]]]."""
    return (
        _FENCED + f"UNWIND $rows AS r MATCH (n:{label} {{id: r[0]}}) "
        # tags_changed_at first, before the tags are replaced: the protection plan re-plans a table
        # whose columns' tags changed since its last plan (orc_crypto/protect/plan.py)
        "SET n.tags_changed_at = CASE WHEN coalesce(n.tags, '') <> r[1] THEN timestamp() "
        "ELSE n.tags_changed_at END, n.tags = r[1], n.tag_run = $run, n.tag_stamp = $stamp "
        "WITH n, r OPTIONAL MATCH (n)-[g:TAGGED {origin: 'propagated'}]->() DELETE g "
        "WITH DISTINCT n, r "
        "FOREACH (t IN r[2] | MERGE (tag:Tag {id: t[0]}) ON CREATE SET tag.key = t[1], tag.value = t[2] "
        "CREATE (n)-[:TAGGED {origin: 'propagated', run: $run, `from`: t[3], via_task: t[4], kind: t[5], "
        "rule: t[6], hops: t[7]}]->(tag)) "
        "RETURN count(n)"
    )


def clear_tags(label: str) -> str:
    return (
        _FENCED + f"UNWIND $ids AS id MATCH (n:{label} {{id: id}}) "
        "OPTIONAL MATCH (n)-[g:TAGGED {origin: 'propagated'}]->() DELETE g "
        "WITH DISTINCT n SET n.tags_changed_at = CASE WHEN n.tags IS NULL THEN n.tags_changed_at "
        "ELSE timestamp() END, n.tags = null RETURN count(n)"
    )


def nodes_with(label: str, condition: str) -> str:
    return f"MATCH (n:{label}) WHERE {condition} RETURN n.id"


SEEDED = [
    "MATCH (n:Column)-[g:TAGGED|BLOCKS]->(:Tag) WHERE type(g) = 'BLOCKS' OR g.origin <> 'propagated' RETURN DISTINCT n.id",
    "MATCH (n:Table)-[g:TAGGED|BLOCKS]->(:Tag) WHERE type(g) = 'BLOCKS' OR g.origin <> 'propagated' RETURN DISTINCT n.id",
]
TAGGED = [nodes_with("Column", "n.tags IS NOT NULL"), nodes_with("Table", "n.tags IS NOT NULL")]

# ---------------------------------------------------------------- own tags


def node_exists(label: str) -> str:
    return f"MATCH (n:{label} {{id: $id}}) RETURN n.id"


def set_own(label: str) -> str:
    """Replace one key's tags of one origin on a node (a steward's `tag set`, or a policy rule seed)."""
    return (
        f"MATCH (n:{label} {{id: $id}}) "
        "OPTIONAL MATCH (n)-[old:TAGGED {origin: $origin}]->(:Tag {key: $key}) DELETE old "
        "WITH DISTINCT n SET n.own_changed_at = timestamp() "
        "FOREACH (v IN $values | MERGE (tag:Tag {id: $key + '=' + v}) ON CREATE SET tag.key = $key, tag.value = v "
        "CREATE (n)-[:TAGGED {origin: $origin, by: $by, at: $at, rule: $rule}]->(tag)) "
        "RETURN count(n)"
    )


def unset_own(label: str) -> str:
    return (
        f"MATCH (n:{label} {{id: $id}})-[old:TAGGED {{origin: $origin}}]->(:Tag {{key: $key}}) DELETE old "
        "WITH DISTINCT n SET n.own_changed_at = timestamp() RETURN count(n)"
    )


def block(label: str) -> str:
    return (
        f"MATCH (n:{label} {{id: $id}}) "
        "MERGE (tag:Tag {id: $key}) ON CREATE SET tag.key = $key, tag.value = '*' "
        "MERGE (n)-[b:BLOCKS]->(tag) SET b.key = $key, b.by = $by, b.at = $at, n.own_changed_at = timestamp() "
        "RETURN count(n)"
    )


def unblock(label: str) -> str:
    return (
        f"MATCH (n:{label} {{id: $id}})-[b:BLOCKS]->(:Tag {{id: $key}}) DELETE b "
        "WITH DISTINCT n SET n.own_changed_at = timestamp() RETURN count(n)"
    )


def own_of(label: str) -> str:
    """A node's own tags with who set them and when."""
    return (
        f"MATCH (n:{label} {{id: $id}})-[g:TAGGED|BLOCKS]->(t:Tag) "
        "WHERE type(g) = 'BLOCKS' OR g.origin <> 'propagated' "
        "RETURN type(g), g.origin, t.key, t.value, g.by, g.at, g.rule"
    )


def tags_json(label: str) -> str:
    return f"UNWIND $ids AS id MATCH (n:{label} {{id: id}}) RETURN n.id, n.tags"


def _current_tags(label: str, ids: str) -> str:
    return (
        f"UNWIND {ids} AS id MATCH (n:{label} {{id: id}}) "
        "OPTIONAL MATCH (n)-[g:TAGGED|BLOCKS]->(t:Tag) WHERE type(g) = 'BLOCKS' OR g.origin <> 'propagated' "
        "WITH n, collect([type(g), g.origin, t.key, t.value]) AS own RETURN n.id AS id, n.tags AS tags, own"
    )


#: columns' and tables' last derived tags with their own tags and blocks, in one read
#: (GraphTagStore.current_tags: a query-time check pays one round trip for them)
CURRENT_TAGS = _current_tags("Column", "$columns") + " UNION ALL " + _current_tags("Table", "$tables")


#: the rule seeds of a batch of columns; rows [column, key, value, rule]
RULE_SEEDS_OF = "UNWIND $ids AS id MATCH (n:Column {id: id})-[g:TAGGED {origin: 'seed'}]->(t:Tag) RETURN n.id, t.key, t.value, g.rule"
ALL_TABLES = "MATCH (t:Table) RETURN t.id"
DERIVED_COLUMNS = "UNWIND $ids AS id MATCH (:Column)-[:FLOWS_TO]->(n:Column {id: id}) RETURN DISTINCT n.id"
# A batch of tables' columns, those of them with a lineage input, and their rule seeds: three
# plain traversals (one query with an OPTIONAL MATCH per column was about 2.5x slower on FalkorDB)
TABLES_COLUMNS = "UNWIND $tables AS id MATCH (:Table {id: id})-[:HAS_COLUMN]->(n:Column) RETURN n.id"
TABLES_DERIVED_COLUMNS = (
    "UNWIND $tables AS id MATCH (:Table {id: id})-[:HAS_COLUMN]->(n:Column)<-[:FLOWS_TO]-(:Column) "
    "RETURN DISTINCT n.id"
)
#: rows [column, key, value, rule]
TABLES_RULE_SEEDS = (
    "UNWIND $tables AS id MATCH (:Table {id: id})-[:HAS_COLUMN]->(n:Column)-[g:TAGGED {origin: 'seed'}]->(t:Tag) "
    "RETURN n.id, t.key, t.value, g.rule"
)
COLUMNS_CREATED_SINCE = "MATCH (n:Column) WHERE n.created_at >= $since RETURN n.id"
# Rule seeds of many columns at once; rows: [column, key, [values], rule]
REPLACE_RULE_SEEDS = (
    "UNWIND $rows AS r MATCH (n:Column {id: r[0]}) "
    "OPTIONAL MATCH (n)-[old:TAGGED {origin: 'seed'}]->(:Tag {key: r[1]}) DELETE old "
    "WITH DISTINCT n, r SET n.own_changed_at = timestamp() "
    "FOREACH (v IN r[2] | MERGE (tag:Tag {id: r[1] + '=' + v}) ON CREATE SET tag.key = r[1], tag.value = v "
    "CREATE (n)-[:TAGGED {origin: 'seed', by: 'policy', at: $at, rule: r[3]}]->(tag)) "
    "RETURN count(n)"
)

CHANGED_SINCE = [
    "MATCH (t:Table) WHERE t.lineage_changed_at >= $since "
    "OPTIONAL MATCH (t)-[:HAS_COLUMN]->(c:Column) RETURN t.id, collect(c.id)",
    "MATCH (n:Column) WHERE n.own_changed_at >= $since RETURN n.id, []",
    "MATCH (n:Table) WHERE n.own_changed_at >= $since RETURN n.id, []",
]
NOW = "RETURN timestamp()"

RECORD_RUN = (
    "MERGE (r:PropagationRun {id: $id}) SET r.mode = $mode, r.status = $status, r.started_at = $started_at, "
    "r.finished_at = $finished_at, r.layers = $layers, r.nodes = $nodes, r.tags_changed = $changed, "
    "r.cone = $cone, r.resumed = $resumed, r.layer_records = $layer_records"
)
