"""The search of the steward service and `watershed graph search`: tables and columns by id prefix (indexed) and then substring (bounded), with tag filters.

Cost: the prefix stage reads the id index's range for the prefix and sorts what it finds
(keyset paging by id): cheap for a table's or a narrow prefix's ids, growing with the number
of ids under a broad prefix (a whole database). The substring stage scans the label's nodes
(those under `db.` when given) until it has a page, stopping there: cheap when
matches are common, up to a scan of every column when they are rare. Tag filters are checked on the stored
tags of each candidate; a request reads at most `_ROUNDS` batches and then hands back a
cursor, so a filter that matches little never makes one request expensive.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from watershed.api.service.pages import Page, decode_cursor, encode_cursor
from watershed.graph import ids
from watershed.graph.errors import WatershedError
from watershed.graph.model import TagMap, tag_values
from watershed.graph.store import GraphStore


class SearchError(WatershedError, ValueError):
    """A search the graph cannot answer as asked (a tag filter outside the policy)."""


class SearchHit(BaseModel):
    id: str
    label: Literal["Table", "Column"]
    db: str
    table: str
    name: str
    type: str | None = None
    tags: TagMap = Field(default_factory=dict)


_ROUNDS = 10
# A prefix is asked as an id range, [prefix, next): FalkorDB answers `STARTS WITH` together with
# another condition on the id by scanning the whole index, but a range by reading just that part.
# The cursor is compared as a plain string (`toString`): FalkorDB's index compares ids without
# regard to case (and folds non-ASCII ones), unlike ORDER BY, so an indexed `n.id > $after` lost
# the page's later ids (`ods.订单` after `ods.z`); for the same reason the range may hold a case
# twin of the prefix, which the caller drops.
_PREFIX = (
    "MATCH (n:{label}) WHERE n.id >= $prefix{below} AND toString(n.id) > $after{tags} "
    "RETURN n.id, n.type, n.tags ORDER BY n.id LIMIT $n"
)
_BELOW = " AND n.id < $prefix_end"
# No prefix at all: every node, in the label's own order (sorting them all would cost a full sort).
_EVERYTHING = "MATCH (n:{label}) WHERE true{tags} RETURN n.id, n.type, n.tags SKIP $skip LIMIT $n"
# (Never `NOT (id range)` here: FalkorDB 4.16 then plans an index scan that takes 25x a label
# scan, and its answer still holds ids inside the range.)
_CONTAINS = (
    "MATCH (n:{label}) WHERE {scope}n.id CONTAINS $q AND NOT n.id STARTS WITH $prefix{tags} "
    "RETURN n.id, n.type, n.tags SKIP $skip LIMIT $n"
)
_IN_SCOPE = "n.id STARTS WITH $scope AND "


#: the code points a stored string can hold: UTF-8 has no surrogates
_SURROGATES = range(0xD800, 0xE000)


def _end(prefix: str) -> str | None:
    """The least string above every string starting with `prefix` (its last character that is
    not the top code point, raised by one), None when there is none (only top code points)."""
    for i in range(len(prefix) - 1, -1, -1):
        code = ord(prefix[i]) + 1
        if code in _SURROGATES:
            code = _SURROGATES.stop
        if code <= sys.maxunicode:
            return prefix[:i] + chr(code)
    return None


def _text(name: str, value: str) -> str:
    """A query's text as the graph can take it: a lone surrogate (undecodable input, such as a
    command-line argument that is not UTF-8) is refused naming the parameter."""
    if any(ord(c) in _SURROGATES for c in value):
        raise SearchError(f"{name} {value!a}: not valid text (a lone surrogate: undecodable input)")
    return value


@dataclass
class TagFilter:
    key: str
    op: Literal["has", "=", ">="]
    value: str | None
    levels: list[str] | None = None

    def matches(self, tags: dict[str, list[str]]) -> bool:
        values = tags.get(self.key)
        if not values:
            return False
        if self.op == "has":
            return True
        if self.op == "=":
            return self.value in values
        rank = self.levels.index(self.value)
        return any(v in self.levels and self.levels.index(v) >= rank for v in values)


def parse_filter(text: str, policy) -> TagFilter:
    for op in (">=", "="):
        key, sep, value = text.partition(op)
        if sep:
            break
    else:
        key, op, value = text, "has", None
    key, value = key.strip(), (value.strip() if value is not None else None)
    if key not in policy.tag_keys():
        raise SearchError(f"tag filter {text!r}: {key!r} is not a tag of the policy")
    if op == ">=":
        family = policy.sensitivity.get(key)
        if family is None:
            raise SearchError(f"tag filter {text!r}: {key} has no ordered levels (only sensitivity tags do)")
        if value not in family.levels:
            raise SearchError(
                f"tag filter {text!r}: {value!r} is not a level of {key} ({', '.join(family.levels)})"
            )
        return TagFilter(key, ">=", value, list(family.levels))
    if op == "=" and not value:
        raise SearchError(f"tag filter {text!r}: expected key, key=value or key>=value")
    return TagFilter(key, op, value)  # type: ignore[arg-type]


def _hit(node_id: str, label: str, node_type: str | None, tags_text: str | None) -> SearchHit:
    parts = ids.split(node_id)
    table = ids.join(*parts[:2])
    return SearchHit(
        id=node_id,
        label=label,
        db=parts[0],
        table=table,
        name=parts[-1],
        type=node_type,
        tags=tag_values(tags_text),
    )


def search_nodes(
    graph: GraphStore,
    policy,
    q: str = "",
    kind: Literal["table", "column"] | None = None,
    db: str | None = None,
    tag: list[str] | tuple[str, ...] = (),
    limit: int = 50,
    cursor: str | None = None,
) -> Page[SearchHit]:
    """One page of tables and columns matching `q` (prefix first, then substring) and the tag filters."""
    query = _text("q", q).strip().lower()
    scope = f"{_text('db', db).strip().lower()}." if db else ""
    prefix = query if query.startswith(scope) else scope + query
    filters = [parse_filter(t, policy) for t in tag]
    # Candidates must at least mention every filtered key in their stored tags JSON.
    tag_clause = "".join(f" AND n.tags CONTAINS $key{i}" for i in range(len(filters)))
    key_params = {f"key{i}": json.dumps(f.key) + ":" for i, f in enumerate(filters)}
    labels = ["Table"] if kind == "table" else ["Column"] if kind == "column" else ["Table", "Column"]
    stages = [(label, "prefix") for label in labels]
    if query:
        stages += [(label, "contains") for label in labels]
    position = decode_cursor(cursor)
    stage, after, skip = (
        int(position.get("stage", 0)),
        str(position.get("after", "")),
        int(position.get("skip", 0)),
    )
    items: list[SearchHit] = []
    fetch = min(limit * 2, 1000)
    for _ in range(_ROUNDS):
        if stage >= len(stages) or len(items) >= limit:
            break
        label, phase = stages[stage]
        if phase == "prefix" and prefix:
            end = _end(prefix)
            rows = graph.read(
                _PREFIX.format(label=label, tags=tag_clause, below=_BELOW if end is not None else ""),
                {"prefix": prefix, "prefix_end": end, "after": after, "n": fetch, **key_params},
            )
        elif phase == "prefix":
            rows = graph.read(
                _EVERYTHING.format(label=label, tags=tag_clause), {"skip": skip, "n": fetch, **key_params}
            )
        else:
            rows = graph.read(
                _CONTAINS.format(label=label, tags=tag_clause, scope=_IN_SCOPE if scope else ""),
                {"q": query, "scope": scope, "prefix": prefix, "skip": skip, "n": fetch, **key_params},
            )
        consumed = 0
        for node_id, node_type, tags_text in rows:
            consumed += 1
            after, skip = node_id, skip + 1
            if phase == "prefix" and not node_id.startswith(prefix):
                continue
            hit = _hit(node_id, label, node_type, tags_text)
            if all(f.matches(hit.tags) for f in filters):
                items.append(hit)
                if len(items) >= limit:
                    break
        if consumed == len(rows) and len(rows) < fetch:
            stage, after, skip = stage + 1, "", 0
    more = stage < len(stages)
    return Page[SearchHit](
        items=items,
        next_cursor=encode_cursor({"stage": stage, "after": after, "skip": skip}) if more else None,
    )
