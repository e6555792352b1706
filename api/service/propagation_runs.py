"""A propagation run: the run state, the runner (Celery workers or this process), waiting for the
lock, resuming, and the coordinator's failures as one-line errors. Written once here.

Called by `watershed propagate` (api/cli/propagate.py), the nightly chain's propagate step
(api/service/nightly/steps.py and the Airflow DAG through it), `watershed demo` (api/cli/demo.py) and the
HTTP launcher (api/http/runs.py, which runs it in a thread and adds cancelling). Each face adds its
own advice to the errors (which command to run); the broker is always named without its password.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import redis
from celery import Celery
from kombu.utils.url import maybe_sanitize_url
from pydantic import BaseModel

from watershed.api.service.celery_app import PROPAGATION_QUEUE, app_for, workers_serving
from watershed.graph.errors import WatershedError
from watershed.graph.store import GraphStore
from watershed.propagation.coordinator import (
    Progress,
    RunFailedError,
    RunInterruptedError,
    RunnerFactory,
    celery_runner,
    local_runner,
    propagate,
)
from watershed.propagation.engine import StaleTokenError
from watershed.propagation.policy import Policy
from watershed.propagation.run_state import LockLostError, RunInProgressError, RunRecord, RunState
from watershed.propagation.settings import PropagationSettings


class PropagationRunError(WatershedError, RuntimeError):
    """A propagation run could not start or did not finish; the message is one line saying why."""


class BrokerUnreachableError(PropagationRunError):
    """The Celery Redis (the broker and the run state) does not answer."""


class NoWorkerError(PropagationRunError):
    """No Celery worker serves the propagation queue."""


class RunBusyError(PropagationRunError):
    """Another run held the lock for longer than the caller would wait."""


class RunStoppedError(PropagationRunError):
    """The run stopped before its fixpoint. `failed`: it is marked failed and the next run starts
    anew; otherwise it stays resumable (a lost server, a lost lock) and the next run continues it."""

    def __init__(self, message: str, *, failed: bool) -> None:
        super().__init__(message)
        self.failed = failed


class RunOutcome(BaseModel):
    """What a run did: its record, and the interrupted run it finished first when it caught up."""

    record: RunRecord
    #: the interrupted run finished before `record` (only with `catch_up`)
    resumed: RunRecord | None = None
    seconds: float


def shown_broker(settings: PropagationSettings) -> str:
    """The broker URL as it may be printed or logged: without its password."""
    return maybe_sanitize_url(settings.broker_url())


def run_state(settings: PropagationSettings) -> RunState:
    """The run lock and record in the Celery Redis, checked to answer."""
    state = RunState.from_url(settings.broker_url(), settings.graph_name)
    try:
        state.client.ping()
    except redis.RedisError as exc:
        raise BrokerUnreachableError(
            f"cannot reach the Celery Redis at {shown_broker(settings)} ({exc})"
        ) from None
    return state


def workers_alive(settings: PropagationSettings, app: Celery | None = None, timeout: float = 2.0) -> int:
    """How many live workers serve the propagation queue (a worker of the `ttl` queue only runs no batch)."""
    return len(workers_serving(app or app_for(settings), PROPAGATION_QUEUE, timeout=timeout))


def runner_for(
    settings: PropagationSettings,
    policy: Policy,
    *,
    local: bool = False,
    on_resend: Callable[[int], None] | None = None,
    timeout: float = 2.0,
) -> RunnerFactory:
    """Batches in this process (`local`), else on the Celery workers, once one is found serving the queue."""
    if local:
        return local_runner
    app = app_for(settings)
    if workers_alive(settings, app, timeout) == 0:
        raise NoWorkerError(f"no Celery worker serves the propagation queue on {shown_broker(settings)}")
    return celery_runner(settings, policy, on_resend=on_resend, app=app)


def run(
    graph: GraphStore,
    policy: Policy,
    state: RunState,
    runner: RunnerFactory,
    settings: PropagationSettings,
    *,
    full: bool = False,
    wait: float = 0.0,
    batch_size: int | None = None,
    progress: Progress | None = None,
    catch_up: bool = False,
) -> RunOutcome:
    """One propagation run to its fixpoint; an interrupted run is resumed first.

    Another run's lock is waited for up to `wait` seconds (a dead run's lock expires). With
    `catch_up`, a run that resumed an interrupted one is followed by a run of its own: the resumed
    run's cone dates from that run's start, so what changed since needs another pass.
    """
    deadline = time.monotonic() + wait
    began = time.monotonic()

    def one_run() -> RunRecord:
        while True:
            try:
                return propagate(
                    graph,
                    policy,
                    state,
                    runner,
                    full=full,
                    settings=settings,
                    progress=progress,
                    batch_size=batch_size,
                )
            except RunInProgressError as exc:
                if time.monotonic() >= deadline:
                    raise RunBusyError(str(exc)) from None
                time.sleep(1.0)
            except RunFailedError as exc:
                raise RunStoppedError(str(exc), failed=True) from None
            except (RunInterruptedError, LockLostError, StaleTokenError) as exc:
                raise RunStoppedError(str(exc), failed=False) from None

    record = one_run()
    resumed = None
    if catch_up and record.resumed:
        resumed, record = record, one_run()
    return RunOutcome(record=record, resumed=resumed, seconds=time.monotonic() - began)


__all__ = [
    "BrokerUnreachableError",
    "NoWorkerError",
    "PropagationRunError",
    "RunBusyError",
    "RunOutcome",
    "RunStoppedError",
    "run",
    "run_state",
    "runner_for",
    "shown_broker",
    "workers_alive",
]
