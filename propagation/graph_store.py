"""The `TagStore` on the lineage graph (FalkorDB or Neo4j, through `graph.store.GraphStore`).

Workers read a batch in one query (`queries.READ_BATCH`) and write its
changes in one fenced statement per label; stewards' tags and blocks are
edges written one statement each, so every write is atomic and safe to repeat.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from watershed.graph.errors import WatershedError
from watershed.graph.model import node_label
from watershed.graph.store import GraphStore, chunks
from watershed.propagation import queries
from watershed.propagation.engine import BatchInputs, EdgeIn, OwnTags, StaleTokenError
from watershed.propagation.policy import Policy
from watershed.propagation.rules import (
    MANUAL,
    OWN_PRECEDENCE,
    PROPAGATED,
    SEED,
    TABLE_EDGE,
    Provenance,
    TagValue,
    filter_values,
)

#: column ids per lookup of which have lineage (a short read each, so the API's reads interleave)
DERIVED_LOOKUP_BATCH = 5000


class UnknownNodeError(WatershedError, LookupError):
    """A tag command named a column or table the graph does not have."""


# ------------------------------------------------------------------ encoding


def encode_tags(tags: dict[str, TagValue]) -> str | None:
    """A node's tags as the JSON kept in `n.tags` (sorted, so equal tags give equal text)."""
    if not tags:
        return None
    data = {
        key: {
            "v": sorted(tag.values),
            "o": tag.origin,
            "p": [[p.source, p.task, p.kind, p.rule, p.hops] for p in tag.provenance],
        }
        for key, tag in sorted(tags.items())
    }
    return json.dumps(data, separators=(",", ":"), sort_keys=True)


def decode_tags(text: str | None) -> dict[str, TagValue]:
    if not text:
        return {}
    return {
        key: TagValue(
            key,
            frozenset(item["v"]),
            item["o"],
            tuple(Provenance(s, t, k, r, h) for s, t, k, r, h in item["p"]),
        )
        for key, item in json.loads(text).items()
    }


def _tag_rows(tags: dict[str, TagValue]) -> list[list[Any]]:
    """TAGGED edge rows for the propagated tags of one node: one per value."""
    rows = []
    for key, tag in sorted(tags.items()):
        if tag.origin != PROPAGATED:
            continue
        sources = [p.source for p in tag.provenance]
        tasks = [p.task or "" for p in tag.provenance]
        kinds = [p.kind for p in tag.provenance]
        rules = [p.rule for p in tag.provenance]
        for value in sorted(tag.values):
            rows.append([f"{key}={value}", key, value, sources, tasks, kinds, rules, tag.hops])
    return rows


def _split(nodes: Iterable[str]) -> tuple[list[str], list[str]]:
    columns: list[str] = []
    tables: list[str] = []
    for node in nodes:
        (tables if node_label(node) == "Table" else columns).append(node)
    return columns, tables


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def own_of(entries: list[list[Any]] | None) -> OwnTags:
    """A node's own tags and blocks from its rows [relationship type, origin, key, value] (an
    OPTIONAL MATCH's row of nulls when it has none)."""
    own = OwnTags()
    values: dict[tuple[str, str], set[str]] = {}
    blocks: set[str] = set()
    for rel_type, origin, key, value in entries or []:
        if rel_type is None:
            continue  # OPTIONAL MATCH found nothing
        if rel_type == "BLOCKS":
            blocks.add(key)
        else:
            values.setdefault((origin, key), set()).add(value)

    # rows come in whatever order the graph returns them: a rule seed and a discovered seed of
    # one key are applied in OWN_PRECEDENCE order so the same one wins every time
    def rank(item: tuple[tuple[str, str], set[str]]) -> tuple[int, str, str]:
        (origin, key), _ = item
        return (OWN_PRECEDENCE.index(origin) if origin in OWN_PRECEDENCE else -1, origin, key)

    for (origin, key), found in sorted(values.items(), key=rank):
        tag = TagValue(key, frozenset(found), origin)
        (own.manual if origin == MANUAL else own.seeds)[key] = tag
    own.blocks = frozenset(blocks)
    return own


def node_tags(derived: str | None, entries: list[list[Any]] | None) -> dict[str, TagValue]:
    """A node's current tags from its stored derived tags and its own rows (as `own_of` reads
    them): what the last run derived, under its seeds and manual tags, without what it blocks —
    `GraphTagStore.current_tags` and the gateway's batched read (api/service/authz/reads.py)."""
    if not derived and not any(entry[0] is not None for entry in entries or ()):
        return {}  # most columns: nothing to decode or merge
    own = own_of(entries)
    tags = {k: v for k, v in decode_tags(derived).items() if v.origin == PROPAGATED}
    tags.update(own.seeds)
    tags.update(own.manual)
    for key in own.blocks:
        tags.pop(key, None)
    return tags


class GraphTagStore:
    """Tags on a `GraphStore`; `policy` turns a task's stored predicates into dimension filters."""

    def __init__(
        self, graph: GraphStore, policy: Policy, batch_size: int = 5000, scan_batch: int = 1000
    ) -> None:
        self.graph = graph
        self.policy = policy
        self.batch_size = batch_size
        #: tables per read where a run goes over every column (PropagationSettings.propagation_scan_batch)
        self.scan_batch = scan_batch
        self._filters: dict[str, dict[str, frozenset[str]]] = {}

    # ------------------------------------------------------------ fencing

    def raise_fence(self, token: int) -> int:
        """Make `token` the newest run's token (never lowers it); returns the fence's token."""
        return int(self.graph.execute(queries.RAISE_FENCE, {"fence": queries.FENCE_ID, "token": token})[0][0])

    def fence_token(self) -> int | None:
        rows = self.graph.read(queries.FENCE_TOKEN, {"fence": queries.FENCE_ID})
        return int(rows[0][0]) if rows and rows[0][0] is not None else None

    def _fenced(self, query: str, params: dict[str, Any], token: int, expected: int) -> None:
        rows = self.graph.execute(query, {**params, "fence": queries.FENCE_ID, "token": token})
        done = int(rows[0][0]) if rows else 0
        if done == 0 and expected:
            newest = self.fence_token()
            if newest != token:
                raise StaleTokenError(
                    f"write with fencing token {token} refused: the newest run's token is {newest}"
                )

    # ------------------------------------------------------------ TagStore

    def _filters_of(self, text: str | None) -> dict[str, frozenset[str]]:
        if not text:
            return {}
        found = self._filters.get(text)
        if found is None:
            found = filter_values([(c, op, values) for c, op, values in json.loads(text)], self.policy)
            self._filters[text] = found
        return found

    def read_batch(self, nodes: Sequence[str]) -> BatchInputs:
        columns, tables = _split(nodes)
        rows = self.graph.read(queries.READ_BATCH, {"columns": columns, "tables": tables})
        edges: dict[str, list[EdgeIn]] = {node: [] for node in nodes}
        tags: dict[str, dict[str, TagValue]] = {}
        own: dict[str, OwnTags] = {}
        stamps: dict[str, str] = {}
        for row, node, source, task, kind, functions, tags_text, extra in rows:
            if row == "node":
                if tags_text:
                    tags[node] = decode_tags(tags_text)
                own[node] = own_of(extra)
                if task:
                    stamps[node] = task  # a node row carries its write stamp in the task column
                continue
            if tags_text and source not in tags:
                tags[source] = decode_tags(tags_text)
            if row == "weak":
                edges[node].append(EdgeIn(source, task, kind, (), True))
            elif row == "table":
                edges[node].append(EdgeIn(source, task, TABLE_EDGE, (), False, self._filters_of(extra)))
            else:
                edges[node].append(
                    EdgeIn(source, task, kind, tuple(functions or ()), False, self._filters_of(extra))
                )
        return BatchInputs(edges, tags, own, stamps)

    def downstream(self, nodes: Iterable[str]) -> set[str]:
        return self._across(queries.DOWNSTREAM, nodes)

    def upstream(self, nodes: Iterable[str]) -> set[str]:
        """The nodes with a value edge into any of `nodes` (column to column, table to table)."""
        return self._across(queries.UPSTREAM, nodes)

    def _across(self, query: str, nodes: Iterable[str]) -> set[str]:
        out: set[str] = set()
        for batch in chunks(list(nodes), self.batch_size):
            columns, tables = _split(batch)
            out.update(row[0] for row in self.graph.read(query, {"columns": columns, "tables": tables}))
        return out

    def blocks_on(self, nodes: Iterable[str], keys: Sequence[str]) -> list[tuple[str, str, str, str]]:
        """Stewards' blocks of any of `keys` on `nodes`: (node, key, by, at) rows."""
        rows: list[tuple[str, str, str, str]] = []
        for batch in chunks(list(nodes), self.batch_size):
            columns, tables = _split(batch)
            params = {"columns": columns, "tables": tables, "keys": list(keys)}
            rows.extend(tuple(row) for row in self.graph.read(queries.BLOCKS_ON, params))
        return rows

    def write_tags(self, tags: dict[str, dict[str, TagValue]], run_id: str, token: int, stamp: str) -> None:
        by_label: dict[str, list[list[Any]]] = {"Column": [], "Table": []}
        for node, node_tags in tags.items():
            by_label[node_label(node)].append([node, encode_tags(node_tags), _tag_rows(node_tags)])
        for label, rows in by_label.items():
            for batch in chunks(rows, self.batch_size):
                self._fenced(
                    queries.write_tags(label),
                    {"rows": list(batch), "run": run_id, "stamp": stamp},
                    token,
                    len(batch),
                )

    def clear_tags(self, nodes: Iterable[str], run_id: str, token: int) -> None:
        columns, tables = _split(nodes)
        for label, ids in (("Column", columns), ("Table", tables)):
            for batch in chunks(ids, self.batch_size):
                self._fenced(queries.clear_tags(label), {"ids": list(batch)}, token, 0)

    def seeded_nodes(self) -> set[str]:
        return {row[0] for query in queries.SEEDED for row in self.graph.read(query)}

    def tagged_nodes(self) -> set[str]:
        return {row[0] for query in queries.TAGGED for row in self.graph.read(query)}

    # ------------------------------------------------------------ reading tags

    def tags_of(self, nodes: Iterable[str]) -> dict[str, dict[str, TagValue]]:
        columns, tables = _split(nodes)
        found: dict[str, dict[str, TagValue]] = {}
        for label, ids in (("Column", columns), ("Table", tables)):
            if ids:
                for node, text in self.graph.read(queries.tags_json(label), {"ids": ids}):
                    if text:
                        found[node] = decode_tags(text)
        return found

    def current_tags(self, nodes: Iterable[str]) -> dict[str, dict[str, TagValue]]:
        """Each node's tags as the next propagation will leave them on the node itself: what the last
        run derived, under the seeds, manual tags and blocks set since (the same precedence as
        `rules.derive`). A check at query time reads these, so a steward's tag or block counts at
        once on its node; nodes downstream of it change when propagation runs."""
        found: dict[str, dict[str, TagValue]] = {}
        for batch in chunks(list(nodes), self.batch_size):
            columns, tables = _split(batch)
            for node, text, entries in self.graph.read(
                queries.CURRENT_TAGS, {"columns": columns, "tables": tables}
            ):
                if tags := node_tags(text, entries):
                    found[node] = tags
        return found

    def own_tags(self, node: str) -> list[dict[str, Any]]:
        """What stewards and rules set on a node: type, origin, key, value, by, at, rule."""
        self._require(node)
        rows = self.graph.read(queries.own_of(node_label(node)), {"id": node})
        names = ("type", "origin", "key", "value", "by", "at", "rule")
        return [dict(zip(names, row, strict=True)) for row in sorted(rows, key=lambda r: [str(v) for v in r])]

    # ------------------------------------------------------------ stewards' tags

    def _require(self, node: str) -> str:
        label = node_label(node)
        if not self.graph.read(queries.node_exists(label), {"id": node}):
            raise UnknownNodeError(f"{node}: no such {label.lower()} in the lineage graph")
        return label

    def set_tag(self, node: str, key: str, values: Sequence[str], by: str, origin: str = MANUAL) -> None:
        label = self._require(node)
        params = {
            "id": node,
            "key": key,
            "values": sorted(set(values)),
            "origin": origin,
            "by": by,
            "at": _now(),
        }
        self.graph.execute(queries.set_own(label), {**params, "rule": None})

    def unset_tag(self, node: str, key: str, origin: str = MANUAL) -> bool:
        """Remove a steward's tag; False when the node had none for `key`."""
        label = self._require(node)
        rows = self.graph.execute(queries.unset_own(label), {"id": node, "key": key, "origin": origin})
        return bool(rows and rows[0][0])

    def block(self, node: str, key: str, by: str) -> None:
        label = self._require(node)
        self.graph.execute(queries.block(label), {"id": node, "key": key, "by": by, "at": _now()})

    def unblock(self, node: str, key: str) -> bool:
        label = self._require(node)
        rows = self.graph.execute(queries.unblock(label), {"id": node, "key": key})
        return bool(rows and rows[0][0])

    # ------------------------------------------------------------ rule seeds and changes

    def sync_rule_seeds(self, columns: Iterable[str] | None = None) -> int:
        """Make the policy's name-pattern seeds of `columns` (default: every column) match the policy and lineage.

        Every column is gone over `scan_batch` tables at a time, so the coordinator holds that many
        tables' columns, not the warehouse's (at 2M columns the whole list and its lineage were most
        of a full run's 0.8 GiB). Returns how many (column, key) seeds were written or removed.
        """
        if columns is None:
            tables = [row[0] for row in self.graph.read(queries.ALL_TABLES)]
            changed = 0
            for batch in chunks(tables, self.scan_batch):
                params = {"tables": list(batch)}
                scope = {row[0] for row in self.graph.read(queries.TABLES_COLUMNS, params)}
                derived = {row[0] for row in self.graph.read(queries.TABLES_DERIVED_COLUMNS, params)}
                stored: dict[tuple[str, str], tuple[frozenset[str], str | None]] = {}
                for node, key, value, rule in self.graph.read(queries.TABLES_RULE_SEEDS, params):
                    values, _ = stored.get((node, key), (frozenset(), rule))
                    stored[(node, key)] = (values | {value}, rule)
                changed += self._write_rule_seeds(scope, derived, stored)
            return changed
        scope = set(columns)
        derived = set()
        stored = {}
        for batch in chunks(sorted(scope), DERIVED_LOOKUP_BATCH):
            derived.update(row[0] for row in self.graph.read(queries.DERIVED_COLUMNS, {"ids": list(batch)}))
            for node, key, value, rule in self.graph.read(queries.RULE_SEEDS_OF, {"ids": list(batch)}):
                values, _ = stored.get((node, key), (frozenset(), rule))
                stored[(node, key)] = (values | {value}, rule)
        return self._write_rule_seeds(scope, derived, stored)

    def _write_rule_seeds(
        self,
        scope: set[str],
        derived: set[str],
        stored: dict[tuple[str, str], tuple[frozenset[str], str | None]],
    ) -> int:
        # Name rules seed source columns only: a column computed by SQL gets its tags from the
        # SQL (`md5(email) AS email_md5` is pseudonymised, whatever its name says). That also
        # keeps the rules monotone: which columns are sources depends on lineage, not on tags.
        wanted: dict[tuple[str, str], tuple[frozenset[str], str | None]] = {}
        for node in scope - derived:
            for rule in self.policy.seeds:
                if rule.matches(node):
                    for key, value in rule.tags.items():
                        wanted[(node, key)] = (frozenset([value]), rule.pattern)
        rows = [
            [
                node,
                key,
                sorted(wanted.get((node, key), (frozenset(), None))[0]),
                wanted.get((node, key), (None, None))[1],
            ]
            for node, key in sorted(set(wanted) | set(stored))
            if wanted.get((node, key)) != stored.get((node, key))
        ]
        for batch in chunks(rows, self.batch_size):
            self.graph.execute(queries.REPLACE_RULE_SEEDS, {"rows": list(batch), "at": _now()})
        return len(rows)

    def now(self) -> int:
        """The graph server's clock (ms): change marks and run starts are compared on one clock.

        Marks at or after this moment count as later changes; waiting out the current
        millisecond first keeps what the caller wrote just before out of them.
        """
        time.sleep(0.002)
        return int(self.graph.read(queries.NOW)[0][0])

    def changed_since(self, since: int) -> tuple[set[str], set[str]]:
        """Nodes whose lineage or own tags changed at or after `since`, and the columns created since."""
        changed: set[str] = set()
        for query in queries.CHANGED_SINCE:
            for node, columns in self.graph.read(query, {"since": since}):
                changed.add(node)
                changed.update(c for c in columns if c)
        created = {row[0] for row in self.graph.read(queries.COLUMNS_CREATED_SINCE, {"since": since})}
        return changed, created


__all__ = [
    "SEED",
    "GraphTagStore",
    "StaleTokenError",
    "UnknownNodeError",
    "decode_tags",
    "encode_tags",
    "node_tags",
    "own_of",
]
