"""The nightly Airflow DAG `watershed_nightly`: harvest → discover → propagate → TTL advice →
protection plan → protection apply (off unless the `apply_protection` param is on) → the coverage
snapshot → a run summary,
once per logical date; beside them, after propagation, OpenLineage emission (off unless
WATERSHED_OPENLINEAGE_EMIT_URL is set).

Point Airflow's `dags_folder` at this folder (installed: `python -c "import watershed.dags, os;
print(os.path.dirname(watershed.dags.__file__))"`), or import `dag` from `watershed.dags.watershed_nightly`.

- The two Spark steps are spark-submit jobs through the Apache Spark provider: the master comes
  from the Airflow connection `watershed_spark` (conn type `spark`, host `local[2]`, `yarn`,
  `k8s://…`), and Spark conf from its extra `{"conf": {...}}`.
- The other steps are Python tasks calling `watershed.api.service.nightly.steps`, the same functions
  `watershed nightly` and the Celery beat task run; each is idempotent for its logical date and
  returns its result (run id, counts) through XCom.
- Before propagating, a reschedule-mode sensor waits for a previous run still holding the
  propagation lock, without holding a worker slot.
- Services and settings come from the workers' environment: the WATERSHED_* variables (graph,
  Redis, WATERSHED_NIGHTLY_TASKS, WATERSHED_NIGHTLY_CATALOG, …) as for every other entry point.

Nothing here runs at parse time beyond building the DAG: every Watershed import is inside a task.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import DAG, Param, PokeReturnValue, get_current_context, task
from airflow.sdk.bases.hook import BaseHook
from airflow.timetables.interval import CronDataIntervalTimetable

DAG_ID = "watershed_nightly"
#: the Airflow connection of the Spark steps: its host is the master, its extra's `conf` the Spark conf
SPARK_CONNECTION = "watershed_spark"
PREPARED = "ti.xcom_pull(task_ids='prepare')"

STEP_DEFAULTS = {
    "retries": 2,
    "retry_delay": timedelta(minutes=2),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=30),
}


def _settings():
    from watershed.api.service.nightly import NightlySettings

    return NightlySettings()


class NightlySparkSubmit(SparkSubmitOperator):
    """spark-submit with the Spark conf of the `watershed_spark` connection's extra, read when the
    step runs: the conf may hold secrets, so it never passes through XCom or a rendered template."""

    def execute(self, context):
        self.conf = {**spark_conf(), **(self.conf or {})}
        return super().execute(context)


def spark_conf() -> dict[str, str]:
    import sys

    from airflow.exceptions import AirflowNotFoundException

    try:
        connection = BaseHook.get_connection(SPARK_CONNECTION)
    except AirflowNotFoundException:  # spark-submit's defaults, as the provider's hook falls back to
        return {}
    # On this machine (a local master) driver and executors run the worker's own Python, which has
    # Watershed; on a cluster the connection's conf says which Python the nodes run.
    here = {"spark.pyspark.python": sys.executable, "spark.pyspark.driver.python": sys.executable}
    return {
        **(here if (connection.host or "").startswith("local") else {}),
        **{str(k): str(v) for k, v in (connection.extra_dejson.get("conf") or {}).items()},
    }


@task
def prepare() -> dict:
    """The night's date and everything the spark-submit steps need (computed at run time, not parse time)."""
    from watershed.api.service.nightly import yesterday
    from watershed.api.service.nightly.steps import check_date, harvest_job_args
    from watershed.ingest import harvest as harvest_job
    from watershed.orc_crypto.protect import spark_apply

    context = get_current_context()
    # a manual run without a logical date processes yesterday, as `watershed nightly` does
    day = check_date(context.get("ds") or yesterday())
    return {
        "date": day,
        "harvest_job": harvest_job.__file__,
        "harvest_args": harvest_job_args(_settings(), day),
        "apply_job": spark_apply.__file__,
    }


@task
def harvested(prepared: dict) -> dict:
    from watershed.api.service.nightly.steps import harvest_result

    return harvest_result(prepared["date"], _settings()).model_dump()


@task(**STEP_DEFAULTS)
def discover(prepared: dict) -> dict:
    from watershed.api.service.nightly import steps

    return steps.discover(prepared["date"], _settings()).model_dump()


@task.sensor(
    poke_interval=60, timeout=6 * 3600, mode="reschedule", retries=2, retry_delay=timedelta(minutes=1)
)
def propagation_lock_free() -> PokeReturnValue:
    """Done when no propagation run holds the lock (a killed run's lock expires by itself)."""
    from watershed.api.service.nightly.steps import propagation_lock_holder

    holder = propagation_lock_holder()
    return PokeReturnValue(is_done=holder is None, xcom_value=holder)


@task(**STEP_DEFAULTS)
def propagate(prepared: dict) -> dict:
    from watershed.api.service.nightly import steps

    full = bool(get_current_context()["params"]["full"])
    return steps.propagate(prepared["date"], _settings(), full=full).model_dump()


@task(**STEP_DEFAULTS)
def ttl_advice(prepared: dict) -> dict:
    from watershed.api.service.nightly import steps

    return steps.ttl(prepared["date"], _settings()).model_dump()


@task(**STEP_DEFAULTS)
def protection_plan(prepared: dict) -> dict:
    from watershed.api.service.nightly import steps

    settings = _settings()
    result = steps.protection_plan(prepared["date"], settings).model_dump()
    apply_args = None
    if result["status"] == "done":
        apply_args = steps.protection_apply_job_args(prepared["date"], settings)
    return {**result, "apply_args": apply_args}


@task.branch
def apply_or_skip(plan: dict) -> str:
    params = get_current_context()["params"]
    return "protection_apply" if params["apply_protection"] and plan["apply_args"] else "apply_skipped"


@task
def apply_skipped(prepared: dict, plan: dict) -> dict:
    from watershed.api.service.nightly import steps

    params = get_current_context()["params"]
    if not params["apply_protection"]:
        reason = ""
    elif plan["status"] == "skipped":
        reason = "no protection plan: " + plan["message"]
    else:
        reason = "nothing to protect: every table is as the policy asks"
    return steps.apply_skipped(prepared["date"], _settings(), reason).model_dump()


@task
def applied(prepared: dict) -> dict:
    from watershed.api.service.nightly.steps import protection_apply_result

    return protection_apply_result(prepared["date"], _settings()).model_dump()


# after whichever of apply and apply_skipped ran (the branch skips the other)
@task(trigger_rule="none_failed_min_one_success", **STEP_DEFAULTS)
def coverage(prepared: dict) -> dict:
    """The night's coverage snapshot, counting tonight's apply (the dashboard reads it)."""
    from watershed.api.service.nightly import steps

    return steps.coverage(prepared["date"], _settings()).model_dump()


@task(**STEP_DEFAULTS)
def emit(prepared: dict) -> dict:
    """Every task's lineage as OpenLineage events (skipped unless WATERSHED_OPENLINEAGE_EMIT_URL is set)."""
    from watershed.api.service.nightly import steps

    return steps.emit(prepared["date"], _settings()).model_dump()


@task(trigger_rule="all_done")
def summary(prepared: dict) -> dict:
    """Always runs: the night's summary and audit entry, then fails the DAG run when a step did not finish."""
    from watershed.api.service.nightly import NightlyError, steps

    began = get_current_context()["dag_run"].start_date
    result = steps.summary(prepared["date"], _settings(), since=began)
    if result.status != "complete":
        raise NightlyError(
            f"the night of {result.date} is incomplete: {', '.join(result.missing)} did not finish"
        )
    return result.model_dump()


with DAG(
    dag_id=DAG_ID,
    description="Watershed nightly: harvest, propagate, TTL advice, protection plan and apply",
    schedule=CronDataIntervalTimetable("0 2 * * *", timezone="UTC"),
    start_date=datetime(2024, 1, 1),
    catchup=False,
    max_active_runs=1,
    # the spark-submit steps take lists and dicts from XCom
    render_template_as_native_obj=True,
    params={
        "full": Param(False, type="boolean", description="A full propagation (default: incremental)."),
        "apply_protection": Param(
            False,
            type="boolean",
            description="Apply the protection plan: table DDL and encrypting existing ORC files.",
        ),
    },
    tags=["watershed"],
) as dag:
    prepared = prepare()
    harvest = NightlySparkSubmit(
        task_id="harvest",
        conn_id=SPARK_CONNECTION,
        application="{{ " + PREPARED + "['harvest_job'] }}",
        application_args="{{ " + PREPARED + "['harvest_args'] }}",
        name="watershed-harvest",
        **STEP_DEFAULTS,
    )
    harvest_step = harvested(prepared)
    discover_step = discover(prepared)
    lock_free = propagation_lock_free()
    propagate_step = propagate(prepared)
    ttl_step = ttl_advice(prepared)
    plan_step = protection_plan(prepared)
    branch = apply_or_skip(plan_step)
    apply = NightlySparkSubmit(
        task_id="protection_apply",
        conn_id=SPARK_CONNECTION,
        application="{{ " + PREPARED + "['apply_job'] }}",
        application_args="{{ ti.xcom_pull(task_ids='protection_plan')['apply_args'] }}",
        name="watershed-protection-apply",
        **STEP_DEFAULTS,
    )
    apply_step = applied(prepared)
    skipped = apply_skipped(prepared, plan_step)
    coverage_step = coverage(prepared)
    emit_step = emit(prepared)
    done = summary(prepared)

    (
        prepared
        >> harvest
        >> harvest_step
        >> discover_step
        >> lock_free
        >> propagate_step
        >> ttl_step
        >> plan_step
        >> branch
    )
    branch >> apply >> apply_step >> coverage_step >> done
    branch >> skipped >> coverage_step
    # beside the TTL and protection steps: a consumer that is down holds none of them back
    propagate_step >> emit_step >> done
