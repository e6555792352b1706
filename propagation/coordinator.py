"""The run coordinator: one propagation run at a time, layer by layer, resumable.

A run takes the lock (and with it a fencing token newer than every earlier
run's), raises the graph's fence to that token, syncs the policy's rule seeds,
clears what it will recompute (everything for a full run, the downstream cone
of what changed since the last completed run for an incremental one), then
runs layers until no tag changes. Batches go to Celery workers
(`celery_runner`, on the app its caller passes in) or run in this process
(`local_runner`). After every layer the run record (layer, frontier, counts)
is saved, so a run whose coordinator died is resumed from its last finished
layer by the next `propagate`.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from watershed.graph.errors import WatershedError
from watershed.graph.model import node_label
from watershed.graph.store import GraphStore
from watershed.propagation import queries
from watershed.propagation.engine import (
    BatchRunner,
    LayerReport,
    StaleTokenError,
    local_batches,
    run_layers,
    start_full,
    start_incremental,
)
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.metadata import changed_since as metadata_changed_since
from watershed.propagation.metadata import propagate_metadata
from watershed.propagation.policy import Policy
from watershed.propagation.run_state import LayerRecord, LockKeeper, LockLostError, RunRecord, RunState
from watershed.propagation.settings import PropagationSettings
from watershed.propagation.tasks import TASK_NAME

if TYPE_CHECKING:
    from celery import Celery


class BatchFailedError(WatershedError, RuntimeError):
    """A worker raised while recomputing a batch; `transient` when it lost a server rather than hit bad input."""

    def __init__(self, message: str, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class RunInterruptedError(WatershedError, RuntimeError):
    """A server went away mid-run; the run record stays resumable and the next `propagate` continues it."""


class RunFailedError(WatershedError, RuntimeError):
    """The run failed on its input (or a bug): it is marked failed, and the next `propagate` starts a new run."""

    def __init__(self, record: RunRecord) -> None:
        super().__init__(f"run {record.run_id} failed: {record.error}")
        self.record = record


# A worker's failure of one of these kinds is a lost connection, not a verdict on the batch.
_TRANSIENT_KINDS = frozenset(
    {
        "ConnectionError",
        "GraphUnavailableError",
        "TimeoutError",
        "BusyLoadingError",
        "ConnectionRefusedError",
        "ConnectionResetError",
        "BrokenPipeError",
        "OperationalError",
        "WorkerLostError",
    }
)


def _interrupted(exc: BaseException) -> bool:
    """Whether `exc` stopped the run from outside (a lost server, a signal, a newer run): resume, don't fail.

    Anything else (bad input, a bug) would stop a resumed run the same way again.
    """
    import redis
    from kombu.exceptions import OperationalError

    if isinstance(exc, BatchFailedError):
        return exc.transient
    return isinstance(
        exc,
        (
            KeyboardInterrupt,
            SystemExit,
            LockLostError,
            StaleTokenError,
            OSError,  # builtin ConnectionError and TimeoutError included
            redis.ConnectionError,
            redis.TimeoutError,
            OperationalError,
        ),
    )


RunnerFactory = Callable[[GraphTagStore, str, int], BatchRunner]


def local_runner(store: GraphTagStore, run_id: str, token: int) -> BatchRunner:
    """Batches run here, one after another (no workers needed)."""
    return local_batches(store, store.policy, run_id, token)


def celery_runner(
    settings: PropagationSettings,
    policy: Policy,
    on_resend: Callable[[int], None] | None = None,
    *,
    app: Celery,
) -> RunnerFactory:
    """Batches fan out to Celery workers; a layer's batches still missing after a stall are sent again.

    `app` is the Celery app the caller runs on (`watershed.api.service.celery_app.app_for(settings)`):
    it knows the broker, the result backend and the queue `TASK_NAME` is routed to.
    """
    from celery.exceptions import TimeoutError as CeleryTimeout

    spec = settings.graph_spec()
    policy_data = policy.model_dump(mode="json")

    def factory(store: GraphTagStore, run_id: str, token: int) -> BatchRunner:
        def run(batches: list[list[str]], layer: int) -> list[list[str]]:
            results: list[list[str] | None] = [None] * len(batches)
            waiting: dict[str, int] = {}
            handles: list = []

            def send(indexes: list[int]) -> None:
                for i in indexes:
                    sent = app.send_task(
                        TASK_NAME, args=[spec, policy_data, batches[i], run_id, token, layer]
                    )
                    handles.append(sent)
                    waiting[sent.id] = i

            try:
                _collect(send, waiting, results, batches)
            except BaseException:
                # A result handle unsubscribes from Redis when it is collected; with Redis gone that
                # raises from a finalizer, long after the one-line error. Detached, it does nothing.
                for handle in handles:
                    handle.backend = None
                raise
            return [r or [] for r in results]

        def _collect(send, waiting: dict[str, int], results: list, batches: list[list[str]]) -> None:
            send(list(range(len(batches))))
            while waiting:
                try:
                    for task_id, meta in app.backend.get_many(
                        set(waiting), timeout=settings.propagation_stall_seconds, interval=0.02
                    ):
                        i = waiting.pop(task_id, None)
                        if i is None or results[i] is not None:
                            continue
                        if meta["status"] != "SUCCESS":
                            kind, message = _failure(meta.get("result"))
                            if kind == "StaleTokenError":
                                raise StaleTokenError(f"run {run_id}: {message}")
                            raise BatchFailedError(
                                f"a batch of {len(batches[i])} nodes failed on a worker: {kind}: {message}",
                                transient=kind in _TRANSIENT_KINDS,
                            )
                        results[i] = meta["result"]
                        for other in [t for t, j in waiting.items() if j == i]:
                            waiting.pop(other)
                except CeleryTimeout:
                    missing = sorted({i for i in waiting.values() if results[i] is None})
                    if on_resend is not None:
                        on_resend(len(missing))
                    waiting.clear()
                    send(missing)

        return run

    return factory


def _failure(result: object) -> tuple[str, str]:
    """The exception type and message of a failed task, as the result backend hands it back."""
    if isinstance(result, BaseException):
        return type(result).__name__, str(result)
    if isinstance(result, dict):
        return str(result.get("exc_type", "error")), str(result.get("exc_message", result))
    return "error", str(result)


@dataclass
class Progress:
    """What the coordinator reports as it goes."""

    on_layer: Callable[[LayerRecord, RunRecord], None] | None = None
    on_message: Callable[[str], None] | None = None

    def say(self, message: str) -> None:
        if self.on_message is not None:
            self.on_message(message)


def _new_run_id() -> str:
    return f"prop-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"


def propagate(
    graph: GraphStore,
    policy: Policy,
    state: RunState,
    runner: RunnerFactory,
    *,
    full: bool = False,
    settings: PropagationSettings | None = None,
    progress: Progress | None = None,
    batch_size: int | None = None,
) -> RunRecord:
    """Run (or resume) one propagation run to its fixpoint; returns its record."""
    settings = settings or PropagationSettings()
    progress = progress or Progress()
    batch_size = batch_size or settings.propagation_batch_size
    # The run's own statements (seed sync, clearing, downstream reads) touch at most a batch's nodes
    # each, as the workers' do: FalkorDB's readers wait for a write, and a write for the reads before
    # it, so one 5000-node clear or read held the API's pages for up to seconds
    # (bench/api_during_propagation_bench.py).
    store = GraphTagStore(graph, policy, batch_size=batch_size, scan_batch=settings.propagation_scan_batch)
    ttl = settings.propagation_lock_ttl_seconds
    # The fence as the last run left it: a token above the last completed run's means a later run
    # wrote to the graph and did not finish.
    fence = store.fence_token() or 0
    token = state.acquire(ttl, floor=fence)
    record: RunRecord | None = None
    try:
        with LockKeeper(state, token, ttl) as keeper:
            store.raise_fence(token)
            record = _resume_or_begin(store, state, token, full, progress, fence)
            state.save(record)
            if record.status == "starting":
                began = time.monotonic()
                _start(store, record, progress)
                record.steps["start"] = round(time.monotonic() - began, 3)
                record.status = "running"
                state.save(record)
            _record_in_graph(graph, record)

            def on_layer(entry: LayerReport, frontier: list[str]) -> None:
                keeper.check()
                layer = LayerRecord(
                    layer=entry.layer,
                    nodes=entry.nodes,
                    changed=entry.changed,
                    batches=entry.batches,
                    seconds=round(entry.seconds, 3),
                )
                record.layers.append(layer)
                record.layer = entry.layer + 1
                record.frontier = frontier
                state.save(record)
                if progress.on_layer is not None:
                    progress.on_layer(layer, record)

            began = time.monotonic()
            report = run_layers(
                store,
                record.frontier,
                runner(store, record.run_id, token),
                run_id=record.run_id,
                batch_size=batch_size,
                max_layers=settings.propagation_max_layers,
                on_layer=on_layer,
                first_layer=record.layer,
            )
            record.steps["layers"] = round(time.monotonic() - began, 3)
            began = time.monotonic()
            # descriptions and owners follow direct copies once the tags are done (propagation/metadata.py):
            # an incremental run recomputes those of the columns downstream of its changes only, and one
            # that found no change of lineage, tags or metadata has nothing to redo
            if record.mode == "full" or record.cone or metadata_changed_since(graph, record.since):
                since = None if record.mode == "full" else record.since
                metadata = propagate_metadata(graph, token, batch_size=batch_size, since=since)
                progress.say(f"run {record.run_id}: {metadata.line()}")
            else:
                progress.say(f"run {record.run_id}: descriptions and owners unchanged")
            record.steps["metadata"] = round(time.monotonic() - began, 3)
            record.stopped_at_cap = report.stopped_at_cap
            record.status = "done"
            record.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
            state.finish(record)
            _record_in_graph(graph, record)
            return record
    except BaseException as exc:
        if record is None or record.status == "done":
            raise
        record.error = f"{type(exc).__name__}: {exc}"
        if _interrupted(exc):
            # The record stays resumable: the next `propagate` continues from its last finished layer.
            with contextlib.suppress(Exception):
                state.save(record)
            if isinstance(exc, Exception) and not isinstance(exc, LockLostError | StaleTokenError):
                raise RunInterruptedError(_lost(state, record, exc)) from exc
            raise
        # Resuming would only fail the same way again: the run is over, and says why.
        record.status = "failed"
        record.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
        with contextlib.suppress(Exception):
            state.save(record)
        with contextlib.suppress(Exception):
            _record_in_graph(graph, record)
        raise RunFailedError(record) from exc
    finally:
        with contextlib.suppress(Exception):  # a dead Redis: the lock expires by itself
            state.release(token)


def _lost(state: RunState, record: RunRecord, exc: BaseException) -> str:
    """What went away, what the run lost, and how it goes on: one line for the user."""
    import redis

    try:
        state.client.ping()
        which = "the graph server or a worker's connection to it"
    except redis.RedisError:
        where = state.client.connection_pool.connection_kwargs
        which = f"the Celery Redis at {where.get('host')}:{where.get('port')}"
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return (
        f"run {record.run_id} interrupted at layer {record.layer}: lost {which} ({first_line}); "
        f"the batches of layer {record.layer} in flight were lost, the finished layers are kept; "
        "`watershed propagate` resumes the run from that layer once the server is back"
    )


def _resume_or_begin(
    store: GraphTagStore, state: RunState, token: int, full: bool, progress: Progress, fence: int = 0
) -> RunRecord:
    current = state.current()
    if current is not None and current.status in ("starting", "running"):
        if full:
            progress.say(f"discarding interrupted run {current.run_id}: a full run recomputes everything")
        else:
            current.token = token
            current.resumed += 1
            current.error = None
            progress.say(
                f"resuming interrupted {current.mode} run {current.run_id} at layer {current.layer} "
                f"({len(current.frontier)} nodes)"
            )
            return current
    last = state.last_completed()
    # A run after the last completed one wrote to the graph (cleared tags it may never have
    # recomputed) and is over: it failed, or Redis lost its record. Only a full run is sure to
    # repair what it left; an incremental one would start from changes it never saw.
    unfinished = last is not None and fence > last.token
    mode = "full" if full or last is None or unfinished else "incremental"
    if current is not None and current.status == "failed":
        progress.say(f"the previous run {current.run_id} failed ({current.error}); starting a new {mode} run")
    elif unfinished and not full:
        progress.say(
            f"a run after the last completed run {last.run_id} did not finish and left no record "
            "(the Celery Redis lost it); starting a full run"
        )
    return RunRecord(
        run_id=_new_run_id(),
        token=token,
        mode=mode,
        graph_started_at=store.now(),
        since=None if mode == "full" else last.graph_started_at,
    )


def _start(store: GraphTagStore, record: RunRecord, progress: Progress) -> None:
    began = time.monotonic()
    # The run's own rule-seed writes are part of this run, not changes for the next one: the
    # run's start on the graph clock is taken after them. Anything marked later is picked up next time.
    if record.mode == "full":
        record.rule_seeds_changed = store.sync_rule_seeds()
        record.graph_started_at = store.now()
        start = start_full(store, record.run_id, record.token)
    else:
        # New columns, and columns of tables whose lineage changed (a source column may have
        # become a computed one), get their name-rule seeds brought up to date.
        found = time.monotonic()
        touched, created = store.changed_since(record.since)
        record.steps["changes"] = round(time.monotonic() - found, 3)
        record.rule_seeds_changed = store.sync_rule_seeds(
            created | {n for n in touched if node_label(n) == "Column"}
        )
        record.graph_started_at = store.now()
        changed, _ = store.changed_since(record.since)
        start = start_incremental(store, changed, record.run_id, record.token)
    record.frontier = start
    record.cone = len(start)
    record.layer = 0
    progress.say(
        f"{record.mode} run {record.run_id}: {len(start)} nodes to recompute, "
        f"{record.rule_seeds_changed} rule seeds changed ({time.monotonic() - began:.1f} s)"
    )


def _record_in_graph(graph: GraphStore, record: RunRecord) -> None:
    params: dict[str, Any] = {
        "id": record.run_id,
        "mode": record.mode,
        "status": record.status,
        "started_at": record.started_at,
        "finished_at": record.finished_at,
        "layers": len(record.layers),
        "nodes": record.nodes_processed,
        "changed": record.tags_changed,
        "cone": record.cone,
        "resumed": record.resumed,
        # a run's layers outlive the Redis record, which the next run overwrites: a JSON list,
        # since a graph property holds no list of maps on either backend
        "layer_records": json.dumps([layer.model_dump() for layer in record.layers]),
    }
    graph.execute(queries.RECORD_RUN, params)
