"""When the nightly chain runs, as data the Celery app reads: the task's name and the beat
schedule from WATERSHED_NIGHTLY_CRON.

Below the chain on purpose: the Celery app reads its schedule from here and names the task, while
the task itself (api/service/nightly/beat.py) runs the chain, whose propagate step sends batches through
the app. The app importing the task would close that circle.
"""

from __future__ import annotations

from celery.schedules import crontab

from watershed.api.service.nightly.errors import NightlyError
from watershed.api.service.nightly.settings import NightlySettings

TASK_NAME = "nightly.run"
SCHEDULE_NAME = "watershed-nightly"


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
