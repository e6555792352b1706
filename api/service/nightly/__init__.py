"""The nightly chain: harvest → discover → propagate → TTL advice → protection plan → apply → summary.

One implementation of the steps (`steps`), three ways to trigger them: `watershed nightly`
(cron), the Celery beat task (`watershed worker --beat`), and the Airflow DAG in `dags/`.
"""

from watershed.api.service.nightly.chain import run_nightly, yesterday
from watershed.api.service.nightly.settings import NightlySettings
from watershed.api.service.nightly.steps import STEPS, NightlyError, NightlySummary, StepResult

__all__ = [
    "STEPS",
    "NightlyError",
    "NightlySettings",
    "NightlySummary",
    "StepResult",
    "run_nightly",
    "yesterday",
]
