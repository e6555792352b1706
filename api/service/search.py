"""The search of the steward service and `watershed graph search`: tables and columns by id prefix and then by the words of their ids (both indexed), with tag filters; ranked, counted, and tolerant of a typo.

Reading: no stage reads every node, whether something matches or not. The prefix stage reads the
id index's range for the prefix and sorts what it finds (keyset paging by id): cheap for a table's
or a narrow prefix's ids, growing with the number of ids under a broad prefix (a whole database). The id-word
stage asks the graph's full-text index on `id_words` (`GraphStore.id_word_matches`: the id cut into
words at `.`, `_`, `-`, `:`, `'`, `/` and backticks, set by the write that creates the node:
graph/queries.py `id_words`) for nodes having, for each word of the query, a word starting with it
(`cust` and `order cust` find `sales.orders.customer_id`), seeks each candidate by id and checks
the words here (`has_words`): it reads what the index answers, a batch at a time. A substring inside
a word (`stomer`, `_id` after a letter) no longer matches: that was a scan of every id (88 ms at
1M columns, 250 ms when matches were rare). Digits stay in their word (`id0` is one word, which
`id` finds and `0` does not). Tag filters are checked on the stored tags of each candidate.

Ranking and the total: a first page gathers the first matches that `RANK_PAGES` (two) pages of
its size hold, at least `RANK_FLOOR` (100) and at most `RANK_WINDOW` (500): its window, kept in
its cursor for the pages after it (reading at most `_GATHER_ROUNDS` batches of prefix matches and
as many of the other stages'; a dotted query whose prefix matches fill the page reads no other
match: they would rank after them). A page's cost then follows its size, not the 500 hits it
ranked before (each sought, checked, its roots read: 170 ms p99 at 1M columns for a column name
matching 25,000 columns). It ranks them (`rank`): an exact match (the id, or the name, is the
query) before a prefix match (of the id or the name) before an id-word match before a match of
the description alone; then roots (no column or table flows into them: where tags start) before
derived nodes with tags before derived nodes without; then the id. `total` is the number
gathered: exact when the gathering read every match (no more than the window), else a lower
bound, the window's size (`total_bounded`). Pages walk the ranked window by offset (the cursor
keeps the total and the window); past it they read on in stage order, unranked, at most `_ROUNDS` batches a request, so a
filter that matches little never makes one request expensive.

A typo: when nothing matches a query of 4 or more characters, names one edit away from its last
dotted part (a character added, dropped, changed, or two neighbours swapped: `phone_nrm` finds
`phone_norm`) are looked for, under the rest of it, among the id-word index's candidates
(`_typos`): per label, two asks of at most `_TYPO_CANDIDATES` ids each, under the words of the
scope (the query's dotted part, or `db`): ids with a word starting with each word of the name's
first half (an edit in the second half leaves the first whole, separators included), and ids
with a word at most one edit from each word of the name (`GraphStore.id_word_matches`' `near`:
an edit inside one word). The candidate ids whose last part is one edit away (`one_edit_apart`) are sought by
id (for their tags); the page then says `approximate`. It reads what the
index answers, not the label (a scan of every name: 1.3 s p50 at 1M columns). Not found any
more: an edit in the first half that adds or drops a separator (`ph_one_norm` for `phone_norm`,
`odsuser_id` for `ods_user_id`); on FalkorDB two neighbours swapped in the first half (`hpone_norm`: RediSearch's
fuzzy match counts a swap as two edits; Lucene's, on Neo4j, as one); a name past the first
`_TYPO_CANDIDATES` candidates of both asks (a first half starting the words of more ids).

Table hits carry `sensitive`: the sensitivity families (`pii`) some column of the table has.

Descriptions: after the id stages, a stage per label finds the nodes whose description (their own,
the catalog's or a propagated one: propagation/metadata.py) holds every word of the query and
that the id stages did not find; they rank after the id matches.
Every hit carries its description. The candidates come from the graph's full-text index
(`GraphStore.description_matches`: a word of the description starts with each word's first run of
letters and digits), each then sought by id and checked for the words as typed: the stage reads
what the index answers, not every node (it was 0.5-1.5 s at 1M columns).
"""

from __future__ import annotations

import functools
import json
import re
import sys
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from watershed.api.service.pages import CursorError, Page, decode_cursor, encode_cursor
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
    #: a table's: the sensitivity families (`pii`) at least one of its columns has
    sensitive: list[str] = Field(default_factory=list)
    #: the node's description as shown (its own, the catalog's or propagated)
    description: str | None = None


class SearchPage(Page[SearchHit]):
    """A page of hits with the number of matches (`total`: a lower bound when `total_bounded`)."""

    total_bounded: bool = False
    #: nothing matched the query as typed: these hits are names one edit away from it
    approximate: bool = False


#: batches one request reads past the ranked window
_ROUNDS = 10
#: the most matches a first page gathers, ranks and counts
RANK_WINDOW = 500
#: a first page gathers what this many pages hold, at least `RANK_FLOOR` (at most `RANK_WINDOW`):
#: its cost follows the page's size (500 hits took 170 ms p99 at 1M columns, a page of 50 needs 100)
RANK_PAGES = 2
RANK_FLOOR = 100
#: batches the gathering reads at most (each up to 1,000 rows)
_GATHER_ROUNDS = 20
#: the shortest query a typo is looked for (a shorter one has no half to anchor the index's ask)
TYPO_MIN = 4
#: candidates the typo stage reads per index ask and label (each then sought by id)
_TYPO_CANDIDATES = 500
# A prefix is asked as an id range, [prefix, next): FalkorDB answers `STARTS WITH` together with
# another condition on the id by scanning the whole index, but a range by reading just that part.
# The cursor is compared as a plain string (`toString`): FalkorDB's index compares ids without
# regard to case (and folds non-ASCII ones), unlike ORDER BY, so an indexed `n.id > $after` lost
# the page's later ids (`ods.订单` after `ods.z`); for the same reason the range may hold a case
# twin of the prefix, which the caller drops.
_PREFIX = (
    "MATCH (n:{label}) WHERE n.id >= $prefix{below} AND toString(n.id) > $after{tags} "
    "RETURN n.id, n.type, n.tags, n.description ORDER BY n.id LIMIT $n"
)
_BELOW = " AND n.id < $prefix_end"
# No prefix at all: every node, in the label's own order (sorting them all would cost a full sort).
_EVERYTHING = (
    "MATCH (n:{label}) WHERE true{tags} RETURN n.id, n.type, n.tags, n.description SKIP $skip LIMIT $n"
)
# Of the id-word index's candidates (GraphStore.id_word_matches: a word of the id starts with each
# word of the query), those the prefix stage did not find, each sought by id (the conditions after
# WITH, where FalkorDB keeps the seek); whether every word starts a word of the id is checked here.
_WORDS = (
    "UNWIND $ids AS id MATCH (n:{label} {{id: id}}) WITH n WHERE {scope}NOT n.id STARTS WITH $prefix{tags} "
    "RETURN n.id, n.type, n.tags, n.description"
)
# Of the description index's candidates (GraphStore.description_matches: a word of the
# description starts with each word of the query), those whose description holds every word as
# typed, of nodes the prefix stage did not find (the id-word stage's are dropped here). Each sought by id; the conditions after WITH, where
# FalkorDB keeps the seek (tests/api/service/test_search_described_index.py). The words come
# through WITH: FalkorDB 4.16's `all(w IN $words ...)` right after a WITH held for no row.
_DESCRIBED = (
    "UNWIND $ids AS id MATCH (n:{label} {{id: id}}) WITH n, $words AS words WHERE {scope}NOT n.id STARTS WITH $prefix "
    "AND all(w IN words WHERE toLower(n.description) CONTAINS w){tags} "
    "RETURN n.id, n.type, n.tags, n.description"
)
_IN_SCOPE = "n.id STARTS WITH $scope AND "
#: the stages whose candidates come from a full-text index, in its order (`skip` counts them)
_INDEXED = ("words", "described")
#: the fewest candidates such a stage asks its index for at once
_INDEX_BATCH = 100
#: a word of an id or a query, as both full-text indexes cut `id_words` (graph.queries.id_words)
_WORD = re.compile(r"[^\W_]+")


def words_of(text: str) -> list[str]:
    """The words of an id or a query: its runs of letters and digits, lowercased."""
    return _WORD.findall(text.lower())


def has_words(node_id: str, words: list[str]) -> bool:
    """Whether every one of `words` (a query's, `words_of`) starts a word of `node_id`, the
    id-word stage's match: `cust` and `order cust` find `sales.orders.customer_id`, `stomer` not."""
    return bool(words) and _starting_words(tuple(words)).match(node_id.lower()) is not None


@functools.lru_cache(maxsize=64)
def _starting_words(words: tuple[str, ...]) -> re.Pattern:
    """One pattern for every word, each where no letter or digit comes before it (a window's ids
    are checked once each for a query, by the stage and by `rank`)."""
    return re.compile("".join(rf"(?=.*?(?<![^\W_]){re.escape(word)})" for word in words), re.DOTALL)


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


def _hit(
    node_id: str, label: str, node_type: str | None, tags_text: str | None, description: str | None = None
) -> SearchHit:
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
        description=description,
    )


# Of a window's hits, the roots: nothing flows into them (one index lookup per id).
_ROOTS = "UNWIND $ids AS id MATCH (n:{label} {{id: id}}) WHERE NOT ((:{label})-[:FLOWS_TO]->(n)) RETURN n.id"
# Of a page's tables, the columns holding a sensitivity key (a condition on their stored tags).
# The condition comes after WITH: written in the MATCH's WHERE, FalkorDB planned a scan of every
# column per table (5.5 s for a page of 50 tables at 1M columns) instead of a seek of each table.
_SENSITIVE = (
    "UNWIND $ids AS id MATCH (:Table {id: id})-[:HAS_COLUMN]->(c:Column) "
    "WITH id, c WHERE c.tags CONTAINS $key RETURN id, c.tags"
)
# The typo stage's names one edit away (`_typos`: checked on the index's candidate ids), each sought
# by id (the tag conditions after WITH, where FalkorDB keeps the seek).
_TYPO = "UNWIND $ids AS id MATCH (n:{label} {{id: id}}) WITH n WHERE true{tags} RETURN n.id, n.type, n.tags, n.description"


@dataclass
class _Ask:
    """What one search asks, read by every stage."""

    graph: GraphStore
    query: str
    #: the query's words (`words_of`), asked of the id-word index
    words: list[str]
    scope: str
    prefix: str
    filters: list[TagFilter]
    tag_clause: str
    key_params: dict[str, str]
    stages: list[tuple[str, str]]


def _read(
    ask: _Ask, position: dict, want: int, rounds: int, stop: int | None = None
) -> tuple[list[SearchHit], dict | None]:
    """Up to `want` hits in stage order from `position` (not past stage `stop` when given),
    reading at most `rounds` batches; the position after them, None when every stage is read."""
    stage, after, skip = (
        int(position.get("stage", 0)),
        str(position.get("after", "")),
        int(position.get("skip", 0)),
    )
    items: list[SearchHit] = []
    fetch = min(want * 2, 1000)
    for _ in range(rounds):
        if stage >= len(ask.stages) or len(items) >= want or (stop is not None and stage >= stop):
            break
        label, phase = ask.stages[stage]
        found: list[str] = []  # the description index's candidates
        places: dict[str, int] = {}  # each one's place in the index's order, from 1
        if phase == "prefix" and ask.prefix:
            end = _end(ask.prefix)
            rows = ask.graph.read(
                _PREFIX.format(label=label, tags=ask.tag_clause, below=_BELOW if end is not None else ""),
                {"prefix": ask.prefix, "prefix_end": end, "after": after, "n": fetch, **ask.key_params},
            )
        elif phase == "prefix":
            rows = ask.graph.read(
                _EVERYTHING.format(label=label, tags=ask.tag_clause),
                {"skip": skip, "n": fetch, **ask.key_params},
            )
        else:
            # `skip` counts the index's candidates, which the conditions then narrow. Each is a seek:
            # asked for what the page still lacks (at least `_INDEX_BATCH`), not twice as many
            size = min(max(want - len(items), _INDEX_BATCH), 1000)
            if phase == "words":
                found = ask.graph.id_word_matches(label, ask.words, skip, size)
            else:
                found = ask.graph.description_matches(label, ask.query.split(), skip, size)
            rows = (
                ask.graph.read(
                    (_WORDS if phase == "words" else _DESCRIBED).format(
                        label=label, tags=ask.tag_clause, scope=_IN_SCOPE if ask.scope else ""
                    ),
                    {
                        "ids": found,
                        "prefix": ask.prefix,
                        "words": ask.query.split(),
                        "scope": ask.scope,
                        **ask.key_params,
                    },
                )
                if found
                else []
            )
            places = {node_id: place for place, node_id in enumerate(found, start=skip + 1)}
            rows.sort(key=lambda row: places[row[0]])
        consumed, read_to = 0, skip + len(found)
        for node_id, node_type, tags_text, description in rows:
            consumed += 1
            after, skip = node_id, places[node_id] if phase in _INDEXED else skip + 1
            if phase == "prefix" and not node_id.startswith(ask.prefix):
                continue
            # the id-word stage's own matches; the description stage leaves them to it
            if phase in _INDEXED and has_words(node_id, ask.words) != (phase == "words"):
                continue
            hit = _hit(node_id, label, node_type, tags_text, description)
            if all(f.matches(hit.tags) for f in ask.filters):
                items.append(hit)
                if len(items) >= want:
                    break
        if consumed == len(rows) and phase in _INDEXED:
            skip = read_to
            if len(found) < size:
                stage, after, skip = stage + 1, "", 0
        elif consumed == len(rows) and len(rows) < fetch:
            stage, after, skip = stage + 1, "", 0
    done = stage >= len(ask.stages)
    return items, None if done else {"stage": stage, "after": after, "skip": skip}


def one_edit_apart(a: str, b: str) -> bool:
    """Whether `b` is `a` with one character added, dropped or changed, or two neighbours swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        swapped = i + 1 < len(a) and a[i] == b[i + 1] and a[i + 1] == b[i] and a[i + 2 :] == b[i + 2 :]
        return swapped or a[i + 1 :] == b[i + 1 :]
    if len(a) < len(b):
        return a[i:] == b[i + 1 :]
    return a[i + 1 :] == b[i:]


def _typos(ask: _Ask) -> list[SearchHit]:
    """Nodes whose name is one edit away from the query's last part (under the rest of it), among
    the id-word index's candidates: ids with a word starting with each word of the name's first
    half (an edit in its second half leaves the first whole), and ids with a word at most one edit
    from each word of the name (an edit inside one word); each ask under the scope's words."""
    parent, _, name = ask.query.rpartition(".")
    under = f"{parent}." if parent else ""
    if len(name) < TYPO_MIN or (ask.scope and under and not under.startswith(ask.scope)):
        return []
    scope = under or ask.scope
    head = words_of(name[: len(name) // 2])
    asks = [(words_of(scope) + head, ())] if head else []
    asks.append((words_of(scope), words_of(name)))
    found = []
    for label in dict.fromkeys(label for label, _ in ask.stages):
        # the name is the id's last part: only the names one edit away are sought
        close = sorted(
            {
                node_id
                for words, fuzzy in asks
                for node_id in ask.graph.id_word_matches(label, words, 0, _TYPO_CANDIDATES, near=fuzzy)
                if node_id.startswith(scope) and one_edit_apart(name, ids.split(node_id)[-1])
            }
        )
        if not close:
            continue
        rows = ask.graph.read(
            _TYPO.format(label=label, tags=ask.tag_clause), {"ids": close, **ask.key_params}
        )
        for node_id, node_type, tags_text, description in sorted(rows):
            hit = _hit(node_id, label, node_type, tags_text, description)
            if all(f.matches(hit.tags) for f in ask.filters):
                found.append(hit)
    return found[:RANK_WINDOW]


def rank(hits: list[SearchHit], query: str, roots: set[str]) -> list[SearchHit]:
    """Exact (id or name is the query) before prefix (of the id or the name) before a match of the
    id's words (each word of the query starts one: `has_words`) before a match of the description
    alone; then roots before derived nodes with tags before derived nodes without; then the id."""
    words = words_of(query)

    def key(hit: SearchHit) -> tuple:
        if not query or query in (hit.id, hit.name):
            matched = 0
        elif hit.id.startswith(query) or hit.name.startswith(query):
            matched = 1
        elif has_words(hit.id, words):
            matched = 2
        else:
            matched = 3
        standing = 0 if hit.id in roots else 1 if hit.tags else 2
        return matched, standing, hit.id

    return sorted(hits, key=key)


def _roots(graph: GraphStore, hits: list[SearchHit]) -> set[str]:
    roots: set[str] = set()
    for label in ("Table", "Column"):
        wanted = [hit.id for hit in hits if hit.label == label]
        if wanted:
            roots.update(row[0] for row in graph.read(_ROOTS.format(label=label), {"ids": wanted}))
    return roots


def _mark_sensitive(graph: GraphStore, policy, hits: list[SearchHit]) -> None:
    tables = {hit.id: hit for hit in hits if hit.label == "Table"}
    if not tables:
        return
    for family in sorted(policy.sensitivity):
        rows = graph.read(_SENSITIVE, {"ids": list(tables), "key": json.dumps(family) + ":"})
        for table_id, tags_text in rows:
            hit = tables[table_id]
            if family not in hit.sensitive and tag_values(tags_text).get(family):
                hit.sensitive.append(family)


def search_nodes(
    graph: GraphStore,
    policy,
    q: str = "",
    kind: Literal["table", "column"] | None = None,
    db: str | None = None,
    tag: list[str] | tuple[str, ...] = (),
    limit: int = 50,
    cursor: str | None = None,
) -> SearchPage:
    """One page of tables and columns matching `q` and the tag filters, ranked (`rank`) within
    the first `RANK_WINDOW` matches, with their total; names one edit away when nothing matches."""
    query = _text("q", q).strip().lower()
    scope = f"{_text('db', db).strip().lower()}." if db else ""
    prefix = query if query.startswith(scope) else scope + query
    filters = [parse_filter(t, policy) for t in tag]
    labels = ["Table"] if kind == "table" else ["Column"] if kind == "column" else ["Table", "Column"]
    stages = [(label, "prefix") for label in labels]
    if query:
        stages += [(label, "words") for label in labels]
        stages += [(label, "described") for label in labels]
    ask = _Ask(
        graph=graph,
        query=query,
        words=words_of(query),
        scope=scope,
        prefix=prefix,
        filters=filters,
        # Candidates must at least mention every filtered key in their stored tags JSON.
        tag_clause="".join(f" AND n.tags CONTAINS $key{i}" for i in range(len(filters))),
        key_params={f"key{i}": json.dumps(f.key) + ":" for i, f in enumerate(filters)},
        stages=stages,
    )
    position = decode_cursor(cursor)
    try:
        total, bounded = int(position.get("total", 0)), bool(position.get("bounded", False))
        offset = int(position.get("offset", 0))
        # the window the first page ranked: the pages after it walk the same one
        window_size = int(position.get("window", max(RANK_FLOOR, RANK_PAGES * limit)))
    except (TypeError, ValueError):
        raise CursorError("cursor: not a cursor this API handed out") from None
    window_size = min(max(window_size, 1), RANK_WINDOW)
    if "stage" in position:
        # past the ranked window: on in stage order
        items, rest = _read(ask, position, limit, _ROUNDS)
        next_cursor = None if rest is None else encode_cursor({**rest, "total": total, "bounded": True})
        _mark_sensitive(graph, policy, items)
        return SearchPage(items=items, next_cursor=next_cursor, total=total, total_bounded=bounded)

    window, rest = _read(ask, {}, window_size, _GATHER_ROUNDS, stop=len(labels))
    # A dotted query (an id's beginning) whose prefix matches fill a page is answered from them:
    # every other match ranks after them.
    if rest is not None and rest["stage"] >= len(labels) and not ("." in query and len(window) >= limit):
        more, rest = _read(ask, rest, window_size - len(window), _GATHER_ROUNDS)
        window += more
    approximate = False
    if not window and rest is None and query:
        window, approximate = _typos(ask), True
    window = rank(window, query, _roots(graph, window))
    total, bounded = len(window), rest is not None
    items = window[offset : offset + limit]
    if offset + limit < len(window):
        next_cursor = encode_cursor(
            {"offset": offset + limit, "total": total, "bounded": bounded, "window": window_size}
        )
    elif rest is not None:
        next_cursor = encode_cursor({**rest, "total": total, "bounded": bounded})
    else:
        next_cursor = None
    _mark_sensitive(graph, policy, items)
    return SearchPage(
        items=items,
        next_cursor=next_cursor,
        total=total,
        total_bounded=bounded,
        approximate=approximate and bool(window),
    )
