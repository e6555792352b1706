"""The embedded default backend: FalkorDB through its native client (Redis protocol).

Never FalkorDB's Bolt port: it crashes the server on messages over about 8 KB.
FalkorDB has no multi-statement transactions; each statement of a load is
atomic, and the statements reach the append-only file in the order they ran
(an ordered log: after a crash, what survives is a prefix of them). A load
clears its tasks' versions in its first statement and sets them in its last,
so a load cut short leaves tasks without a version, and the next harvest loads
them again (`graph.queries.UNSET_TASK_VERSIONS`).
"""

from __future__ import annotations

import functools
import json
import logging
import re
import secrets
import time
from collections.abc import Sequence
from typing import Any

import redis
from falkordb import FalkorDB
from falkordb.helpers import stringify_param_value
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from watershed.graph import queries
from watershed.graph.errors import GraphUnavailableError, WatershedError, first_line
from watershed.graph.settings import GraphSettings
from watershed.graph.store import DATA_STAMP, GraphStore, description_terms

log = logging.getLogger(__name__)

#: the server-wide key every stamp includes: a graph's `clear` and a restore of the server's data
#: move it (a backup taken between a change and its restamp would bring back the change under
#: the old stamp)
STAMP_EPOCH_KEY = "watershed:stamp-epoch"


#: Queues a record (`FalkorDBStore.queue_record`) in one round trip, only while a stamp is what the
#: caller read under (ARGV[1]; empty: always). KEYS: the stamp epoch, the stamp, the queue.
#: Answers [records waiting, the stamp now], or [0, the stamp now] with nothing queued.
_QUEUE_UNDER_STAMP = """
local now = (redis.call('GET', KEYS[1]) or '') .. '/' .. (redis.call('GET', KEYS[2]) or '')
if ARGV[1] ~= '' and ARGV[1] ~= now then
    return {0, now}
end
redis.call('XADD', KEYS[3], '*', 's', ARGV[2], 'r', ARGV[3])
return {redis.call('XLEN', KEYS[3]), now}
"""
#: once this many records wait, the call that queued the last one writes them, so that a queue
#: nobody reads stays small (one statement per batch: about 11 ms for 256 entries here)
RUN_QUEUED_AT = 256
#: queued records read per round trip
RUN_QUEUED_BATCH = 1000


#: how long `queue_record` polls for its reply before it sleeps on the socket (see
#: `_PollingConnection`)
QUEUE_REPLY_POLL_SECONDS = 0.0003


class _PollingConnection(redis.Connection):
    """A connection that polls for a reply, for at most QUEUE_REPLY_POLL_SECONDS, before it blocks.

    The reply to `queue_record`'s script comes in well under that. A client asleep on its
    socket is woken only once the reply lands, and on a virtual machine that wake-up alone
    costs about as much as the server's work; the sleep also leaves the core's caches cold for
    whatever the thread does next (for a gateway, the next query's parse). Only `queue_record`,
    on every query check's path, uses it: a graph query that runs for milliseconds would spin
    for nothing.
    """

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        deadline = time.perf_counter() + QUEUE_REPLY_POLL_SECONDS
        while not self.can_read(timeout=0) and time.perf_counter() < deadline:
            pass
        return super().read_response(*args, **kwargs)


class QueuedRecordError(WatershedError):
    """Queued records the server refused: they stay queued, the others are written."""


#: what a read-only query on a graph that does not exist yet is told
EMPTY_KEY = "Invalid graph operation on empty key"


def move_stamp_epoch(connection) -> None:
    """Move every stamp of every graph on this server (a redis client of it)."""
    connection.set(STAMP_EPOCH_KEY, secrets.token_hex(8))


INDEXES = [
    "CREATE INDEX FOR (n:Table) ON (n.id)",
    # the tables whose columns' TTL advice is due (ttl_advisor/batches.py: `uses_changed_at >= $since`)
    "CREATE INDEX FOR (n:Table) ON (n.uses_changed_at)",
    # the columns whose tags changed since the last plan, each table's kept plan (orc_crypto/protect/plan.py)
    "CREATE INDEX FOR (n:Column) ON (n.tags_changed_at)",
    "CREATE INDEX FOR (n:PlannedTable) ON (n.table)",
    "CREATE INDEX FOR (n:Column) ON (n.id)",
    "CREATE INDEX FOR (n:Task) ON (n.id)",
    "CREATE INDEX FOR (n:HarvestRun) ON (n.id)",
    "CREATE INDEX FOR (n:Tag) ON (n.id)",
    "CREATE INDEX FOR (n:PropagationFence) ON (n.id)",
    "CREATE INDEX FOR (n:PropagationRun) ON (n.id)",
    # accounts and audit of the steward service (api/service/accounts, api/service/audit.py)
    "CREATE INDEX FOR (n:User) ON (n.name)",
    "CREATE INDEX FOR (n:ApiToken) ON (n.id)",
    "CREATE INDEX FOR (n:ApiToken) ON (n.user)",
    "CREATE INDEX FOR (n:Session) ON (n.id_hash)",
    "CREATE INDEX FOR (n:Session) ON (n.user)",
    "CREATE INDEX FOR (n:Session) ON (n.token)",
    "CREATE INDEX FOR (n:AuditEntry) ON (n.id)",
    # a node's history (api/service/audit.py NODE_LIST): a range of targets
    "CREATE INDEX FOR (n:AuditEntry) ON (n.target)",
    # data roles, groups and grants of query-time authorization (api/service/authz/grants.py)
    "CREATE INDEX FOR (n:DataRole) ON (n.name)",
    "CREATE INDEX FOR (n:DataRoleMember) ON (n.name)",
    "CREATE INDEX FOR (n:DataRoleMember) ON (n.role)",
    "CREATE INDEX FOR (n:GroupMember) ON (n.user)",
    "CREATE INDEX FOR (n:GroupMember) ON (n.group)",
    "CREATE INDEX FOR (n:DataGrant) ON (n.id)",
    "CREATE INDEX FOR (n:DataGrant) ON (n.role)",
    # protection records (orc_crypto/protect/records.py): the planner reads them a batch of
    # tables at a time and every apply MERGEs them by these keys
    "CREATE INDEX FOR (n:TableProtection) ON (n.table)",
    "CREATE INDEX FOR (n:ProtectedFile) ON (n.path)",
    "CREATE INDEX FOR (n:ProtectedFile) ON (n.table)",
    "CREATE INDEX FOR (n:ProtectionRun) ON (n.id)",
    # discovery (api/service/discovery.py): a table's last scan and a column's proposal, by id
    "CREATE INDEX FOR (n:DiscoveryScan) ON (n.id)",
    "CREATE INDEX FOR (n:DiscoveryProposal) ON (n.id)",
    "CREATE INDEX FOR (n:DiscoveryFlag) ON (n.id)",
    "CREATE INDEX FOR (n:DiscoveryFlag) ON (n.table)",
    # what an incremental propagation starts from (propagation.queries CHANGED_SINCE, propagation.metadata
    # CHANGED_COLUMNS: `WHERE n.<time> >= $since`): range seeks, not a scan of every Column and Table
    "CREATE INDEX FOR (n:Column) ON (n.created_at)",
    "CREATE INDEX FOR (n:Column) ON (n.own_changed_at)",
    "CREATE INDEX FOR (n:Column) ON (n.metadata_changed_at)",
    "CREATE INDEX FOR (n:Table) ON (n.own_changed_at)",
    "CREATE INDEX FOR (n:Table) ON (n.lineage_changed_at)",
    "CREATE INDEX FOR (n:Table) ON (n.metadata_changed_at)",
]
# Search's description stage (api/service/search.py): the shown description's words, kept by the
# graph in the write that sets it. No stop words: "the" or "id" is a word a steward looks for.
FULLTEXT_INDEXES = [
    f"CALL db.idx.fulltext.createNodeIndex({{label: '{label}', stopwords: []}}, 'description')"
    for label in ("Table", "Column")
] + [
    # search's id-word stage: `id_words` (graph.queries.id_words), a second field of the label's
    # index, added after the first (which sets the index's options: a field added with options to an
    # index that has them is refused)
    f"CALL db.idx.fulltext.createNodeIndex('{label}', 'id_words')"
    for label in ("Table", "Column")
]
# Nodes written before `id_words` existed get it once, a range of internal ids a write (a seek of
# the label's ids in the range, not a scan per batch); a key beside the graph says it was done.
BACKFILL_BATCH = 50_000
_ID_WORDS_BACKFILL = (
    "MATCH (n:{label}) WHERE id(n) >= $low AND id(n) < $high AND n.id_words IS NULL "
    f"SET n.id_words = {queries.id_words('n.id')}"
)
_TOP_NODE_ID = "MATCH (n) RETURN max(id(n))"
# the label's full-text index (named by the label), in its own order
FULLTEXT_QUERY = (
    "CALL db.idx.fulltext.queryNodes($label, $query) YIELD node RETURN node.id SKIP $skip LIMIT $n"
)

#: Every property name Watershed writes on a node or relationship. The server logs writes as their
#: effects (graph/server.py), and FalkorDB 4.16 registers the names a write mentions even when the
#: write changes nothing (an empty UNWIND, a MATCH without rows) without logging that: a replay
#: after a crash then numbers the names differently and later properties come back under the wrong
#: names. `ensure_schema` registers all of them with one write that is logged, so no later write
#: registers a name. tests/graph/test_replicated_properties.py fails when a write uses another name.
REGISTERED_PROPERTIES: frozenset[str] = frozenset(
    {
        "action",
        "actions",
        "actor",
        "after",
        "at",
        "before",
        "by",
        "changed_at",
        "column_order",
        "columns",
        "condition",
        "cone",
        "confidence",
        "content",
        "created_at",
        "created_by",
        "database",
        "databases",
        "db",
        "ddl",
        "description",
        # descriptions and owners of tables and columns, with where they came from (propagation/metadata.py)
        "description_at",
        "description_by",
        "description_catalog",
        "description_from",
        "description_hops",
        "description_source",
        "description_steward",
        "description_via",
        "dialect",
        "errors",
        "evidence",
        "expires_at",
        "external_readers",
        "filters",
        "fingerprint",
        "finished_at",
        "format",
        "from",
        "functions",
        "group",
        "hash",
        "hops",
        "id",
        "id_hash",
        "id_words",
        "inputs",
        "key",
        "kind",
        "last_used",
        "layer",
        "layer_records",
        "layers",
        "lineage_changed_at",
        "loaded",
        "location",
        "metadata_changed_at",
        "mode",
        "mtime_ns",
        "name",
        "nodes",
        "openlineage_run",
        "origin",
        "own_changed_at",
        "owner",
        "owner_at",
        "owner_by",
        "owner_catalog",
        "owner_from",
        "owner_hops",
        "owner_source",
        "owner_steward",
        "owner_via",
        "owners",
        "partition_window",
        "partitioned_by",
        "path",
        "plan",
        "plan_files",
        "predicates",
        "protected",
        "record",
        "resumed",
        "role",
        "rule",
        "run",
        "runtime_lineage",
        "salt",
        "sampled",
        "seen_at",
        "schedule",
        "seconds",
        "sha256",
        "size",
        "snapshot",
        "source",
        "sql",
        "sql_hash",
        "started_at",
        "status",
        "table",
        "tag",
        "tag_run",
        "tag_stamp",
        "tags",
        "tags_changed",
        "tags_changed_at",
        "target",
        "task",
        "tasks",
        "token",
        "ttl_days",
        "ttl_days_cut",
        "ttl_days_recommended",
        "ttl_evidence",
        "ttl_files",
        "ttl_read_outside_by",
        "ttl_run",
        "ttl_savings_bytes",
        "ttl_status",
        "type",
        "unchanged",
        "unparsed",
        "user",
        "uses_changed_at",
        "value",
        "version",
        "via_task",
        "view_dialect",
        "view_sql",
        # webhook subscriptions, the outbox and its attempts (api/service/notifications/): every
        # steward's tag change names them in an outbox statement, which writes nothing when no
        # subscription asks for the kind
        "active",
        "attempt",
        "attempts",
        "claimed_until",
        "code",
        "delivery",
        "error",
        "event",
        "kinds",
        "last_code",
        "last_error",
        "next_at",
        "payload",
        "secret",
        "subscription",
        "url",
    }
)

# FalkorDB 4.16 reads a string literal's characters as they are (control characters too), except
# `\\` `\"` `\'` and \b \f \n \r \t; any other escape (\uXXXX too) keeps its backslash. JSON is
# that form but for its \u00XX escapes of control characters, and its map keys need backticks
# instead of quotes. Without an escaped quote in the text, a match of this is a whole key: a
# value's closing quote is never followed by `:`, and every other quote opens or closes one.
_IDENTIFIER_KEY = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)":')
# Every JSON string, whole, with the `:` that makes it a key: matching whole strings keeps the
# scan aligned, so a quote inside a string is never taken for the start of one.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"(:?)')
# JSON's \u00XX escape of a control character, with the escaped backslashes before it (a run of
# backslashes begins with an escape, so an odd run ends with one).
_CONTROL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u00([01][0-9a-f])")


def _cypher_string(text: str) -> str:
    if "\x00" in text:
        # The server reads the query as a C string, and stores strings as C strings.
        raise ValueError(f"FalkorDB cannot store a string holding NUL (\\x00): {text[:40]!r}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _cypher_key(key: str) -> str:
    if "`" in key or "\x00" in key:
        # FalkorDB 4.16 accepts no escape for a backtick in a quoted name (nor a doubled one).
        raise ValueError(f"FalkorDB cannot take a map key holding a backtick or NUL: {key!r}")
    return f"`{key}`:"


def _control_character(match: re.Match[str]) -> str:
    if match.group(2) == "00":
        raise ValueError("FalkorDB cannot store a string holding NUL (\\x00)")
    return match.group(1) + chr(int(match.group(2), 16))


def _rewrite_string(match: re.Match[str]) -> str:
    text = json.loads(match.group(0)[: -1 if match.group(1) else None])
    return _cypher_key(text) if match.group(1) else _cypher_string(text)


def cypher_literal(value: Any) -> str:
    """A parameter value as a Cypher literal for FalkorDB's `CYPHER name=value` header.

    The client's own serialiser walks the value in Python, which took more time
    than the server spent loading; JSON is built in C and is already a Cypher
    literal for lists, numbers, null and most strings. The server stores every
    string as the Python string was, except that it cannot hold NUL, nor a map key
    a backtick (ValueError).
    """
    text = json.dumps(value, ensure_ascii=False)
    if "{" in text:
        # Rows are lists (graph/rows.py); maps are rare, and a key that is not an identifier or
        # an escaped quote anywhere (which could fool the key pattern) takes the slow way.
        if '\\"' in text:
            return _JSON_STRING.sub(_rewrite_string, text)
        keyed = _IDENTIFIER_KEY.sub(r"\1:", text)
        if '":' in keyed:
            return _JSON_STRING.sub(_rewrite_string, text)
        text = keyed
    return _CONTROL_ESCAPE.sub(_control_character, text) if "\\u00" in text else text


def _with_params(query: str, params: dict[str, Any] | None) -> str:
    if not params:
        return query
    header = " ".join(f"{name}={cypher_literal(value)}" for name, value in params.items())
    return f"CYPHER {header} {query}"


def _text_list(rendered: str | None) -> list[str]:
    """A list of names as FalkorDB's verbose format renders it, `[a, b]`, back to a list."""
    if not rendered or rendered == "[]":
        return []
    return rendered.strip("[]").split(", ")


def _reaching_server(method):
    """A store method whose lost or refused connection (BusyLoadingError too) is a GraphUnavailableError."""

    @functools.wraps(method)
    def call(self: FalkorDBStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            raise GraphUnavailableError(self.where, first_line(exc)) from exc

    return call


class FalkorDBStore(GraphStore):
    def __init__(self, host: str, port: int, graph: str = "watershed", batch_size: int = 5000) -> None:
        self.client = FalkorDB(host=host, port=port)
        self.graph = self.client.select_graph(graph)
        self.graph_name = graph
        self.batch_size = batch_size
        #: where the graph is, as errors name it
        self.where = f"FalkorDB at {host}:{port}, graph {graph}"
        # a pool of its own, with the same settings, whose connections poll for replies
        self._queue_client = redis.Redis(
            connection_pool=redis.ConnectionPool(
                connection_class=_PollingConnection,
                **self.client.connection.connection_pool.connection_kwargs,
            )
        )
        self._queue_under_stamp = self._queue_client.register_script(_QUEUE_UNDER_STAMP)

    @classmethod
    def from_settings(cls, settings: GraphSettings | None = None) -> FalkorDBStore:
        settings = settings or GraphSettings()
        return cls(
            settings.falkordb_host, settings.falkordb_port, settings.graph_name, settings.load_batch_size
        )

    @_reaching_server
    def read(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        # read-only on the server: a write sent here would leave the data stamp behind
        try:
            return self.graph.ro_query(query, params or {}).result_set
        except ResponseError as exc:
            if str(exc) != EMPTY_KEY:
                raise
        # a graph nothing has written yet has no key, which only the write command creates (so
        # that `count(n)` answers 0 as before): create it with a statement that writes nothing,
        # then read again, still read-only
        try:
            self.graph.query("RETURN 0")
        finally:
            self.restamp(DATA_STAMP)
        return self.graph.ro_query(query, params or {}).result_set

    @_reaching_server
    def execute(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        try:
            return self.graph.query(query, params or {}).result_set
        finally:
            self.restamp(DATA_STAMP)

    @_reaching_server
    def record(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        return self.graph.query(query, params or {}).result_set

    # Queued records wait in a stream beside the graph: on the same server, in the same append-only
    # file and snapshot, so a queued record is as durable as a written one. Queueing is a plain
    # key write the main thread answers at once, where a graph write waits for a query thread.
    def _queue_key(self) -> str:
        return f"watershed:{self.graph_name}:queued-records"

    @_reaching_server
    def queue_record(
        self,
        statement: str,
        row: dict[str, Any],
        *,
        stamp_name: str = DATA_STAMP,
        stamp: str | None = None,
    ) -> str | None:
        waiting, now = self._queue_under_stamp(
            keys=[STAMP_EPOCH_KEY, self._stamp_key(stamp_name), self._queue_key()],
            args=[stamp or "", statement, json.dumps(row)],
        )
        if not waiting:
            return now
        if waiting >= RUN_QUEUED_AT:
            try:
                self.run_queued()
            except (QueuedRecordError, RedisError) as exc:
                # this record is queued: the next reader of the records writes them, or says why not
                log.warning("queued records of graph %s wait: %s", self.graph_name, exc)
        return None

    def run_queued(self) -> int:
        connection = self.client.connection
        written = 0
        while True:
            waiting = connection.xrange(self._queue_key(), count=RUN_QUEUED_BATCH)
            if not waiting:
                return written
            # one statement per run of rows of the same statement, in order
            runs: list[tuple[str, list[str], list[dict]]] = []
            for entry, fields in waiting:
                if not runs or runs[-1][0] != fields["s"]:
                    runs.append((fields["s"], [], []))
                runs[-1][1].append(entry)
                runs[-1][2].append(json.loads(fields["r"]))
            pipeline = connection.pipeline(transaction=False)
            for statement, _entries, rows in runs:
                pipeline.execute_command(
                    "GRAPH.QUERY", self.graph_name, _with_params(statement, {"rows": rows})
                )
            results = pipeline.execute(raise_on_error=False)
            done: list[str] = []
            refused: list[tuple[str, Exception]] = []
            for (_, entries, _), result in zip(runs, results, strict=True):
                if isinstance(result, Exception):
                    refused.append((entries[0], result))
                else:
                    done.extend(entries)
            # deleted only once written: a run killed in between writes them again, which their
            # idempotence allows
            if done:
                connection.xdel(self._queue_key(), *done)
                written += len(done)
            if refused:
                entry, error = refused[0]
                raise QueuedRecordError(
                    f"graph {self.graph_name}: queued records from {entry} were refused: {error} "
                    f"({len(waiting) - len(done)} left queued)"
                )

    @_reaching_server
    def write_all(self, statements: list[tuple[str, dict[str, Any]]]) -> None:
        # One pipelined round trip for the whole load, in order (the deletes of a task's
        # old edges run before the creates of its new ones), the data stamp's move last: the
        # server runs it after the statements whether or not one of them failed.
        pipeline = self.client.connection.pipeline(transaction=False)
        for query, params in statements:
            pipeline.execute_command("GRAPH.QUERY", self.graph_name, _with_params(query, params))
        pipeline.set(self._stamp_key(DATA_STAMP), secrets.token_hex(8))
        pipeline.execute()

    @_reaching_server
    def _lineage_rows(self, label: str, direction: str, depth: int, node_id: str) -> list[tuple]:
        # Sent raw, in FalkorDB's verbose reply format: scalars come back as plain RESP
        # values (parsed in C by hiredis) instead of the compact format's typed pairs
        # that the client decodes one by one in Python, which took longer than the
        # traversal itself. Lists come back rendered as text: `[upper, cast]`.
        query = (
            f"CYPHER id={stringify_param_value(node_id)} {queries.lineage_subgraph(label, direction, depth)}"
        )
        reply = self.client.connection.execute_command("GRAPH.RO_QUERY", self.graph_name, query)
        rows = reply[1] if len(reply) == 3 else []
        return [
            (source, node_type, target, task, kind, key, _text_list(functions))
            for source, node_type, target, task, kind, key, functions in rows
        ]

    @_reaching_server
    def description_matches(self, label: str, words: Sequence[str], skip: int, limit: int) -> list[str]:
        terms = description_terms(words)
        if not terms:
            return []
        # RediSearch: words side by side must all match; `w*` is a prefix. Sent as FalkorDB's own
        # procedure call, not through `read` (whose statements are the ones both backends share).
        return self._index_matches(label, "description", [f"{term}*" for term in terms], skip, limit)

    @_reaching_server
    def id_word_matches(
        self, label: str, words: Sequence[str], skip: int, limit: int, near: Sequence[str] = ()
    ) -> list[str]:
        terms = [f"{term}*" for term in description_terms(words)]
        # `%w%`: a word within one Levenshtein edit of w (RediSearch's fuzzy term; a swap is two)
        terms += [f"%{term}%" for term in description_terms(near)]
        if not terms:
            return []
        return self._index_matches(label, "id_words", terms, skip, limit)

    def _index_matches(self, label: str, field: str, terms: list[str], skip: int, limit: int) -> list[str]:
        # the label's index holds both fields: each stage asks its own
        query = f"@{field}:(" + " ".join(terms) + ")"
        params = {"label": label, "query": query, "skip": skip, "n": limit}
        return [row[0] for row in self.graph.ro_query(FULLTEXT_QUERY, params).result_set]

    def _backfill_id_words(self) -> None:
        """`id_words` on every Table and Column written before it existed, in batches, once per
        graph (idempotent: a run cut short does the rest on the next `ensure_schema`)."""
        done_key = f"watershed:{self.graph_name}:backfilled:id_words"
        if self.client.connection.get(done_key):
            return
        [[top]] = self.graph.query(_TOP_NODE_ID).result_set
        for low in range(0, (top if top is not None else -1) + 1, BACKFILL_BATCH):
            for label in ("Table", "Column"):
                params = {"low": low, "high": low + BACKFILL_BATCH}
                self.graph.query(_ID_WORDS_BACKFILL.format(label=label), params)
        self.client.connection.set(done_key, "1")

    @_reaching_server
    def ensure_schema(self) -> None:
        for statement in INDEXES + FULLTEXT_INDEXES:
            try:
                self.graph.query(statement)
            except ResponseError as exc:
                if "already indexed" not in str(exc):
                    raise
        # A node created and deleted in one write: its effects, which name every property, are logged.
        names = ", ".join(f"{name}: 0" for name in sorted(REGISTERED_PROPERTIES))
        self.graph.query(f"CREATE (n:WatershedSchema {{{names}}}) DELETE n")
        self._backfill_id_words()

    @_reaching_server
    def clear(self) -> None:
        self.forget_columns()
        try:
            self.graph.delete()
        except ResponseError as exc:
            if "empty key" not in str(exc).lower() and "invalid graph" not in str(exc).lower():
                raise
        self.client.connection.delete(self._queue_key())
        # everything kept under any of this graph's stamps described the graph just deleted
        move_stamp_epoch(self.client.connection)

    # Stamps are plain keys beside the graph, so the server's main thread answers them at once
    # while the graph's query threads are busy (a propagation), and a backup's snapshot and its
    # restore carry them with the graph. Each value is random: a restored stamp equals the one
    # readers saw when the snapshot's state was current, never a later state's.
    def _stamp_key(self, name: str) -> str:
        return f"watershed:{self.graph_name}:stamp:{name}"

    @_reaching_server
    def change_stamp(self, name: str) -> str | None:
        epoch, stamp = self.client.connection.mget(STAMP_EPOCH_KEY, self._stamp_key(name))
        return f"{epoch or ''}/{stamp or ''}"  # the client decodes replies

    @_reaching_server
    def restamp(self, name: str) -> None:
        self.client.connection.set(self._stamp_key(name), secrets.token_hex(8))

    def close(self) -> None:
        self.client.connection.close()
        # a client given its pool leaves the pool open on close
        self._queue_client.connection_pool.disconnect()
