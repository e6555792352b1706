"""Online backup and restore of the embedded graph server (FalkorDB).

A backup is one RDB snapshot taken by the running server (`BGSAVE`: a forked
child writes the whole dataset as of one instant, so it is consistent while
writes go on), copied into the backup directory with a manifest (size,
SHA-256, when, which graphs). Redis writes a snapshot to a temporary file
and renames it, so the copy never reads a half-written file.

A restore stops the server, moves its data files (the append-only directory
and any snapshot) aside into `before-restore-TIMESTAMP/` in the server's
directory, puts the backup's snapshot in place and starts the server once
with append-only persistence off (with it on, Redis ignores a snapshot and
starts empty), turns it on again (which writes a new append-only base from
the loaded graph), and restarts it as usual.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

import redis
from pydantic import BaseModel
from redis.backoff import NoBackoff
from redis.retry import Retry

from watershed.graph.falkordb_store import move_stamp_epoch
from watershed.graph.server import ServerError, ServerSpec, answers, is_running, start, stop

SNAPSHOT = "falkordb.rdb"
MANIFEST = "backup.json"


class BackupManifest(BaseModel):
    service: str
    created_at: str
    snapshot: str = SNAPSHOT
    bytes: int
    sha256: str
    graphs: list[str]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _client(spec: ServerSpec) -> redis.Redis:
    return redis.Redis(
        host=spec.host,
        port=spec.port,
        socket_timeout=60,
        socket_connect_timeout=2,
        retry=Retry(NoBackoff(), 0),
    )


def snapshot(spec: ServerSpec, wait_seconds: float = 3600.0) -> Path:
    """Have the running server write a fresh snapshot; the path of its file."""
    client = _client(spec)
    # Counted, not timed: LASTSAVE has whole seconds, and a small graph saves within one.
    before = int(client.info("persistence")["rdb_saves"])
    # SCHEDULE: if an append-only rewrite is running, the save starts when it ends.
    client.execute_command("BGSAVE", "SCHEDULE")
    deadline = time.monotonic() + wait_seconds
    while time.monotonic() < deadline:
        info = client.info("persistence")
        if int(info["rdb_saves"]) > before and not int(info.get("rdb_bgsave_in_progress", 0)):
            if info.get("rdb_last_bgsave_status") != "ok":
                raise ServerError(
                    f"{spec.name} on port {spec.port}: the snapshot failed; see {spec.log_file}"
                )
            config = client.config_get("dir") | client.config_get("dbfilename")
            return Path(config["dir"]) / config["dbfilename"]
        time.sleep(0.1)
    raise ServerError(f"{spec.name} on port {spec.port}: no snapshot within {wait_seconds:.0f} s")


def backup(spec: ServerSpec, destination: Path) -> BackupManifest:
    """A consistent copy of the running graph server's data in `destination` (created if missing)."""
    if not answers(spec):
        raise ServerError(f"{spec.name} is not running on port {spec.port}: start it (watershed services up)")
    destination.mkdir(parents=True, exist_ok=True)
    graphs = [g.decode() if isinstance(g, bytes) else g for g in _client(spec).execute_command("GRAPH.LIST")]
    source = snapshot(spec)
    temporary = destination / (SNAPSHOT + ".tmp")
    shutil.copyfile(source, temporary)
    temporary.replace(destination / SNAPSHOT)
    manifest = BackupManifest(
        service=spec.name,
        created_at=datetime.now(UTC).isoformat(),
        bytes=(destination / SNAPSHOT).stat().st_size,
        sha256=_sha256(destination / SNAPSHOT),
        graphs=sorted(graphs),
    )
    (destination / MANIFEST).write_text(manifest.model_dump_json(indent=2) + "\n")
    return manifest


def read_backup(source: Path) -> BackupManifest:
    """The manifest of a backup directory, its snapshot checked against it."""
    try:
        manifest = BackupManifest.model_validate_json((source / MANIFEST).read_text())
    except FileNotFoundError:
        raise ServerError(f"{source} is not a backup: it has no {MANIFEST}") from None
    except ValueError as exc:
        raise ServerError(f"{source / MANIFEST} is not a valid backup manifest: {exc}") from None
    snapshot_file = source / manifest.snapshot
    if not snapshot_file.is_file():
        raise ServerError(f"backup {source} lacks its snapshot {snapshot_file.name}")
    if snapshot_file.stat().st_size != manifest.bytes or _sha256(snapshot_file) != manifest.sha256:
        raise ServerError(f"backup {source}: {snapshot_file.name} does not match its manifest (damaged?)")
    return manifest


def restore(spec: ServerSpec, source: Path) -> BackupManifest:
    """Replace the graph server's data with the backup in `source`, and leave the server running."""
    manifest = read_backup(source)
    was_running = is_running(spec)
    if not was_running and answers(spec):
        raise ServerError(
            f"{spec.name}: port {spec.port} answers but not as the server of {spec.data_dir}; stop it first"
        )
    stop(spec)
    directory = spec.directory
    directory.mkdir(parents=True, exist_ok=True)
    aside = directory / f"before-restore-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}"
    for name in ("appendonlydir", "dump.rdb"):
        if (directory / name).exists():
            aside.mkdir(exist_ok=True)
            (directory / name).rename(aside / name)
    shutil.copyfile(source / manifest.snapshot, directory / "dump.rdb")
    # With append-only persistence on and no append-only files, Redis would start empty and
    # ignore dump.rdb: load the snapshot with it off, then turn it on (that writes the AOF base).
    loading = ServerSpec(
        spec.name,
        spec.host,
        spec.port,
        spec.data_dir,
        spec.with_falkordb,
        extra_args=(*spec.extra_args, "--appendonly", "no"),
    )
    start(loading)
    try:
        client = _client(spec)
        if spec.with_falkordb:
            # before anything reads the restored data: the snapshot may hold a change whose
            # restamp it missed (a backup taken between the two); the append-only file written
            # next keeps the new epoch
            move_stamp_epoch(client)
        client.config_set("appendonly", "yes")
        deadline = time.monotonic() + 3600
        while time.monotonic() < deadline:
            info = client.info("persistence")
            busy = int(info.get("aof_rewrite_in_progress", 0)) or int(info.get("aof_rewrite_scheduled", 0))
            if int(info.get("aof_enabled", 0)) and not busy:
                if info.get("aof_last_bgrewrite_status") != "ok":
                    raise ServerError(
                        f"{spec.name}: writing the append-only file failed; see {spec.log_file}"
                    )
                break
            time.sleep(0.1)
    finally:
        stop(loading)
    start(spec)
    if spec.with_falkordb:
        # what processes kept under the graphs' stamps describes the data just replaced
        move_stamp_epoch(_client(spec))
    return manifest
