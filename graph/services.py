"""The embedded services, from settings: the graph (FalkorDB, or a local Neo4j when the backend is
one) and a plain Redis (Celery's broker)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from watershed.graph import neo4j_server
from watershed.graph.server import (
    Neo4jSpec,
    ServerError,
    ServerSpec,
    answers,
    is_running,
    stale_note,
    start,
    started_here,
    stop,
)
from watershed.graph.settings import GraphSettings


def neo4j_spec(settings: GraphSettings) -> Neo4jSpec:
    """The local Neo4j of `settings` (its URI's host and port, its database under DATA_DIR/neo4j)."""
    try:
        host, port = neo4j_server.address(settings.neo4j_uri)
    except neo4j_server.Neo4jSetupError as exc:
        raise ServerError(str(exc)) from None
    return Neo4jSpec(
        "neo4j",
        host,
        port,
        settings.data_dir,
        password_file=settings.neo4j_password_file or neo4j_server.local_password_file(settings),
        install=neo4j_server.install_dir(settings),
        heap=settings.neo4j_heap,
        pagecache=settings.neo4j_pagecache,
    )


def _falkordb_spec(settings: GraphSettings) -> ServerSpec:
    return ServerSpec(
        "falkordb", settings.falkordb_host, settings.falkordb_port, settings.data_dir, with_falkordb=True
    )


def specs(settings: GraphSettings | None = None) -> list[ServerSpec]:
    """The servers `up` starts: the graph unless it runs elsewhere (a remote Neo4j), and Redis."""
    settings = settings or GraphSettings()
    graph: list[ServerSpec]
    if settings.backend == "neo4j":
        graph = [neo4j_spec(settings)] if neo4j_server.is_local(settings.neo4j_uri) else []
    else:
        graph = [_falkordb_spec(settings)]
    return [
        *graph,
        ServerSpec("redis", settings.redis_host, settings.redis_port, settings.data_dir, with_falkordb=False),
    ]


def _other_graph(settings: GraphSettings) -> list[ServerSpec]:
    """The other backend's local graph server when this data directory started it and it still
    runs: `WATERSHED_BACKEND=neo4j make demo` leaves a Neo4j that a later `watershed services
    down` (or `status`) without the setting must still stop (or list)."""
    if settings.backend == "neo4j":
        other = _falkordb_spec(settings)
    elif neo4j_server.is_local(settings.neo4j_uri):
        other = neo4j_spec(settings)
    else:
        return []
    return [other] if started_here(other) else []


def start_spec(
    spec: ServerSpec, settings: GraphSettings, progress: Callable[[str], None] | None = None
) -> int:
    """Start one of `specs(settings)`; a local Neo4j gets its password file first (made 0600 when new)."""
    if isinstance(spec, Neo4jSpec):
        try:
            neo4j_server.launcher_password_file(settings)
        except neo4j_server.Neo4jSetupError as exc:
            raise ServerError(f"{spec.name}: {exc}") from None
    return start(spec, progress=progress)


@dataclass
class ServiceStatus:
    name: str
    port: int
    running: bool
    answering: bool
    #: set when the pid file names a process that is gone or is no longer the one started here
    note: str | None = None


def check_data_dir(path: Path) -> None:
    """Fail with one line naming `path` unless it is (or can become) a writable directory."""
    if path.exists() and not path.is_dir():
        raise ServerError(f"data directory {path} is not a directory (WATERSHED_DATA_DIR)")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-check-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ServerError(f"data directory {path} is not usable: {reason} (WATERSHED_DATA_DIR)") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ServerError(f"data directory {path} is not writable (WATERSHED_DATA_DIR)")


def up(
    settings: GraphSettings | None = None,
    progress: Callable[[str], None] | None = None,
    then: Callable[[], object] | None = None,
) -> list[ServiceStatus]:
    """Start every service that is not running, then run `then` (a later service, e.g. the KMS).

    If a start (or `then`) fails, the servers this call started are stopped again before the
    error propagates: a failed `up` leaves nothing of its own running.
    """
    settings = settings or GraphSettings()
    check_data_dir(settings.data_dir)
    started: list[ServerSpec] = []
    try:
        for spec in specs(settings):
            if is_running(spec):
                continue
            start_spec(spec, settings, progress=progress)
            started.append(spec)
        if then is not None:
            then()
    except BaseException:
        for spec in reversed(started):
            # Best effort: the error that made us undo is the one to report.
            with contextlib.suppress(OSError, ServerError):
                stop(spec)
        raise
    return status(settings)


def down(settings: GraphSettings | None = None) -> list[str]:
    settings = settings or GraphSettings()
    return [spec.name for spec in _other_graph(settings) + specs(settings) if stop(spec)]


def status(settings: GraphSettings | None = None) -> list[ServiceStatus]:
    """The configured services, and the other backend's graph server when one started here still runs."""
    settings = settings or GraphSettings()
    return [
        ServiceStatus(s.name, s.port, is_running(s), answers(s), stale_note(s))
        for s in specs(settings) + _other_graph(settings)
    ]
