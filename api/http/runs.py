"""Propagation runs started from the API: the coordinator runs in a thread of this process, its batches on the Celery workers.

The run lock, the run record and the fencing token are the coordinator's own (in the Celery
Redis and the graph), so any API process sees the same run and a second start is refused
while one holds the lock. Cancelling sets a key in that Redis; the coordinating process
checks it after every layer and stops the run there (marked failed, "cancelled by NAME").
A run whose coordinator is gone (no lock holder) is marked failed on the spot.

The run itself is the propagation-run use case (api/service/propagation_runs.py), as for the CLI
and the nightly chain; this module adds the thread, the 409/503 answers and cancelling.
"""

from __future__ import annotations

import logging
import threading
import time

import redis

from watershed.api.http.problems import ApiProblem
from watershed.api.http.settings import ApiSettings
from watershed.api.service.propagation_runs import (
    BrokerUnreachableError,
    NoWorkerError,
    RunBusyError,
    run,
    run_state,
    runner_for,
    shown_broker,
)
from watershed.graph.errors import WatershedError
from watershed.propagation.run_state import RunRecord, RunState

log = logging.getLogger("watershed.api.runs")


class RunCancelledError(WatershedError, RuntimeError):
    """A steward cancelled the run; it stopped after its current layer."""


class RunLauncher:
    def __init__(self, settings: ApiSettings, policy) -> None:
        self.settings = settings
        self.policy = policy
        self._state: RunState | None = None
        self._errors: dict[int, BaseException] = {}

    @property
    def state(self) -> RunState:
        if self._state is None:
            self._state = RunState.from_url(self.settings.broker_url(), self.settings.graph_name)
        return self._state

    def _cancel_key(self) -> str:
        return f"{self.state.prefix}:cancel"

    def _reachable(self) -> None:
        try:
            self.state.client.ping()
        except redis.RedisError:
            raise ApiProblem(
                503, f"the Celery Redis at {shown_broker(self.settings)} does not answer"
            ) from None

    def current(self) -> RunRecord | None:
        self._reachable()
        return self.state.current()

    def start(self, full: bool) -> RunRecord:
        self._reachable()
        holder = self.state.holder()
        if holder is not None:
            raise ApiProblem(
                409, f"a propagation run (token {holder}) is in progress; wait for it or cancel it"
            )
        try:
            runner = runner_for(self.settings, self.policy, timeout=1.0)
        except NoWorkerError as exc:
            raise ApiProblem(503, f"{exc}; start `watershed worker` (or `watershed services up`)") from None
        before = self.state.current()
        thread = threading.Thread(target=self._run, args=(full, runner), name="propagation-run", daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            current = self.state.current()
            if current is not None and (
                before is None or (current.run_id, current.token) != (before.run_id, before.token)
            ):
                return current
            if not thread.is_alive():
                break
            time.sleep(0.02)
        error = self._errors.pop(thread.ident or 0, None)
        if error is not None:
            status = (
                409
                if isinstance(error, RunBusyError)
                else 503
                if isinstance(error, BrokerUnreachableError)
                else 500
            )
            raise ApiProblem(status, f"the run did not start: {error}")
        raise ApiProblem(500, "the run did not record itself in time; see GET /api/v1/propagation/runs")

    def _run(self, full: bool, runner) -> None:
        from watershed.graph.backends import open_store
        from watershed.propagation.coordinator import Progress

        cancel_key = self._cancel_key()

        def check_cancel(layer, record: RunRecord) -> None:
            raw = state.client.get(cancel_key)
            if raw:
                run_id, _, actor = raw.decode().partition("\n")
                if run_id == record.run_id:
                    state.client.delete(cancel_key)
                    raise RunCancelledError(f"cancelled by {actor}")

        graph = None
        try:
            state = run_state(self.settings)
            graph = open_store(self.settings)
            run(
                graph,
                self.policy,
                state,
                runner,
                self.settings,
                full=full,
                progress=Progress(on_layer=check_cancel),
            )
        except BaseException as exc:  # the thread's end: record it, the route reports it
            self._errors[threading.get_ident()] = exc
            log.warning("propagation run ended: %s: %s", type(exc).__name__, exc)
        finally:
            if graph is not None:
                graph.close()

    def cancel(self, run_id: str, actor: str) -> RunRecord:
        from datetime import UTC, datetime

        current = self.current()
        if current is None or current.run_id != run_id:
            raise ApiProblem(409, f"run {run_id} is not the current run: only a running run can be cancelled")
        if current.status not in ("starting", "running"):
            raise ApiProblem(409, f"run {run_id} is {current.status}: nothing to cancel")
        if self.state.holder() is None:
            # Nobody coordinates it (its process died): end it here; the next start is a full run.
            current.status = "failed"
            current.error = f"RunCancelledError: cancelled by {actor}"
            current.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
            self.state.save(current)
            return current
        self.state.client.set(self._cancel_key(), f"{run_id}\n{actor}", ex=3600)
        return current
