"""The append-only audit trail: who changed what, when, with the state before and after.

Entries are `AuditEntry {id, at, actor, action, target, before, after}` nodes in the
graph (before/after as JSON text). Nothing updates or deletes them. A change and its
entry are sent together: in one statement where the change's Cypher is ours (accounts),
else as one `write_all` (one transaction on Neo4j; on FalkorDB consecutive statements of
one pipelined round trip, in order). Ids sort by time, so listing newest first pages by id.
An entry of what changes nothing, a query check's decision, is queued instead (`queue`), in the
round trip that confirms what the check read is still current; listing runs the queue first.
"""

from __future__ import annotations

import json
import secrets
import time
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from watershed.graph.store import GraphStore


class AuditEntry(BaseModel):
    id: str
    at: str
    actor: str
    action: str
    target: str
    before: Any = None
    after: Any = None


#: CREATE clause of an entry; statements that embed it pass `audit_params(...)`
CREATE_ENTRY = (
    "CREATE (:AuditEntry {id: $audit_id, at: $audit_at, actor: $audit_actor, action: $audit_action, "
    "target: $audit_target, before: $audit_before, after: $audit_after})"
)
RECORD = CREATE_ENTRY
#: entries written through `GraphStore.queue_record`, a row each: written again after a run cut
#: short, an entry finds itself by id instead of adding a second one
QUEUED_ENTRIES = (
    "UNWIND $rows AS r MERGE (a:AuditEntry {id: r.audit_id}) ON CREATE SET a.at = r.audit_at, "
    "a.actor = r.audit_actor, a.action = r.audit_action, a.target = r.audit_target, "
    "a.before = r.audit_before, a.after = r.audit_after"
)
#: the cursor compared as a plain string (`toString`): FalkorDB answers an indexed `a.id < $after`
#: with every entry (tests/api/http/test_audit_history.py pages past the first page). A node's
#: entries are found through the index on `target` (a change of the node names `node` or
#: `node:key`): the range [node, node + ';') is the index's seek (';' follows ':'; the range also
#: holds ids that continue the node's, a table's columns, which the STARTS WITH drops); written as
#: one range, not an OR, which FalkorDB's index scan answered with entries of other nodes.
_FILTERS = (
    "toString(a.id) < $after AND ($actor IS NULL OR a.actor = $actor) "
    "AND ($action IS NULL OR a.action STARTS WITH $action) AND ($since IS NULL OR a.at >= $since) "
    "AND ($until IS NULL OR a.at < $until) "
    "RETURN a.id, a.at, a.actor, a.action, a.target, a.before, a.after ORDER BY a.id DESC LIMIT $limit"
)
LIST = "MATCH (a:AuditEntry) WHERE " + _FILTERS
NODE_LIST = (
    "MATCH (a:AuditEntry) WHERE a.target >= $node AND a.target < $node_end "
    "AND (a.target = $node OR a.target STARTS WITH $node_keyed) AND " + _FILTERS
)
#: above every id: the first page starts here
NEWEST = "~"


def _dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, default=str)


def audit_params(
    actor: str, action: str, target: str, before: Any = None, after: Any = None
) -> dict[str, Any]:
    now = time.time_ns()
    return {
        "audit_id": f"{now:020d}-{secrets.token_hex(4)}",
        "audit_at": datetime.fromtimestamp(now / 1e9, UTC).isoformat(timespec="milliseconds"),
        "audit_actor": actor,
        "audit_action": action,
        "audit_target": target,
        "audit_before": _dump(before),
        "audit_after": _dump(after),
    }


def statement(
    actor: str, action: str, target: str, before: Any = None, after: Any = None
) -> tuple[str, dict]:
    return RECORD, audit_params(actor, action, target, before, after)


def record(
    graph: GraphStore, actor: str, action: str, target: str, before: Any = None, after: Any = None
) -> None:
    graph.execute(*statement(actor, action, target, before, after))


def queue(
    graph: GraphStore,
    actor: str,
    action: str,
    target: str,
    after: Any = None,
    *,
    stamp: str | None = None,
) -> str | None:
    """An entry of what changes nothing (a decision), queued (`GraphStore.queue_record`): with
    `stamp`, only while the data stamp is still `stamp`; None when queued, else the stamp now."""
    return graph.queue_record(QUEUED_ENTRIES, audit_params(actor, action, target, None, after), stamp=stamp)


def _load(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def entries(
    graph: GraphStore,
    *,
    after: str | None = None,
    limit: int = 50,
    actor: str | None = None,
    action: str | None = None,
    since: str | None = None,
    until: str | None = None,
    node: str | None = None,
) -> list[AuditEntry]:
    """Newest first, older than `after` (an entry id); `action` matches as a prefix (`tag.` = every
    tag change); `since` and `until` bound `at` (ISO times, until excluded); `node` keeps the changes
    of one table or column (its own tags, blocks and discovery decisions, not its columns')."""
    graph.run_queued()
    rows = graph.read(
        LIST if node is None else NODE_LIST,
        {
            "after": after or NEWEST,
            "limit": limit,
            "actor": actor,
            "action": action,
            "since": since,
            "until": until,
            "node": node,
            "node_end": None if node is None else node + ";",
            "node_keyed": None if node is None else node + ":",
        },
    )
    return [
        AuditEntry(id=i, at=at, actor=who, action=what, target=target, before=_load(b), after=_load(a))
        for i, at, who, what, target, b, a in rows
    ]
