"""Backup and restore of a Neo4j graph through the driver (no neo4j-admin, which Community's
embedded server lacks, and which cannot reach a remote Neo4j).

A backup reads every node and relationship in one read transaction, so it is the graph as of one
instant while writes go on, and writes them as JSON lines (`neo4j-graph.jsonl`) beside the same
manifest FalkorDB's backup writes (`backup.json`: size, SHA-256, when, the database), checked the
same way on restore. Change stamps (WatershedStamp nodes) are left out: they describe the live
graph to the processes reading it, and a restore moves the epoch instead. FalkorDB's snapshot is the server's own binary file; Neo4j's store files
cannot be read while it runs, hence lines of records instead.

A restore writes into an empty database (it refuses one holding anything: a restore does not
merge), in batches: nodes first, each with its backup id under a temporary label and an index on
it, then the relationships matched through that index, then the temporary label and ids removed.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from watershed.graph.backup import MANIFEST, BackupManifest, read_backup
from watershed.graph.errors import WatershedError
from watershed.graph.neo4j_store import EPOCH, STAMP_LABEL, Neo4jStore

SNAPSHOT = "neo4j-graph.jsonl"
#: the temporary label and property a restore gives each node until its relationships exist
RESTORING = "WatershedRestoring"
BACKUP_ID = "watershed_backup_id"
BATCH = 5000


class Neo4jBackupError(WatershedError, ValueError):
    """A backup that cannot be written or restored as asked; the message names what and where."""


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _plain(value: Any, where: str) -> Any:
    """A property value JSON keeps as it was (the product stores strings, numbers, booleans and lists
    of them); any other type (a Neo4j date, a point) is refused, naming where it is."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list):
        return [_plain(item, where) for item in value]
    raise Neo4jBackupError(f"{where}: a {type(value).__name__} property, which the backup cannot hold")


def _properties(props: dict[str, Any], where: str) -> dict[str, Any]:
    return {key: _plain(value, f"{where}, property {key!r}") for key, value in props.items()}


def backup(store: Neo4jStore, destination: Path) -> BackupManifest:
    """Every node and relationship of `store`'s database, as of one read transaction, in `destination`."""

    def read(tx) -> list[dict[str, Any]]:
        records = []
        for eid, labels, props in tx.run(
            f"MATCH (n) WHERE NOT n:{STAMP_LABEL} RETURN elementId(n), labels(n), properties(n)"
        ):
            where = f"node {props.get('id', eid)}"
            records.append({"node": eid, "labels": labels, "props": _properties(props, where)})
        for start, kind, end, props in tx.run(
            "MATCH (a)-[r]->(b) RETURN elementId(a), type(r), elementId(b), properties(r)"
        ):
            records.append(
                {"from": start, "type": kind, "to": end, "props": _properties(props, f"a {kind} edge")}
            )
        return records

    with store.driver.session(database=store.database) as session:
        records = session.execute_read(read)
    destination.mkdir(parents=True, exist_ok=True)
    temporary = destination / (SNAPSHOT + ".tmp")
    digest = hashlib.sha256()
    with temporary.open("wb") as out:
        for record in records:
            line = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode()
            digest.update(line)
            out.write(line)
    temporary.replace(destination / SNAPSHOT)
    manifest = BackupManifest(
        service="neo4j",
        created_at=datetime.now(UTC).isoformat(),
        snapshot=SNAPSHOT,
        bytes=(destination / SNAPSHOT).stat().st_size,
        sha256=digest.hexdigest(),
        graphs=[store.database],
    )
    (destination / MANIFEST).write_text(manifest.model_dump_json(indent=2) + "\n")
    return manifest


def restore(store: Neo4jStore, source: Path) -> BackupManifest:
    """The backup in `source` written into `store`'s database, which must be empty."""
    manifest = read_backup(source)
    if manifest.service != "neo4j":
        raise Neo4jBackupError(f"backup {source} is a {manifest.service} backup, not a Neo4j one")
    [[count]] = store.read(f"MATCH (n) WHERE NOT n:{STAMP_LABEL} RETURN count(n)")
    if count:
        raise Neo4jBackupError(
            f"{store.where} holds {count} nodes: a restore writes into an empty database only"
        )
    nodes: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    edges: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with (source / manifest.snapshot).open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if "node" in record:
                nodes[tuple(sorted(record["labels"]))].append(
                    {"id": record["node"], "props": record["props"]}
                )
            else:
                edges[record["type"]].append(record)
    index = f"CREATE INDEX watershed_restoring IF NOT EXISTS FOR (n:{RESTORING}) ON (n.{BACKUP_ID})"
    store.record(index)
    store.record("CALL db.awaitIndexes(300)")
    for labels, rows in nodes.items():
        names = "".join(":" + _quoted(label) for label in (*labels, RESTORING))
        statement = f"UNWIND $rows AS r CREATE (n{names}) SET n = r.props, n.{BACKUP_ID} = r.id"
        for start in range(0, len(rows), BATCH):
            store.record(statement, {"rows": rows[start : start + BATCH]})
    for kind, rows in edges.items():
        statement = (
            f"UNWIND $rows AS r MATCH (a:{RESTORING} {{{BACKUP_ID}: r.from}}) "
            f"MATCH (b:{RESTORING} {{{BACKUP_ID}: r.to}}) CREATE (a)-[e:{_quoted(kind)}]->(b) SET e = r.props"
        )
        for start in range(0, len(rows), BATCH):
            store.record(statement, {"rows": rows[start : start + BATCH]})
    with store.driver.session(database=store.database) as session:
        session.run(
            f"MATCH (n:{RESTORING}) CALL {{ WITH n REMOVE n:{RESTORING}, n.{BACKUP_ID} }} "
            "IN TRANSACTIONS OF 10000 ROWS"
        ).consume()
    store.record("DROP INDEX watershed_restoring IF EXISTS")
    # what any process kept under a change stamp described the graph before the restore
    store.restamp(EPOCH)
    store.forget_columns()
    return manifest
