"""The one Celery app of Watershed: its broker, its queues, which task goes where, and its workers.

    celery -A watershed.api.service.celery_app worker -Q propagation,ttl    (or `watershed worker`)

Every kind of work has its own queue and an explicit route to it: propagation
batches go to `propagation`, the nightly TTL advice to `ttl`, the nightly chain (triggered by the
beat schedule of `watershed worker --beat`) to `nightly`. A worker started
with `-Q ttl` never receives a propagation batch (and the other way round), so
no worker rejects a message as unregistered and drops it: every worker of this
app knows every task, whichever queues it serves.

The tasks are plain functions in their packages (`watershed.propagation.tasks`,
`watershed.ttl_advisor.tasks`); this module registers them, since nothing below
`api` may import it. The nightly chain's task is the exception: it runs the chain, whose
propagate step sends batches through this app, so the app only names its module for the
workers to import (`include`) and reads its schedule as data (api/service/nightly/schedule.py). The broker and result backend are the Redis that `watershed
services up` starts, or WATERSHED_CELERY_BROKER. Tasks are idempotent, so they
are acknowledged late: a task whose worker dies is handed to another worker.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from celery import Celery
from kombu import Queue

from watershed.api.service.nightly import schedule as nightly
from watershed.api.service.nightly.errors import NightlyError
from watershed.propagation import tasks as propagation_tasks
from watershed.propagation.settings import PropagationSettings
from watershed.ttl_advisor import tasks as ttl_tasks

PROPAGATION_QUEUE = "propagation"
TTL_QUEUE = "ttl"
NIGHTLY_QUEUE = "nightly"
#: every queue of the app; a worker given none serves them all
QUEUES = (PROPAGATION_QUEUE, TTL_QUEUE, NIGHTLY_QUEUE)
#: the module of the nightly chain's task (see make_app)
NIGHTLY_TASK_MODULE = "watershed.api.service.nightly.beat"

#: task name -> its queue (the tasks register under these names)
ROUTES = {
    propagation_tasks.TASK_NAME: PROPAGATION_QUEUE,
    ttl_tasks.TASK_NAME: TTL_QUEUE,
    nightly.TASK_NAME: NIGHTLY_QUEUE,
}


def make_app(broker_url: str, visibility_seconds: float) -> Celery:
    """The app on `broker_url` (broker and result backend): its tasks, their queues and routes."""
    celery = Celery(
        "watershed",
        broker=broker_url,
        backend=broker_url,
        set_as_current=False,
        # what a worker imports at start: the nightly task, which registers itself on the app
        include=[NIGHTLY_TASK_MODULE],
    )
    celery.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_expires=3600,
        broker_transport_options={"visibility_timeout": visibility_seconds},
        broker_connection_retry_on_startup=True,
        task_queues=[Queue(name, routing_key=name) for name in QUEUES],
        task_routes={name: {"queue": queue, "routing_key": queue} for name, queue in ROUTES.items()},
    )
    celery.task(name=propagation_tasks.TASK_NAME)(propagation_tasks.compute_batch_task)
    celery.task(name=ttl_tasks.TASK_NAME)(ttl_tasks.advise_and_store)
    # Only a worker started with --beat runs the schedule. A bad cron line leaves it empty here, so
    # that every other use of the app still works; `watershed worker --beat` refuses to start on it.
    try:
        celery.conf.beat_schedule = nightly.beat_schedule()
    except NightlyError:
        celery.conf.beat_schedule = {}
    return celery


_apps: dict[tuple[str, float], Celery] = {}


def app_for(settings: PropagationSettings | None = None) -> Celery:
    """The app for these settings' broker: one per broker, so settings read at call time are honoured."""
    settings = settings or PropagationSettings()
    key = (settings.broker_url(), settings.propagation_visibility_seconds)
    if key not in _apps:
        _apps[key] = make_app(*key)
    return _apps[key]


def parse_queues(text: str | Sequence[str] | None) -> list[str]:
    """The queues named by `text` ("propagation,ttl" or a list); every queue when none is named."""
    if text is None:
        return list(QUEUES)
    names = text.split(",") if isinstance(text, str) else list(text)
    chosen = [name.strip() for name in names if name.strip()]
    unknown = [name for name in chosen if name not in QUEUES]
    if unknown or not chosen:
        what = f"no queue {', '.join(repr(name) for name in unknown)}" if unknown else "no queue named"
        raise ValueError(f"{what}; the queues are {', '.join(QUEUES)}")
    return list(dict.fromkeys(chosen))


def workers_serving(app: Celery, queue: str, timeout: float = 2.0) -> list[str]:
    """The names of the live workers that consume `queue`."""
    answers = app.control.inspect(timeout=timeout).active_queues() or {}
    return sorted(worker for worker, queues in answers.items() if any(q["name"] == queue for q in queues))


def worker_argv(
    concurrency: int = 2,
    *,
    name: str | None = None,
    loglevel: str = "WARNING",
    pool: str | None = None,
    queues: str | Sequence[str] | None = None,
    beat_schedule_file: str | None = None,
) -> list[str]:
    """The command line of a worker of this app, run by this Python, serving `queues` (default: all)."""
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        __name__,
        "worker",
        f"--queues={','.join(parse_queues(queues))}",
        f"--concurrency={concurrency}",
        f"--loglevel={loglevel}",
        # no gossip or mingle: workers need not know each other, and start faster without
        "--without-gossip",
        "--without-mingle",
    ]
    if pool is not None:
        argv.append(f"--pool={pool}")
    if beat_schedule_file is not None:
        # the scheduler inside this worker; its file remembers the last run across restarts
        argv += ["--beat", f"--schedule={beat_schedule_file}"]
    if name is not None:
        argv += ["-n", name]
    return argv


# What `celery -A watershed.api.service.celery_app worker` loads: the broker from this process's settings.
app = app_for()
