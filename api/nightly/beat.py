"""The nightly chain as a Celery task, and the Celery beat schedule that triggers it.

`watershed worker --beat` runs the beat scheduler inside a worker; the task goes to the `nightly`
queue. Its propagate step sends batches to the `propagation` queue and waits for them, so the
worker that takes the nightly task must leave a process free for batches: serve `nightly` from a
worker of its own, or from one with two or more processes (`services up` starts one with two).
"""

from __future__ import annotations

from celery.schedules import crontab

from watershed.api.nightly.settings import NightlySettings
from watershed.api.nightly.steps import NightlyError

TASK_NAME = "nightly.run"
SCHEDULE_NAME = "watershed-nightly"


def run_nightly_task(day: str | None = None, full: bool = False, apply_protection: bool = False) -> dict:
    """The whole chain for `day` (default: yesterday) on this worker; the night's summary as a dict."""
    from watershed.api.nightly.chain import run_nightly

    return run_nightly(day, full=full, apply_protection=apply_protection).model_dump()


def nightly_crontab(line: str) -> crontab:
    """The schedule of a cron line `minute hour day-of-month month day-of-week`."""
    fields = line.split()
    if len(fields) != 5:
        raise NightlyError(
            f"WATERSHED_NIGHTLY_CRON={line!r}: expected five fields (minute hour day-of-month month day-of-week)"
        )
    minute, hour, day_of_month, month, day_of_week = fields
    try:
        return crontab(
            minute=minute, hour=hour, day_of_month=day_of_month, month_of_year=month, day_of_week=day_of_week
        )
    except ValueError as exc:
        raise NightlyError(f"WATERSHED_NIGHTLY_CRON={line!r}: {exc}") from None


def beat_schedule(settings: NightlySettings | None = None) -> dict:
    """Celery's `beat_schedule`: the nightly task at WATERSHED_NIGHTLY_CRON (default 02:00 UTC)."""
    settings = settings or NightlySettings()
    return {SCHEDULE_NAME: {"task": TASK_NAME, "schedule": nightly_crontab(settings.nightly_cron)}}
