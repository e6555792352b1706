"""The nightly chain in one process: what `watershed nightly` and the Celery beat task run.

harvest → discover → propagate → TTL advice → protection plan → protection apply (only when asked) →
coverage snapshot → OpenLineage emission (only with a URL) → summary,
each step as `watershed.api.service.nightly.steps` implements it for every trigger. A step that fails
stops the chain (the later steps would work on a half-done night); running the chain again for
the same date redoes every step, each idempotent, and converges.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from watershed.api.service.nightly import steps
from watershed.api.service.nightly.settings import NightlySettings
from watershed.api.service.nightly.steps import NightlySummary, Say, StepResult


def yesterday() -> str:
    """The default logical date: a night's run processes the day that just ended (UTC)."""
    return (datetime.now(UTC).date() - timedelta(days=1)).isoformat()


def run_nightly(
    day: str | None = None,
    *,
    full: bool = False,
    apply_protection: bool = False,
    local: bool = False,
    settings: NightlySettings | None = None,
    spark=None,
    say: Say | None = None,
    on_step=None,
) -> NightlySummary:
    """Run every step for `day` (default: yesterday) and return the night's summary.

    `local` runs the propagation batches in this process instead of on the Celery workers;
    `on_step(result)` is called as each step finishes.
    """
    settings = settings or NightlySettings()
    day = steps.check_date(day or yesterday())
    began = datetime.now(UTC)

    finished: list[str] = []

    def done(result: StepResult) -> None:
        finished.append(result.step)
        if on_step is not None:
            on_step(result)

    try:
        done(steps.harvest(day, settings, spark=spark, say=say))
        done(steps.discover(day, settings, spark=spark))
        done(steps.propagate(day, settings, full=full, local=local, say=say))
        done(steps.ttl(day, settings))
        planned = steps.protection_plan(day, settings)
        done(planned)
        if not apply_protection:
            done(steps.apply_skipped(day, settings))
        elif planned.status == "skipped":
            done(steps.apply_skipped(day, settings, "no protection plan: " + planned.message))
        else:
            done(steps.protection_apply(day, settings, spark=spark, say=say))
        done(steps.coverage(day, settings))
        # last: a consumer that is down holds back nothing of the warehouse's own steps
        done(steps.emit(day, settings))
        return steps.summary(day, settings, since=began)
    except Exception as exc:
        # a step that raised stops the chain before its summary: the webhook event says which
        running = next((step for step in steps.STEPS if step not in finished), "summary")
        steps.failed(day, running, exc, settings)
        raise
