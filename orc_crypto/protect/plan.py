"""The protection plan: what the tag policy asks of each table's columns against what the table
has now — its recorded protection (records.py) and the encryption its ORC files actually hold,
read from each file's tail — and so the DDL to set and the files to rewrite.

A file is listed only when what it holds differs from what it should hold, so a plan made after
a successful apply lists no file. Tables are read from the graph: their location, format, and
their columns' tags (the propagation JSON on `Column.tags`).

A plan of the whole graph reads it a batch of tables at a time (the tables' ids first, sorted;
then per batch the tables' columns and their protection records, one query each), and keeps only
the tables with work: no process holds the whole warehouse's columns and tags at once (issue 16).

An incremental plan (`plan_protection(incremental=True)`, the nightly chain's) plans again only
the tables whose inputs changed since the last complete one and carries the others' plans
forward (issue 41). A table's plan depends on its columns' tags, its catalog entry, its
protection record and its files; the graph marks the first three in the writes that change them
(`Column.tags_changed_at`, propagation's tag writes; `Table.uses_changed_at`, graph/queries.py's
catalog writes; `TableProtection.changed_at`, records.py), and the files are compared by a
listing fingerprint (`listing_fingerprint`: paths, sizes, mtimes) kept on the table
(`Table.plan_files`). Each table's last plan is kept as a `PlannedTable` node (only tables with
work have one) in the same write as its fingerprint; the run's record (`PlanState`: when it began
on the graph's clock, the policy digest and provider path it planned under) is written last, so a
plan cut short leaves the last complete one's record and the next plan redoes what changed since.
A full plan is made when no complete plan is recorded or the policy or provider path changed.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote, urlparse

from watershed.graph.errors import PolicyError
from watershed.graph.model import tag_values
from watershed.graph.protection import (
    ColumnChange,
    ColumnKey,
    FilePlan,
    ProtectionPlan,
    ProtectionPolicy,
    TablePlan,
    TableProtection,
)
from watershed.graph.store import GraphStore
from watershed.orc_crypto.codec.kinds import STRUCT
from watershed.orc_crypto.codec.tail import read_tail
from watershed.orc_crypto.ddl import create_statement
from watershed.orc_crypto.errors import OrcCryptoError
from watershed.orc_crypto.keys.base import KeyProvider
from watershed.orc_crypto.options import quote_name
from watershed.orc_crypto.protect import records
from watershed.orc_crypto.protect.checks import ProtectionError, check_keys, check_protection, normal_mask
from watershed.orc_crypto.protect.ddl import alter_table_ddl, unset_table_ddl
from watershed.orc_crypto.protect.tails import file_protection

SOME_TABLES = (
    "UNWIND $ids AS id MATCH (t:Table {id: id}) OPTIONAL MATCH (t)-[:HAS_COLUMN]->(c:Column) "
    "RETURN t.id, t.location, t.format, c.id, c.name, c.type, c.tags, t.column_order"
)
RECORDED_TABLES = "MATCH (p:TableProtection) RETURN p.table"

# the incremental plan's state (see the module's notes)
CLOCK = "RETURN timestamp()"
PLAN_STATE = "MATCH (s:PlanState {name: 'complete'}) RETURN s.started_at, s.fingerprint"
SAVE_PLAN_STATE = (
    "MERGE (s:PlanState {name: 'complete'}) SET s.started_at = $started_at, s.fingerprint = $digest"
)
#: a full plan forgets the last one first: cut short, it leaves no record to be incremental from
FORGET_PLAN_STATE = "MATCH (s:PlanState {name: 'complete'}) DELETE s"
FORGET_PLANNED = "MATCH (p:PlannedTable) DELETE p"
TAGS_CHANGED = (
    "MATCH (c:Column) WHERE c.tags_changed_at >= $since "
    "MATCH (t:Table)-[:HAS_COLUMN]->(c) RETURN DISTINCT t.id"
)
CATALOG_CHANGED = "MATCH (t:Table) WHERE t.uses_changed_at >= $since RETURN t.id"
RECORDS_CHANGED = "MATCH (p:TableProtection) WHERE p.changed_at >= $since RETURN p.table"
LOCATED_TABLES = (
    "MATCH (t:Table) WHERE t.location IS NOT NULL RETURN t.id, t.location, t.format, t.plan_files"
)
CARRIED_PLANS = "MATCH (p:PlannedTable) RETURN p.table, p.plan"
SAVE_PLANNED = "UNWIND $rows AS r MERGE (p:PlannedTable {table: r.table}) SET p.plan = r.plan"
DROP_PLANNED = "UNWIND $tables AS name MATCH (p:PlannedTable {table: name}) DELETE p"
SAVE_PLAN_FILES = "UNWIND $rows AS r MATCH (t:Table {id: r.table}) SET t.plan_files = r.files"
#: how far before the last complete plan began the next one looks for marks (see ttl_advisor's
#: `ttl_clock_margin_seconds`: a Neo4j transaction may commit after a plan read the marks)
CLOCK_MARGIN_SECONDS = 600

#: tables per batch of a whole-graph plan: their columns and records are read one query each
PLAN_BATCH = 500


@dataclass
class CatalogColumn:
    id: str
    name: str
    type: str | None
    tags: str | None


@dataclass
class CatalogTable:
    id: str
    location: str | None
    format: str | None
    columns: list[CatalogColumn] = field(default_factory=list)


@dataclass
class OrcFileState:
    """One file under a table's location and what its tail says it holds."""

    path: str
    partition: str | None
    size: int
    mtime_ns: int
    #: file column name (dotted, ORC-quoted, for a nested variant root) -> key and mask
    current: dict[str, ColumnKey]
    #: the file's top-level column names
    names: list[str]


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# ------------------------------------------------------------------ the graph


def _read_tables(store: GraphStore, ids: list[str]) -> dict[str, CatalogTable]:
    """These tables (those the graph has) with their columns in the catalog's order, then any
    other column by name: the order a backend returns rows in is its own (Neo4j's is not
    FalkorDB's), and a plan's DDL lists columns in this order."""
    catalog: dict[str, CatalogTable] = {}
    orders: dict[str, list[str]] = {}
    rows = store.read(SOME_TABLES, {"ids": ids})
    for table_id, location, fmt, column_id, name, type_, tags, order in rows:
        table = catalog.setdefault(table_id, CatalogTable(table_id, location, fmt))
        orders[table_id] = list(order or [])
        if column_id is not None:
            table.columns.append(CatalogColumn(column_id, name, type_, tags))
    for table_id, table in catalog.items():
        place = {name: index for index, name in enumerate(orders[table_id])}
        table.columns.sort(key=lambda column, place=place: (place.get(column.name, len(place)), column.name))
    return catalog


def read_catalog(store: GraphStore, tables: list[str]) -> dict[str, CatalogTable]:
    """The given tables with their columns (the catalog's order, then by name); ProtectionError
    names the tables asked for that the graph does not have."""
    asked = list(dict.fromkeys(tables))
    catalog = _read_tables(store, asked)
    unknown = [t for t in asked if t not in catalog]
    if unknown:
        raise ProtectionError(f"unknown table {', '.join(unknown)}: not in the graph")
    return catalog


def check_batch_size(batch_size: object) -> int:
    """The planner's batch size (tables per batch), a whole number of at least 1."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ProtectionError(f"batch_size must be a whole number of tables, at least 1, not {batch_size!r}")
    return batch_size


def catalog_batches(store: GraphStore, batch_size: int = PLAN_BATCH) -> Iterator[list[CatalogTable]]:
    """Every table of the graph, plus each recorded table that left it (as a table with no location
    or columns: its record names it), sorted by name, `batch_size` tables at a time; only the ids
    are read whole."""
    recorded = {row[0] for row in store.read(RECORDED_TABLES) if row[0] is not None}
    ordered = sorted({*store.table_ids(), *recorded})
    for start in range(0, len(ordered), check_batch_size(batch_size)):
        ids = ordered[start : start + batch_size]
        catalog = _read_tables(store, ids)
        yield [catalog.get(name) or CatalogTable(name, None, None) for name in ids]


def listing_fingerprint(location: str | None, fmt: str | None) -> str | None:
    """A digest of a table's data files (relative path, size, mtime) under its location; None for a
    table without one, or not stored as ORC (the plan reads no file of it). A location that is not
    a local directory digests as what it is."""
    if not location or (fmt and fmt.lower() != "orc"):
        return None
    root = local_path(location)
    if root is None or not root.is_dir():
        listing = [f"not a local directory: {location}"]
    else:
        listing = [location]
        for path in walk_files(root):
            try:
                stat = path.stat()
            except OSError as exc:
                listing.append(f"{path}\t{type(exc).__name__}")
                continue
            listing.append(f"{path.relative_to(root).as_posix()}\t{stat.st_size}\t{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(listing).encode()).hexdigest()[:32]


def due_tables(store: GraphStore, since: int) -> set[str]:
    """The tables whose plan may differ from the one kept: their columns' tags, catalog entry or
    record marked since `since` (the graph's clock, ms), or their files' listing changed."""
    due: set[str] = set()
    for query in (TAGS_CHANGED, CATALOG_CHANGED, RECORDS_CHANGED):
        due.update(row[0] for row in store.read(query, {"since": since}) if row[0] is not None)
    for table_id, location, fmt, kept in store.read(LOCATED_TABLES):
        if table_id not in due and listing_fingerprint(location, fmt) != kept:
            due.add(table_id)
    return due


def why_of(tags_text: str | None, key: str) -> str:
    """The first hop of a tag's `why` path: `seed`/`manual` when it is the node's own tag, else
    `from db.t.c by task T (direct)`."""
    if not tags_text:
        return ""
    item = json.loads(tags_text).get(key)
    if not item:
        return ""
    if item.get("o") != "propagated" or not item.get("p"):
        return str(item.get("o") or "")
    source, task, kind, _rule, _hops = item["p"][0]
    return f"from {source} by task {task} ({kind})" if task else f"from {source} ({kind})"


# ------------------------------------------------------------------ the files


def local_path(location: str) -> Path | None:
    """A table location as a local directory: a plain path or a file: URI; None for other schemes."""
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        return Path(unquote(parsed.path) if parsed.scheme else location)
    if len(parsed.scheme) == 1:  # a Windows drive letter
        return Path(location)
    return None


def _skipped(name: str) -> bool:
    # Spark and Hive leave out names starting with `_` or `.` (_SUCCESS, _temporary, .crc, temps)
    return name.startswith(("_", "."))


def walk_files(root: Path) -> Iterator[Path]:
    """Data files under a table location, partition directories included, sorted by path."""
    found: list[Path] = []
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not _skipped(d))
        found.extend(Path(directory) / name for name in files if not _skipped(name))
    return iter(sorted(found))


def read_file_state(path: Path, root: Path) -> OrcFileState:
    """Size, mtime and the protection a file's tail records (the file is mapped: only its tail is read)."""
    stat = path.stat()
    with path.open("rb") as handle:
        if stat.st_size == 0:
            tail = read_tail(path, b"")
        else:
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                tail = read_tail(path, data)
    relative = path.parent.relative_to(root)
    top = tail.footer.types[0]
    return OrcFileState(
        path=str(path),
        partition=None if str(relative) == "." else relative.as_posix(),
        size=stat.st_size,
        mtime_ns=stat.st_mtime_ns,
        current=file_protection(tail),
        names=list(top.fieldNames) if top.kind == STRUCT else [],
    )


# ------------------------------------------------------------------ comparing


def _same(a: ColumnKey | None, b: ColumnKey | None) -> bool:
    """Same key and mask (a key version change is rewrap's business, not the plan's)."""
    if a is None or b is None:
        return a is b
    return a.key == b.key and normal_mask(a.mask) == normal_mask(b.mask)


def _same_map(a: Mapping[str, ColumnKey], b: Mapping[str, ColumnKey]) -> bool:
    return {k.lower() for k in a} == {k.lower() for k in b} and all(
        _same(v, next(w for k, w in b.items() if k.lower() == name.lower())) for name, v in a.items()
    )


def _file_target(
    state: OrcFileState, want: Mapping[str, ColumnKey], policy: ProtectionPolicy
) -> dict[str, ColumnKey]:
    """What the file should hold: the wanted columns it has, plus (on_release keep) whatever it
    encrypts that is no longer wanted."""
    target: dict[str, ColumnKey] = {}
    for name in state.names:
        wanted = want.get(name.lower())
        if wanted is not None:
            target[quote_name(name)] = wanted
    if policy.on_release == "keep":
        wanted_names = {n.lower() for n in target}
        for name, have in state.current.items():
            if name.lower() not in wanted_names:
                target[name] = ColumnKey(key=have.key, mask=have.mask)
    return target


def _some(names: list[str], limit: int = 10) -> str:
    shown = ", ".join(names[:limit]) or "none"
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _missing_columns(state: OrcFileState, want: Mapping[str, ColumnKey]) -> list[str]:
    """The wanted columns (lower-cased names) the file does not have at top level; none for an
    empty file without a schema (nothing in it to protect)."""
    if not state.names and state.size == 0:
        return []
    have = {name.lower() for name in state.names}
    return [name for name in want if name not in have]


def _file_plan(state: OrcFileState, target: dict[str, ColumnKey]) -> FilePlan | None:
    if _same_map(target, state.current):
        return None
    action = "encrypt" if not state.current else "decrypt" if not target else "reencrypt"
    return FilePlan(
        path=state.path,
        partition=state.partition,
        size=state.size,
        mtime_ns=state.mtime_ns,
        action=action,
        columns=target,
        current=state.current,
    )


def plan_table(
    table: CatalogTable,
    policy: ProtectionPolicy,
    record: TableProtection | None,
    *,
    read_files: bool = True,
    create: bool = False,
    key_provider_path: str | None = None,
    listed: bool = False,
) -> TablePlan | None:
    """One table's plan; None when there is nothing to report and the table was not asked for."""
    plan = TablePlan(table=table.id, location=table.location)
    want: dict[str, ColumnKey] = {}  # column name (lower) -> wanted
    tag_of: dict[str, tuple[str, str]] = {}  # column name (lower) -> (tag text, why)
    for column in table.columns:
        matched = policy.rule_for(tag_values(column.tags))
        if matched is not None:
            rule, level = matched
            want[column.name.lower()] = ColumnKey(key=rule.key, mask=normal_mask(rule.mask))
            tag_of[column.name.lower()] = (f"{rule.tag}={level}", why_of(column.tags, rule.tag))
    recorded = {k.lower(): v for k, v in (record.columns if record else {}).items()}
    if not want and not recorded and not listed and not read_files:
        return None

    states: list[OrcFileState] = []
    fmt = (table.format or "").lower()
    if want or recorded or listed or read_files:
        if not table.location:
            if want or recorded or listed:
                plan.problems.append(f"{table.id} has no location: its files cannot be planned")
        elif fmt and fmt != "orc":
            if want or recorded or listed:
                plan.problems.append(
                    f"{table.id} is stored as {table.format}, not ORC: only ORC is encrypted"
                )
        elif read_files:
            root = local_path(table.location)
            if root is None:
                plan.problems.append(
                    f"{table.id}: location {table.location} is not a local path or file: URI"
                )
            elif root.is_dir():
                for path in walk_files(root):
                    try:
                        states.append(read_file_state(path, root))
                    except (OrcCryptoError, OSError) as exc:
                        plan.problems.append(f"{path}: {exc}")
            elif want or recorded or listed:
                plan.problems.append(f"{table.id}: location {table.location} is not a directory")
    in_files: dict[str, ColumnKey] = {}
    for state in states:
        for name, have in state.current.items():
            in_files.setdefault(name.lower(), have)
    if not want and not recorded and not in_files and not listed:
        return None  # nothing asked, nothing protected: not the plan's business

    # files
    for state in states:
        missing = _missing_columns(state, want)
        if missing:
            # encrypting the rest would record the file as done while the data stays in plaintext
            # under another name (Hive's `_col0`, ACID's `row` struct, a renamed column)
            plan.problems.append(
                f"{state.path}: has no top-level column {', '.join(missing)} "
                f"(its columns: {_some(state.names)}); the file is not planned"
            )
            continue
        change = _file_plan(state, _file_target(state, want, policy))
        if change is not None:
            plan.files.append(change)
    touched = {
        name.lower()
        for f in plan.files
        for name in {*f.columns, *f.current}
        if not _same(f.columns.get(name), f.current.get(name))
    }

    # columns, in table order
    table_target: dict[str, ColumnKey] = {}
    for column in table.columns:
        key = column.name.lower()
        wanted, have = want.get(key), recorded.get(key) or in_files.get(key)
        tag, why = tag_of.get(key, (None, ""))
        if wanted is not None:
            table_target[column.name] = wanted
            if have is None:
                action = "encrypt"
            elif not _same(wanted, have):
                action = "reencrypt"
            elif key in touched or not _same(recorded.get(key), wanted):
                action = "keep"
            else:
                continue
        elif have is not None:
            action = "release" if policy.on_release == "keep" else "decrypt"
            if policy.on_release == "keep":
                table_target[column.name] = ColumnKey(key=have.key, mask=have.mask)
            family = next((r.tag for r in policy.rules if r.key == have.key), None)
            values = tag_values(column.tags).get(family or "", [])
            tag = f"{family}={','.join(values)}" if family and values else None
            why = "no rule of the policy protects its tags any more"
        else:
            continue
        plan.columns.append(
            ColumnChange(
                column=column.id, name=column.name, action=action, want=wanted, have=have, tag=tag, why=why
            )
        )

    plan.target = dict(table_target)

    # DDL for future writes
    provider_path = key_provider_path or policy.key_provider_path
    try:
        if create and table_target:
            plan.ddl.append(
                create_statement(
                    table.id, [(c.name, c.type) for c in table.columns], table_target, provider_path
                )
            )
        elif table_target and not _same_map(table_target, record.columns if record else {}):
            plan.ddl.extend(alter_table_ddl(table.id, table_target, provider_path))
        elif not table_target and recorded:
            plan.ddl.append(unset_table_ddl(table.id))
    except PolicyError as exc:
        # held back whole: files encrypted without the options would leave new writes in plaintext
        plan.problems.append(f"{table.id}: {exc}")
        plan.ddl, plan.files = [], []
    if not plan.columns and not plan.ddl and not plan.files and not plan.problems and not listed:
        return None
    return plan


def plan_protection(
    store: GraphStore,
    policy: ProtectionPolicy,
    *,
    tables: list[str] | None = None,
    provider: KeyProvider | None = None,
    read_files: bool = True,
    create: bool = False,
    key_provider_path: str | None = None,
    batch_size: int = PLAN_BATCH,
    incremental: bool = False,
    clock_margin_seconds: int = CLOCK_MARGIN_SECONDS,
) -> ProtectionPlan:
    """The plan for every table of the graph (or the given ones: an unknown one is an error).

    The policy is checked first (masks, key names) and, with a key provider, that the KMS has
    every key a rule names. `key_provider_path` (else the policy's) goes into the DDL. Tables are
    planned `batch_size` at a time (their columns and records read per batch), in name order.
    `incremental` (a whole-graph plan reading files, not `create`): plan only the tables changed
    since the last complete incremental plan and carry the others' plans (the module's notes).
    """
    check_batch_size(batch_size)
    check_protection(policy)
    if provider is not None:
        check_keys(policy, provider)
    plan = ProtectionPlan(
        created_at=now(),
        policy_digest=policy.digest(),
        key_provider_path=key_provider_path or policy.key_provider_path,
    )
    if incremental and (tables is not None or not read_files or create):
        raise ProtectionError("an incremental plan is of the whole graph, reading files, without create")
    kept: dict[str, TablePlan] = {}
    if tables is not None:
        catalog = read_catalog(store, tables)
        ordered = [catalog[name] for name in sorted(catalog)]
        batches: Iterable[list[CatalogTable]] = (
            ordered[i : i + batch_size] for i in range(0, len(ordered), batch_size)
        )
    elif incremental:
        started_at = store.read(CLOCK)[0][0]
        digest = f"{plan.policy_digest}|{plan.key_provider_path or ''}"
        state = store.read(PLAN_STATE)
        if state and state[0][0] is not None and state[0][1] == digest:
            due = due_tables(store, int(state[0][0]) - clock_margin_seconds * 1000)
            kept = {
                table: TablePlan.model_validate_json(text)
                for table, text in store.read(CARRIED_PLANS)
                if table not in due and text
            }
            batches = _due_batches(store, sorted(due), batch_size)
        else:
            store.write_all([(FORGET_PLAN_STATE, {}), (FORGET_PLANNED, {})])
            batches = catalog_batches(store, batch_size)
    else:
        batches = catalog_batches(store, batch_size)
    planned: list[TablePlan] = []
    for batch in batches:
        recorded = records.table_protections(store, [table.id for table in batch])
        results = {
            table.id: plan_table(
                table,
                policy,
                recorded.get(table.id),
                read_files=read_files,
                create=create,
                key_provider_path=key_provider_path,
                listed=tables is not None,
            )
            for table in batch
        }
        if incremental:
            _keep_batch(store, batch, results)
        planned += [table_plan for table_plan in results.values() if table_plan is not None]
    if incremental:
        # last: a plan cut short leaves the previous complete one's record (or none)
        store.write_all([(SAVE_PLAN_STATE, {"started_at": started_at, "digest": digest})])
    plan.tables = sorted([*planned, *kept.values()], key=lambda table_plan: table_plan.table)
    return plan


def _due_batches(store: GraphStore, due: list[str], batch_size: int) -> Iterator[list[CatalogTable]]:
    """The due tables `batch_size` at a time; one the graph no longer has is planned as a table
    without location or columns (its record names it), as `catalog_batches` does."""
    for start in range(0, len(due), batch_size):
        ids = due[start : start + batch_size]
        catalog = _read_tables(store, ids)
        yield [catalog.get(name) or CatalogTable(name, None, None) for name in ids]


def _keep_batch(
    store: GraphStore, batch: list[CatalogTable], results: Mapping[str, TablePlan | None]
) -> None:
    """Each table's plan (none: its node goes) and its files' fingerprint, in one write."""
    plans = [
        {"table": table_id, "plan": result.model_dump_json()}
        for table_id, result in results.items()
        if result is not None
    ]
    gone = [table_id for table_id, result in results.items() if result is None]
    listed = [
        {"table": table.id, "files": listing_fingerprint(table.location, table.format)} for table in batch
    ]
    store.write_all(
        [
            (SAVE_PLANNED, {"rows": plans}),
            (DROP_PLANNED, {"tables": gone}),
            (SAVE_PLAN_FILES, {"rows": listed}),
        ]
    )
