"""Coverage: how much of the warehouse's sensitive data the protection policy protects, by database
and owner, stored as one snapshot per date so the home page reads it without scanning the graph
(`watershed coverage`, the nightly `coverage` step, GET/POST /api/v1/coverage, the UI's dashboard).

What a column counts as (docs/api.md "Coverage"):

- sensitive: its tags (as the last propagation run left them on `Column.tags`) hold a value of a
  sensitivity family of the tag policy (`pii=L3`);
- covered: a rule of the policy's protection section matches its tags (the planner's `rule_for`);
- protected: covered, and its table's protection record (what an apply ran: the table's options
  set and its files rewritten) holds the column with the rule's key and mask;
- unprotected: covered, not protected (the policy asks for it and no apply has done it yet);
- uncovered: sensitive, and no rule asks for its protection (a pseudonymised level, say).

The compute reads the graph a batch of tables at a time, as the protection planner does, and
keeps only the sensitive columns. A snapshot is one `CoverageSnapshot` node whose id is the date it
was computed for: computing a date again replaces it in one statement, and only the newest
`coverage_keep` snapshots are kept.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

from watershed.api.service import audit
from watershed.graph import ids
from watershed.graph.model import tag_values
from watershed.graph.protection import ProtectionPolicy, TableProtection
from watershed.graph.settings import Count, WatershedSettings
from watershed.graph.store import GraphStore
from watershed.orc_crypto.protect import records
from watershed.orc_crypto.protect.checks import normal_mask
from watershed.propagation.policy import Policy

#: tables per read of the compute (their columns in one query, their protection records in another)
BATCH = 500
#: downstream items a snapshot's summary lists (all of them are in its column lists)
SUMMARY_DOWNSTREAM = 100
#: databases' list nodes per write statement
LIST_BATCH = 50
#: protected roots named per downstream item
ROOTS_SHOWN = 3
DEFAULT_TOP = 20
MAX_TOP = 500
DEFAULT_TREND = 30
DEFAULT_LIMIT = 50
MAX_LIMIT = 1_000
NO_OWNER = "(no owner)"

Status = Literal["protected", "unprotected", "uncovered"]
#: the lists a snapshot keeps whole, by column id
Listed = Literal["unprotected", "uncovered", "downstream"]
LISTED: tuple[Listed, ...] = ("unprotected", "uncovered", "downstream")

#: the columns of a batch of tables, counted per table and owner in the graph: a row per column
#: would cost more to read than everything else (most columns carry no tag)
COLUMN_COUNTS = (
    "UNWIND $ids AS id MATCH (t:Table {id: id})-[:HAS_COLUMN]->(c:Column) "
    "RETURN t.id, t.db, t.owner, c.owner, count(c)"
)
#: the filter after WITH: FalkorDB 4.16 plans `MATCH ... WHERE c.tags IS NOT NULL` as a scan of
#: every column per table (37 s instead of 0.1 s for 1,357 tables of 52,241 columns)
TAGGED_COLUMNS = (
    "UNWIND $ids AS id MATCH (t:Table {id: id})-[:HAS_COLUMN]->(c:Column) WITH t, c WHERE c.tags IS NOT NULL "
    "RETURN t.id, t.db, t.owner, c.id, c.name, c.owner, c.tags"
)
OPEN_PROPOSALS = "MATCH (p:DiscoveryProposal {status: 'open'}) RETURN p.table"
SAVE = "MERGE (s:CoverageSnapshot {id: $id}) SET s.at = $at, s.record = $record, s.owners = $owners"
#: a snapshot's column lists, one node per database: a click on a database's number reads its own
SAVE_LISTS = "UNWIND $rows AS r CREATE (:CoverageList {id: r.id, snapshot: $id, database: r.database, columns: r.columns})"
#: the snapshots replaced or no longer kept, with their lists
DROP_LISTS = "MATCH (l:CoverageList) WHERE l.snapshot IN $ids DELETE l"
DROP = "MATCH (s:CoverageSnapshot) WHERE s.id IN $ids DELETE s"
LATEST = "MATCH (s:CoverageSnapshot) RETURN s.id, s.record, s.owners ORDER BY s.id DESC LIMIT 1"
EXISTS = "MATCH (s:CoverageSnapshot {id: $id}) RETURN s.id"
TREND = "MATCH (s:CoverageSnapshot) RETURN s.id, s.record ORDER BY s.id DESC LIMIT $limit"
COLUMN_LISTS = (
    "MATCH (l:CoverageList {snapshot: $id}) WHERE ($database IS NULL OR l.database = $database) "
    "AND ($databases IS NULL OR l.database IN $databases) RETURN l.columns"
)
SNAPSHOT_IDS = "MATCH (s:CoverageSnapshot) RETURN s.id ORDER BY s.id DESC"
#: each nightly summary's status, one node per logical date (written by the summary step)
SAVE_NIGHTLY = "MERGE (n:NightlyRun {id: $id}) SET n.status = $status, n.at = $at, n.record = $record"
LAST_NIGHTLY = "MATCH (n:NightlyRun) RETURN n.id, n.status, n.at, n.record ORDER BY n.id DESC LIMIT 1"

#: the property names these statements write (graph/falkordb_store.py REGISTERED_PROPERTIES)
PROPERTIES = ("id", "at", "record", "owners", "snapshot", "database", "columns", "status")


class CoverageError(ValueError):
    """A bad request (the message names the input)."""


class CoverageSettings(WatershedSettings):
    #: (WATERSHED_COVERAGE_KEEP) how many snapshots (dates) are kept; older ones are deleted
    coverage_keep: Count = 90


class CoverageCounts(BaseModel):
    columns: int = 0
    sensitive: int = 0
    covered: int = 0
    protected: int = 0
    unprotected: int = 0
    uncovered: int = 0
    #: discovery proposals waiting for a steward (by the proposal's table)
    proposals: int = 0
    #: sensitive columns, not protected, whose tag derives from a protected column
    downstream: int = 0

    def add(self, other: CoverageCounts) -> None:
        for name in CoverageCounts.model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))


class CoverageGroup(CoverageCounts):
    database: str
    #: None on a database's row; an owner's row names it (NO_OWNER when nobody owns the columns)
    owner: str | None = None


class DownstreamItem(BaseModel):
    column: str
    database: str
    owner: str
    status: Status
    #: the sensitivity tag, `pii=L3`
    tag: str
    #: protected columns its tag derives from (up to ROOTS_SHOWN of them)
    roots: list[str]


class CoverageSnapshot(BaseModel):
    """One date's coverage: totals, a row per database, the downstream items it lists."""

    id: str
    at: str
    seconds: float = 0.0
    policy_digest: str | None = None
    #: the policy's sensitivity families (`pii`): the tags that make a column sensitive
    families: list[str] = Field(default_factory=list)
    totals: CoverageCounts = Field(default_factory=CoverageCounts)
    databases: list[CoverageGroup] = Field(default_factory=list)
    #: the first SUMMARY_DOWNSTREAM of them, most sensitive tag first
    downstream: list[DownstreamItem] = Field(default_factory=list)


class ListedColumn(BaseModel):
    column: str
    database: str
    owner: str
    tag: str


class Computed(BaseModel):
    """A compute's whole result: the snapshot, the owners' rows and the columns of each list."""

    snapshot: CoverageSnapshot
    owners: list[CoverageGroup]
    #: unprotected / uncovered: the columns; downstream: all its items
    unprotected: list[ListedColumn] = Field(default_factory=list)
    uncovered: list[ListedColumn] = Field(default_factory=list)
    downstream: list[DownstreamItem] = Field(default_factory=list)


class TrendPoint(BaseModel):
    id: str
    at: str
    totals: CoverageCounts


class NightlyStatus(BaseModel):
    date: str
    status: str
    at: str
    missing: list[str] = Field(default_factory=list)


class Coverage(BaseModel):
    """What GET /coverage answers: the newest snapshot (bounded), the last nightly, the trend."""

    snapshot: CoverageSnapshot | None = None
    #: the owners with the most unprotected columns, at most `top` (as the snapshot's databases)
    owners: list[CoverageGroup] = Field(default_factory=list)
    owners_total: int = 0
    databases_total: int = 0
    #: databases left out because the caller may not see them
    hidden_databases: int = 0
    nightly: NightlyStatus | None = None
    #: the last snapshots' totals, oldest first
    trend: list[TrendPoint] = Field(default_factory=list)


class ColumnPage(BaseModel):
    snapshot: str
    list: Listed
    total: int
    offset: int
    limit: int
    columns: list[ListedColumn | DownstreamItem]


# ------------------------------------------------------------------ compute


@dataclass(slots=True)
class _Sensitive:
    database: str
    owner: str
    status: Status
    tag: str
    rank: int
    #: the tag is the column's own (seed, manual, discovered), not propagated
    root: bool
    sources: tuple[str, ...]


def _sensitive_tag(policy: Policy, tags_text: str, tags: Mapping[str, list[str]]):
    """(tag text, rank, is a root, provenance sources) of the column's most sensitive family tag,
    or None when it has none."""
    best = None
    decoded = json.loads(tags_text)
    for key, family in policy.sensitivity.items():
        levels = [v for v in tags.get(key, ()) if v in family.levels]
        if not levels:
            continue
        level = max(levels, key=family.rank)
        rank = family.rank(level)
        if best is None or rank > best[1]:
            item = decoded[key]
            sources = tuple(p[0] for p in item.get("p") or ())
            best = (f"{key}={level}", rank, item.get("o") != "propagated", sources)
    return best


def _status(protection: ProtectionPolicy | None, tags, name: str, record: TableProtection | None) -> Status:
    matched = protection.rule_for(tags) if protection is not None else None
    if matched is None:
        return "uncovered"
    rule = matched[0]
    have = next((key for col, key in (record.columns if record else {}).items() if col.lower() == name), None)
    if have is not None and have.key == rule.key and normal_mask(have.mask) == normal_mask(rule.mask):
        return "protected"
    return "unprotected"


def _protected_roots(found: dict[str, _Sensitive]) -> dict[str, tuple[str, ...]]:
    """Each sensitive column's protected roots (up to ROOTS_SHOWN): the protected columns holding
    their tag as their own (a seed, not propagated) that its tag's provenance leads back to
    through sensitive columns. Walked forward from the roots, so a cycle of copies is reached
    whole; a column goes back on the queue only when its (capped) set grows."""
    children: dict[str, list[str]] = {}
    for column, info in found.items():
        if not info.root:  # a root's tag is its own, whatever else of its family flows to it
            for source in info.sources:
                if source in found:
                    children.setdefault(source, []).append(column)
    reached: dict[str, set[str]] = {column: set() for column in found}
    queue = deque(sorted(c for c, info in found.items() if info.root and info.status == "protected"))
    for root in queue:
        reached[root].add(root)
    while queue:
        node = queue.popleft()
        for child in children.get(node, ()):
            have = reached[child]
            new = sorted(reached[node] - have)[: ROOTS_SHOWN - len(have)]
            if new:
                have.update(new)
                queue.append(child)
    return {column: tuple(sorted(roots)) for column, roots in reached.items()}


def compute(
    store: GraphStore, policy: Policy, day: str, *, batch_size: int = BATCH, at: str | None = None
) -> Computed:
    """The coverage of every column of the graph, as of `day` (the snapshot's id)."""
    began = time.monotonic()
    protection = policy.protection if policy.protection is not None and policy.protection.rules else None
    groups: dict[tuple[str, str], CoverageCounts] = {}
    found: dict[str, _Sensitive] = {}
    owner_of: dict[str, tuple[str, str]] = {}  # table -> (database, owner): where its proposals count
    tables = sorted(store.table_ids())
    for start in range(0, len(tables), batch_size):
        batch = tables[start : start + batch_size]
        recorded = records.table_protections(store, batch)
        for table, db, table_owner, column_owner, count in store.read(COLUMN_COUNTS, {"ids": batch}):
            database = db or ids.split(table)[0]
            owner_of.setdefault(table, (database, table_owner or NO_OWNER))
            groups.setdefault(
                (database, column_owner or table_owner or NO_OWNER), CoverageCounts()
            ).columns += count
        for table, db, table_owner, column, name, column_owner, tags_text in store.read(
            TAGGED_COLUMNS, {"ids": batch}
        ):
            database, owner = db or ids.split(table)[0], column_owner or table_owner or NO_OWNER
            counts = groups[(database, owner)]
            tags = tag_values(tags_text)
            sensitive = _sensitive_tag(policy, tags_text, tags)
            if sensitive is None:
                continue
            status = _status(protection, tags, (name or ids.name(column)).lower(), recorded.get(table))
            counts.sensitive += 1
            setattr(counts, status, getattr(counts, status) + 1)
            if status != "uncovered":
                counts.covered += 1
            tag, rank, root, sources = sensitive
            found[column] = _Sensitive(database, owner, status, tag, rank, root, sources)
    for table in (row[0] for row in store.read(OPEN_PROPOSALS)):
        if table:
            key = owner_of.get(table) or (ids.split(table)[0], NO_OWNER)
            groups.setdefault(key, CoverageCounts()).proposals += 1

    roots = _protected_roots(found)
    downstream = [
        DownstreamItem(
            column=column,
            database=info.database,
            owner=info.owner,
            status=info.status,
            tag=info.tag,
            roots=list(roots[column]),
        )
        for column, info in found.items()
        if info.status != "protected" and roots[column]
    ]
    downstream.sort(key=lambda item: (-found[item.column].rank, item.column))
    for item in downstream:
        groups[(item.database, item.owner)].downstream += 1

    owners = [CoverageGroup(database=db, owner=owner, **c.model_dump()) for (db, owner), c in groups.items()]
    by_db: dict[str, CoverageGroup] = {}
    for row in owners:
        by_db.setdefault(row.database, CoverageGroup(database=row.database)).add(row)
    totals = CoverageCounts()
    for row in by_db.values():
        totals.add(row)

    def listed(status: Status) -> list[ListedColumn]:
        return [
            ListedColumn(column=column, database=info.database, owner=info.owner, tag=info.tag)
            for column, info in sorted(found.items())
            if info.status == status
        ]

    snapshot = CoverageSnapshot(
        id=day,
        at=at or datetime.now(UTC).isoformat(timespec="seconds"),
        policy_digest=protection.digest() if protection is not None else None,
        families=list(policy.sensitivity),
        totals=totals,
        databases=_ranked(by_db.values()),
        downstream=downstream[:SUMMARY_DOWNSTREAM],
    )
    snapshot.seconds = round(time.monotonic() - began, 3)
    return Computed(
        snapshot=snapshot,
        owners=_ranked(owners),
        unprotected=listed("unprotected"),
        uncovered=listed("uncovered"),
        downstream=downstream,
    )


def _ranked(rows: Iterable[CoverageGroup]) -> list[CoverageGroup]:
    """The most unprotected first, then the most uncovered, then by name."""
    return sorted(
        rows, key=lambda r: (-r.unprotected, -r.downstream, -r.uncovered, r.database, r.owner or "")
    )


# ------------------------------------------------------------------ store and read


def save(store: GraphStore, computed: Computed, keep: int | None = None) -> CoverageSnapshot:
    """Store the snapshot (replacing the one of its date) and delete all but the newest `keep`."""
    keep = keep if keep is not None else CoverageSettings().coverage_keep
    if keep < 1:
        raise CoverageError(f"keep {keep}: at least 1 snapshot is kept")
    day = computed.snapshot.id
    lists: dict[str, dict[str, list]] = {}
    for name in LISTED:
        for item in getattr(computed, name):
            lists.setdefault(item.database, {n: [] for n in LISTED})[name].append(
                item.model_dump(mode="json")
            )
    rows = [
        {"id": f"{day}/{database}", "database": database, "columns": json.dumps(found, separators=(",", ":"))}
        for database, found in sorted(lists.items())
    ]
    params = {
        "id": day,
        "at": computed.snapshot.at,
        "record": computed.snapshot.model_dump_json(),
        "owners": json.dumps([row.model_dump(mode="json") for row in computed.owners]),
    }
    # ids are dates: their order is the snapshots' order, and the newest `keep` stay (the date's
    # own snapshot is dropped too, to be written again, unless it is too old to be kept)
    dropped = sorted({*snapshot_ids(store), day}, reverse=True)[keep:]
    gone = sorted({day, *dropped})
    statements = [(DROP_LISTS, {"ids": gone}), (DROP, {"ids": gone})]
    if day not in dropped:
        statements.append((SAVE, params))
        statements += [
            (SAVE_LISTS, {"id": day, "rows": rows[at : at + LIST_BATCH]})
            for at in range(0, len(rows), LIST_BATCH)
        ]
    store.write_all(statements)
    return computed.snapshot


def refresh(
    store: GraphStore,
    policy: Policy,
    day: str | None = None,
    *,
    keep: int | None = None,
    actor: str | None = None,
) -> CoverageSnapshot:
    """Compute the coverage for `day` (default today, UTC) and store it; with `actor` (a steward's
    refresh, not the nightly's), the audit log names who asked and what it counted."""
    snapshot = save(store, compute(store, policy, day or today()), keep)
    if actor is not None:
        audit.record(
            store, actor, "coverage.refresh", f"coverage:{snapshot.id}", None, snapshot.totals.model_dump()
        )
    return snapshot


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def snapshot_ids(store: GraphStore) -> list[str]:
    """The stored snapshots' ids (dates), newest first."""
    return [row[0] for row in store.read(SNAPSHOT_IDS)]


def _visible(rows: list[CoverageGroup], databases: list[str] | None) -> list[CoverageGroup]:
    return rows if databases is None else [r for r in rows if r.database in databases]


def _total(rows: Iterable[CoverageGroup]) -> CoverageCounts:
    totals = CoverageCounts()
    for row in rows:
        totals.add(row)
    return totals


def coverage(
    store: GraphStore,
    *,
    databases: list[str] | None = None,
    top: int = DEFAULT_TOP,
    trend: int = DEFAULT_TREND,
    downstream: int = DEFAULT_TOP,
) -> Coverage:
    """The newest snapshot as a caller limited to `databases` (None = all) sees it, its `top`
    databases and owners (the most unprotected first), `downstream` of its downstream items, the last nightly and the last `trend` snapshots'
    totals. Three reads of stored snapshots; nothing of the warehouse is scanned."""
    for name, value, most in (("top", top, MAX_TOP), ("trend", trend, 10_000), ("downstream", downstream, SUMMARY_DOWNSTREAM)):  # fmt: skip
        if not 0 <= value <= most:
            raise CoverageError(f"{name} {value}: expected 0 to {most}")
    answer = Coverage(nightly=last_nightly(store))
    rows = store.read(LATEST)
    if rows:
        _, record, owners_text = rows[0]
        snapshot = CoverageSnapshot.model_validate_json(record)
        shown = _visible(snapshot.databases, databases)
        answer.hidden_databases = len(snapshot.databases) - len(shown)
        if databases is not None:
            snapshot.totals = _total(shown)
            snapshot.downstream = [d for d in snapshot.downstream if d.database in databases]
        snapshot.databases = shown[:top]
        snapshot.downstream = snapshot.downstream[:downstream]
        owners = _visible(
            [CoverageGroup.model_validate(o) for o in json.loads(owners_text or "[]")], databases
        )
        answer.snapshot, answer.owners, answer.owners_total = snapshot, owners[:top], len(owners)
        answer.databases_total = len(shown)
    points = []
    for snapshot_id, record in store.read(TREND, {"limit": trend}) if trend else []:
        old = CoverageSnapshot.model_validate_json(record)
        totals = old.totals if databases is None else _total(_visible(old.databases, databases))
        points.append(TrendPoint(id=snapshot_id, at=old.at, totals=totals))
    answer.trend = points[::-1]
    return answer


def listed_columns(
    store: GraphStore,
    which: Listed,
    *,
    snapshot: str | None = None,
    database: str | None = None,
    owner: str | None = None,
    databases: list[str] | None = None,
    offset: int = 0,
    limit: int = DEFAULT_LIMIT,
) -> ColumnPage | None:
    """A page of one of a snapshot's lists (default the newest snapshot), optionally of one
    database and owner; None when there is no such snapshot."""
    if which not in LISTED:
        raise CoverageError(f"list {which!r}: expected one of {', '.join(LISTED)}")
    if not 1 <= limit <= MAX_LIMIT or offset < 0:
        raise CoverageError(
            f"limit {limit}, offset {offset}: expected a limit of 1 to {MAX_LIMIT}, offset ≥ 0"
        )
    if snapshot is None:
        snapshot = next(iter(snapshot_ids(store)), None)
    if snapshot is None or not store.read(EXISTS, {"id": snapshot}):
        return None
    rows = store.read(COLUMN_LISTS, {"id": snapshot, "database": database, "databases": databases})
    items = sorted(
        (
            item
            for (text,) in rows
            for item in json.loads(text)[which]
            if owner is None or item["owner"] == owner
        ),
        key=lambda item: item["column"],
    )
    model = DownstreamItem if which == "downstream" else ListedColumn
    return ColumnPage(
        snapshot=snapshot,
        list=which,
        total=len(items),
        offset=offset,
        limit=limit,
        columns=[model.model_validate(item) for item in items[offset : offset + limit]],
    )


def previous_id(store: GraphStore, day: str) -> str | None:
    """The newest stored snapshot older than `day` (what `day`'s is compared with), or None."""
    return next((found for found in snapshot_ids(store) if found < day), None)


def unprotected_ids(store: GraphStore, snapshot: str) -> set[str] | None:
    """The unprotected columns of a stored snapshot, or None when there is no such snapshot."""
    if not store.read(EXISTS, {"id": snapshot}):
        return None
    rows = store.read(COLUMN_LISTS, {"id": snapshot, "database": None, "databases": None})
    return {item["column"] for (text,) in rows for item in json.loads(text)["unprotected"]}


def new_unprotected(previous: Computed | set[str] | None, current: Computed | set[str]) -> list[str]:
    """The columns unprotected in `current` that were not in `previous` (a Computed or a set of
    ids, `unprotected_ids`' answer; no previous snapshot: every unprotected column is new), sorted."""

    def as_ids(found: Computed | set[str] | None) -> set[str]:
        if found is None:
            return set()
        if isinstance(found, Computed):
            return {item.column for item in found.unprotected}
        return set(found)

    return sorted(as_ids(current) - as_ids(previous))


# ------------------------------------------------------------------ the nightly's status


def record_nightly(store: GraphStore, day: str, status: str, missing: list[str]) -> None:
    """Keep the nightly summary's status for `day` where the dashboard reads it (one node a date)."""
    at = datetime.now(UTC).isoformat(timespec="seconds")
    store.execute(SAVE_NIGHTLY, {"id": day, "status": status, "at": at, "record": json.dumps(missing)})


def last_nightly(store: GraphStore) -> NightlyStatus | None:
    rows = store.read(LAST_NIGHTLY)
    if not rows:
        return None
    day, status, at, missing = rows[0]
    return NightlyStatus(date=day, status=status, at=at or "", missing=json.loads(missing or "[]"))
