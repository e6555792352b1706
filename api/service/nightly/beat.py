"""The nightly chain as a Celery task; its schedule is api/service/nightly/schedule.py.

`watershed worker --beat` runs the beat scheduler inside a worker; the task goes to the `nightly`
queue. Its propagate step sends batches to the `propagation` queue and waits for them, so the
worker that takes the nightly task must leave a process free for batches: serve `nightly` from a
worker of its own, or from one with two or more processes (`services up` starts one with two).

The Celery app names this module among the ones its workers import (`include`), and the task
registers itself on every app of the process (Celery's shared task): the app never imports the
chain, whose propagate step imports the app.
"""

from __future__ import annotations

from celery import shared_task

from watershed.api.service.nightly.chain import run_nightly
from watershed.api.service.nightly.schedule import SCHEDULE_NAME, TASK_NAME, beat_schedule, nightly_crontab

__all__ = ["SCHEDULE_NAME", "TASK_NAME", "beat_schedule", "nightly_crontab", "run_nightly_task"]


# Acknowledged when taken, unlike the batches: a chain outlives the visibility timeout, and a late
# ack would hand it to a second worker while the first still runs it. A chain lost with its worker
# is run again by the next night's schedule (or by hand), each step idempotent.
@shared_task(name=TASK_NAME, acks_late=False)
def run_nightly_task(day: str | None = None, full: bool = False, apply_protection: bool = False) -> dict:
    """The whole chain for `day` (default: yesterday) on this worker; the night's summary as a dict."""
    return run_nightly(day, full=full, apply_protection=apply_protection).model_dump()
