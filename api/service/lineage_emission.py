"""OpenLineage out: every task's lineage sent as RunEvents through openlineage-python's transports.

Called by `watershed lineage emit` (api/cli/lineage_emit.py) and the nightly `emit` step
(api/service/nightly/steps.py). The events are `ingest.openlineage.emission`'s; this module
chooses where they go (an HTTP endpoint with an API key, a JSON-lines file, the console), which
functions mask a value (the tag policy's function-effect table), and reports how far a send got.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from urllib.parse import urlsplit

from openlineage.client.transport import Transport
from openlineage.client.transport.console import ConsoleConfig, ConsoleTransport
from openlineage.client.transport.file import FileConfig, FileTransport
from openlineage.client.transport.http import ApiKeyTokenProvider, HttpConfig, HttpTransport
from pydantic import BaseModel, Field, SecretStr

from watershed.graph.errors import WatershedError
from watershed.graph.settings import AbsolutePath, Count, Seconds, WatershedSettings
from watershed.graph.store import GraphStore
from watershed.ingest.openlineage.emission import TAGS_FACET_SCHEMA_URL, Emission, run_events
from watershed.ingest.openlineage.names import Names
from watershed.propagation.policy import Policy, SensitivityFamily

#: the logger the client's ConsoleTransport writes each event to (at INFO)
CONSOLE_LOGGER = "openlineage.client.transport.console"


class EmissionError(WatershedError):
    """A target that cannot be used (a bad URL, an unreadable key file) or a send that failed."""


class LineageEmissionSettings(WatershedSettings):
    #: (WATERSHED_OPENLINEAGE_JOB_NAMESPACE) the namespace of the jobs Watershed emits (one per task)
    openlineage_job_namespace: str = "watershed"
    #: (WATERSHED_OPENLINEAGE_EMIT_URL) the consumer's base URL; the nightly `emit` step runs only
    #: when it is set (`watershed lineage emit` without a target uses it too)
    openlineage_emit_url: str | None = None
    #: the path under the URL the events are posted to (the stock HTTP transport's default)
    openlineage_emit_endpoint: str = "api/v1/lineage"
    #: a file holding the consumer's API key (sent as a bearer token); never a command-line value
    openlineage_api_key_file: AbsolutePath | None = None
    #: (WATERSHED_OPENLINEAGE_API_KEY, or the settings file) the key itself, when no file names it
    openlineage_api_key: SecretStr | None = None
    #: seconds one POST may take
    openlineage_emit_timeout: Seconds = 30.0
    #: the `_schemaURL` of the `watershed_tags` facet: where docs/schemas/ is published
    openlineage_tags_schema_url: str = TAGS_FACET_SCHEMA_URL
    #: the events' `producer` (default: this release's page on the package index)
    openlineage_producer: str | None = None
    #: tasks read from the graph per round trip
    openlineage_emit_batch: Count = 500


class EmissionReport(BaseModel):
    """How an emission went: where to, how many tasks and events."""

    target: str
    tasks: int = 0
    sent: int = 0
    #: tasks not sent: a load of theirs was cut short, so the graph holds no complete version
    skipped: list[str] = Field(default_factory=list)
    seconds: float = 0.0


def producer(settings: LineageEmissionSettings) -> str:
    if settings.openlineage_producer:
        return settings.openlineage_producer
    try:
        release = version("watershed-lineage")
    except PackageNotFoundError:  # a source tree without its metadata
        release = "unknown"
    return f"https://pypi.org/project/watershed-lineage/{release}/"


def masks_of(policy: Policy) -> Callable[[str], bool]:
    """Whether a function hides the value it is given, by the policy's function-effect table: it
    drops or downgrades a sensitive tag (a hash, a mask, a count) for some sensitivity family."""
    families = list(policy.sensitivity.values()) or [SensitivityFamily(levels=["any"])]
    cache: dict[str, bool] = {}

    def masks(function: str) -> bool:
        if function not in cache:
            effects = {policy.effect(function, family).partition(":")[0] for family in families}
            cache[function] = bool(effects & {"drop", "downgrade"})
        return cache[function]

    return masks


# ------------------------------------------------------------------ targets


def api_key(settings: LineageEmissionSettings, key_file: Path | None = None) -> str | None:
    """The consumer's API key: `key_file`'s (the command's option), else the setting's file, else
    the setting; None without any. An unreadable or empty file is an EmissionError naming it."""
    path = key_file or settings.openlineage_api_key_file
    if path is None:
        return settings.openlineage_api_key.get_secret_value() if settings.openlineage_api_key else None
    try:
        key = Path(path).read_text().strip()
    except OSError as exc:
        raise EmissionError(f"API key file {path}: cannot read it ({exc.strerror or exc})") from None
    if not key:
        raise EmissionError(f"API key file {path}: it is empty")
    return key


def http_target(url: str, settings: LineageEmissionSettings, key: str | None) -> HttpTransport:
    """The client's HttpTransport to `url` (its `api_key` auth when there is a key)."""
    auth = ApiKeyTokenProvider({"api_key": key}) if key else None
    if urlsplit(url).scheme.lower() not in ("http", "https"):
        raise EmissionError(f"{url!r} is not an http(s) URL to send OpenLineage events to")
    try:
        config = HttpConfig(
            url=url,
            endpoint=settings.openlineage_emit_endpoint,
            timeout=settings.openlineage_emit_timeout,
            **({"auth": auth} if auth else {}),
        )
        return HttpTransport(config)
    except ValueError:
        raise EmissionError(f"{url!r} is not an http(s) URL to send OpenLineage events to") from None


class ReplacingFileTransport(FileTransport):
    """The client's FileTransport writing one event per line to a temporary file beside `path`,
    renamed onto `path` by `close()` once every event is written; `discard()` removes it, so a
    run that fails leaves the previous file as it was."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._temporary: Path | None = None
        super().__init__(FileConfig(log_file_path=str(path), append=True))

    def _get_file_path(self, event) -> str:
        return str(self._begun())

    def _begun(self) -> Path:
        # made at the first event (or the close of an emission of none), never before the graph
        # and the policy were read: a run that stops earlier leaves nothing beside `path`
        if self._temporary is None:
            handle, name = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
            os.close(handle)
            self._temporary = Path(name)
        return self._temporary

    def close(self, timeout: float = -1) -> bool:
        os.replace(self._begun(), self.path)
        self._temporary = None
        return True

    def discard(self) -> None:
        if self._temporary is not None:
            self._temporary.unlink(missing_ok=True)
            self._temporary = None


def file_target(path: Path) -> ReplacingFileTransport:
    """A transport writing the events to `path`, replacing it only when the emission finished."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EmissionError(f"{path}: cannot write events there ({exc.strerror or exc})") from None
    if path.is_dir() or not os.access(path.parent, os.W_OK | os.X_OK):
        raise EmissionError(f"{path}: cannot write events there (not a writable file's path)")
    return ReplacingFileTransport(path)


def console_target() -> ConsoleTransport:
    """The client's ConsoleTransport: each event logged at INFO on `CONSOLE_LOGGER`."""
    return ConsoleTransport(ConsoleConfig())


# ------------------------------------------------------------------ emitting


def emit(
    store: GraphStore,
    transport: Transport,
    target: str,
    policy: Policy,
    *,
    settings: LineageEmissionSettings | None = None,
    task_ids: Sequence[str] | None = None,
    event_time: datetime | None = None,
    names: Names | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> EmissionReport:
    """Send every task's lineage (or `task_ids`') through `transport`; `target` names it in the
    report and in errors. An unknown task id is an EmissionError before anything is sent; a
    failed send is one naming the target and how many events had gone."""
    settings = settings or LineageEmissionSettings()
    began = time.monotonic()
    if task_ids is not None:
        known = set(store.task_ids())
        unknown = sorted({t for t in task_ids if t not in known})
        if unknown:
            raise EmissionError(f"no task {', '.join(unknown)} in the graph")
    emission = Emission()
    events = run_events(
        store,
        job_namespace=settings.openlineage_job_namespace,
        masks=masks_of(policy),
        producer=producer(settings),
        task_ids=task_ids,
        event_time=event_time,
        tags_schema_url=settings.openlineage_tags_schema_url,
        names=names,
        batch_size=settings.openlineage_emit_batch,
        progress=progress,
        emission=emission,
    )
    sent = 0
    try:
        for event in events:
            try:
                transport.emit(event)
            except Exception as exc:  # the transports raise what their libraries raise (requests, OSError)
                raise EmissionError(
                    f"sending to {target} failed after {sent} of {emission.tasks} events "
                    f"(job {event.job.name}): {_reason(exc)}"
                ) from None
            sent += 1
    except BaseException:
        # a file target keeps the previous file when the graph or a write fails part way
        if isinstance(transport, ReplacingFileTransport):
            transport.discard()
        raise
    transport.close()
    return EmissionReport(
        target=target,
        tasks=emission.tasks,
        sent=sent,
        skipped=emission.skipped,
        seconds=round(time.monotonic() - began, 3),
    )


def _reason(exc: Exception) -> str:
    """One line of why a send failed, with no request headers (they hold the key)."""
    response = getattr(exc, "response", None)
    if response is not None and getattr(response, "status_code", None) is not None:
        return f"HTTP {response.status_code} {getattr(response, 'reason', '') or ''}".strip()
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


def log_console_events(stream) -> logging.Handler:
    """Have the ConsoleTransport's events reach `stream`, one JSON document per line (the CLI's
    `--console`); returns the handler, for the caller to remove."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger(CONSOLE_LOGGER)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return handler


__all__ = [
    "CONSOLE_LOGGER",
    "EmissionError",
    "EmissionReport",
    "LineageEmissionSettings",
    "ReplacingFileTransport",
    "api_key",
    "console_target",
    "emit",
    "file_target",
    "http_target",
    "log_console_events",
    "masks_of",
    "producer",
]
