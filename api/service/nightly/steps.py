"""The steps of the nightly chain, one implementation for every trigger (`watershed nightly`, the
Airflow DAG, the Celery beat task).

Each step is idempotent for its logical date: run twice, it converges to the same graph, tags,
TTL records and protection records, and its result replaces the date's earlier one in the ledger
(DATA_DIR/nightly/DATE/STEP.json, written atomically). The results are small JSON-able models:
Airflow passes them on through XCom, the summary step reads them back from the ledger.

The two Spark steps (harvest, protection apply) can also run as spark-submit jobs (the DAG does):
`harvest_result` and `protection_apply_result` then turn what the job left (its run.json, its run
record in the graph) into the step's result.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from watershed.api.service.nightly.errors import NightlyError
from watershed.api.service.nightly.settings import NightlySettings
from watershed.api.service.notifications import events
from watershed.graph.errors import WatershedError, first_line

#: the steps in the order they run
STEPS = (
    "harvest",
    "discover",
    "propagate",
    "ttl",
    "protection_plan",
    "protection_apply",
    "coverage",
    "emit",
)
#: who the audit log names for what the nightly chain changes
ACTOR = "nightly"
#: the setting that gives the protection steps their KMS (NightlySettings.nightly_kms)
KMS_SETTING = "WATERSHED_NIGHTLY_KMS"

Say = Callable[[str], None]
log = logging.getLogger("watershed.api.service.nightly")


class StepResult(BaseModel):
    step: str
    #: the logical date (YYYY-MM-DD) the step ran for
    date: str
    status: Literal["done", "skipped"] = "done"
    #: the id of the run the step made (harvest, propagation, TTL or protection run)
    run_id: str | None = None
    counts: dict[str, int | float | str | None] = Field(default_factory=dict)
    seconds: float = 0.0
    message: str = ""
    finished_at: str = ""


class NightlySummary(BaseModel):
    date: str
    status: Literal["complete", "incomplete"]
    steps: list[StepResult]
    #: steps with no result for this date
    missing: list[str]


def check_date(text: str) -> str:
    """`text` if it is a calendar date written YYYY-MM-DD; a NightlyError naming it if not."""
    try:
        parsed = date.fromisoformat(text)
    except (TypeError, ValueError):
        parsed = None
    if parsed is None or parsed.isoformat() != text:
        raise NightlyError(f"{text!r} is not a date of the form YYYY-MM-DD")
    return text


# ------------------------------------------------------------------ the ledger


def _step_dir(settings: NightlySettings, day: str) -> Path:
    return settings.ledger_dir() / check_date(day)


def save_result(settings: NightlySettings, result: StepResult) -> StepResult:
    from watershed.orc_crypto.files import write_atomically

    result.finished_at = datetime.now(UTC).isoformat(timespec="seconds")
    folder = _step_dir(settings, result.date)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomically(folder / f"{result.step}.json", result.model_dump_json(indent=2).encode())
    return result


def results_of(settings: NightlySettings, day: str) -> dict[str, StepResult]:
    """The results the ledger holds for `day`, by step (an unreadable one counts as missing)."""
    found: dict[str, StepResult] = {}
    for step in STEPS:
        path = _step_dir(settings, day) / f"{step}.json"
        try:
            found[step] = StepResult.model_validate_json(path.read_bytes())
        except (OSError, ValidationError):
            continue
    return found


def _policy(context: str):
    """The tag policy (WATERSHED_POLICY_FILE, else the built-in one); a bad file is a NightlyError."""
    from watershed.api.service.policy import tag_policy
    from watershed.graph.errors import PolicyError

    try:
        return tag_policy()
    except PolicyError as exc:
        raise NightlyError(f"{context}{exc}") from None


def _open_graph(settings: NightlySettings):
    from watershed.graph.backends import UnreachableGraphError, open_answering

    try:
        return open_answering(settings, schema=True)
    except UnreachableGraphError as exc:
        raise NightlyError(str(exc)) from None


# ------------------------------------------------------------------ harvest


def harvest_out(settings: NightlySettings, day: str) -> Path:
    """Where a night's harvest runs keep their run.json and errors.jsonl."""
    return _step_dir(settings, day) / "harvest"


def _task_source(settings: NightlySettings) -> list[str]:
    """The harvest's task source as the job's arguments; NightlyError unless exactly one is set."""
    if (settings.nightly_tasks is None) == (settings.nightly_tasks_table is None):
        raise NightlyError(
            "the nightly harvest needs exactly one task source: set WATERSHED_NIGHTLY_TASKS (a directory "
            "of .sql files or a .jsonl/.parquet export) or WATERSHED_NIGHTLY_TASKS_TABLE"
        )
    if settings.nightly_tasks is not None:
        return ["--tasks", str(settings.nightly_tasks)]
    return ["--tasks-table", str(settings.nightly_tasks_table)]


def harvest_job_args(settings: NightlySettings, day: str) -> list[str]:
    """The arguments of the harvest job (ingest/harvest.py) for `day`: what spark-submit runs."""
    args = _task_source(settings)
    if settings.nightly_source is not None:
        args += ["--source", settings.nightly_source]
    if settings.nightly_catalog is not None:
        args += ["--catalog", str(settings.nightly_catalog)]
    return [*args, "--out", str(harvest_out(settings, day)), "--run-date", day]


def harvest(
    day: str, settings: NightlySettings | None = None, *, spark=None, say: Say | None = None
) -> StepResult:
    """Harvest the task corpus into the graph with Spark (this process is the driver)."""
    from watershed.api.service.harvest_runs import HarvestRunError, HarvestSource, run
    from watershed.graph.backends import UnreachableGraphError
    from watershed.ingest.settings import IngestSettings

    settings = settings or NightlySettings()
    check_date(day)
    _task_source(settings)
    source = HarvestSource(
        tasks=settings.nightly_tasks,
        tasks_table=settings.nightly_tasks_table,
        catalog=settings.nightly_catalog,
        name=settings.nightly_source,
    )
    try:
        report = run(
            source,
            out=harvest_out(settings, day),
            settings=IngestSettings(run_date=day),
            graph=settings,
            spark=spark,
            progress=say,
        )
    except UnreachableGraphError as exc:
        raise NightlyError(str(exc)) from None
    except HarvestRunError as exc:
        raise NightlyError(f"harvest {day}: {exc}") from None
    return harvest_result(day, settings, run_dir=Path(report.out_dir))


def harvest_result(
    day: str, settings: NightlySettings | None = None, *, run_dir: Path | None = None
) -> StepResult:
    """The harvest step's result from the run.json of the night's newest harvest run (or `run_dir`'s)."""
    settings = settings or NightlySettings()
    from_job = run_dir is None
    if run_dir is None:
        runs = sorted(harvest_out(settings, day).glob("harvest-*/run.json"))
        if not runs:
            raise NightlyError(f"harvest {day}: no harvest run under {harvest_out(settings, day)}")
        run_dir = runs[-1].parent
    try:
        record = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError) as exc:
        raise NightlyError(f"harvest {day}: cannot read {run_dir / 'run.json'} ({exc})") from None
    if record.get("status") != "ok":
        reason = record.get("error") or (record.get("prune") or {}).get("message") or f"see {run_dir}"
        raise NightlyError(f"harvest {day}: run {record.get('run_id')} is {record.get('status')}: {reason}")
    if from_job:
        # a spark-submit harvest: its run is not this floor's (harvest_runs.run sends the event otherwise)
        _notify(
            settings,
            [
                events.harvest_errors(
                    record.get("run_id"),
                    record.get("source"),
                    record.get("tasks") or 0,
                    record.get("tasks_with_errors") or 0,
                    record.get("statement_errors"),
                )
            ],
        )
    counts = {
        key: record.get(key) for key in ("tasks", "loaded", "unchanged", "deleted", "tasks_with_errors")
    }
    # which source the night loaded, and what it took from other sources or adopted (README "Sources")
    counts |= {
        "source": record.get("source"),
        "taken_over": (record.get("taken_over") or {}).get("count", 0),
        "adopted": record.get("adopted", 0),
    }
    return save_result(
        settings,
        StepResult(
            step="harvest",
            date=day,
            run_id=record.get("run_id"),
            counts=counts,
            seconds=round(float(record.get("seconds") or 0.0), 2),
            message=f"errors and run record in {run_dir}",
        ),
    )


# ------------------------------------------------------------------ discover


def discover(day: str, settings: NightlySettings | None = None, *, spark=None) -> StepResult:
    """Content discovery (api/service/discovery.py) of the tables whose files changed: after the
    harvest recorded their locations, before propagation, so the seeds stewards accepted (and the
    ones discovery_auto_accept accepts) propagate tonight. Remote and large tables are sampled on
    `spark` (the chain's session) when there is one, else remote ones are skipped. Skipped when
    nightly_discovery is off."""
    from watershed.api.service.discovery import discover as discover_tables
    from watershed.discovery.detectors import UnknownRegionError

    settings = settings or NightlySettings()
    check_date(day)
    if not settings.nightly_discovery:
        return _skipped(settings, "discover", day, "discovery is off (WATERSHED_NIGHTLY_DISCOVERY=false)")
    policy = _policy(f"discover {day}: ")
    store = _open_graph(settings)
    try:
        run = discover_tables(store, policy, spark=spark)
    except UnknownRegionError as exc:
        raise NightlyError(f"discover {day}: {exc}") from None
    finally:
        store.close()
    statuses = [t.status for t in run.tables]
    counts = {
        "sampled": statuses.count("sampled"),
        "unchanged": statuses.count("unchanged"),
        "skipped": statuses.count("skipped"),
        "values": run.values,
        "proposed": run.proposed,
        "auto_accepted": run.auto_accepted,
        "flagged": run.flagged,
    }
    return save_result(
        settings, StepResult(step="discover", date=day, run_id=run.run, counts=counts, seconds=run.seconds)
    )


# ------------------------------------------------------------------ propagate


def _propagation_state():
    from watershed.api.service.propagation_runs import BrokerUnreachableError, run_state
    from watershed.propagation.settings import PropagationSettings

    settings = PropagationSettings()
    try:
        return settings, run_state(settings)
    except BrokerUnreachableError as exc:
        raise NightlyError(str(exc)) from None


def propagation_lock_holder() -> int | None:
    """The fencing token of the propagation run holding the lock, or None when it is free."""
    _, state = _propagation_state()
    return state.holder()


def propagate(
    day: str,
    settings: NightlySettings | None = None,
    *,
    full: bool = False,
    local: bool = False,
    say: Say | None = None,
) -> StepResult:
    """An incremental (or full) propagation run on the Celery workers (or in this process with `local`).

    An interrupted run (a killed coordinator) is resumed, then tonight's changes get a run of their
    own. Another run holding the lock is waited for up to `nightly_lock_wait_seconds`, then this
    step fails (a scheduler retries it).
    """
    from watershed.api.service.propagation_runs import PropagationRunError, run, runner_for
    from watershed.propagation.coordinator import Progress

    settings = settings or NightlySettings()
    check_date(day)
    propagation, state = _propagation_state()
    policy = _policy(f"propagate {day}: ")
    try:
        runner = runner_for(propagation, policy, local=local)
        store = _open_graph(settings)
        try:
            outcome = run(
                store,
                policy,
                state,
                runner,
                propagation,
                full=full,
                wait=settings.nightly_lock_wait_seconds,
                progress=Progress(on_message=say),
                catch_up=True,
            )
        finally:
            store.close()
    except PropagationRunError as exc:
        raise NightlyError(f"propagate {day}: {exc}") from None
    record = outcome.record
    counts = {
        "mode": record.mode,
        "layers": len(record.layers),
        "nodes_processed": record.nodes_processed,
        "tags_changed": record.tags_changed,
        "cone": record.cone,
        "resumed": outcome.resumed.run_id if outcome.resumed is not None else None,
    }
    return save_result(
        settings,
        StepResult(
            step="propagate",
            date=day,
            run_id=record.run_id,
            counts=counts,
            seconds=round(outcome.seconds, 2),
        ),
    )


# ------------------------------------------------------------------ TTL advice


def ttl(day: str, settings: NightlySettings | None = None) -> StepResult:
    """Every column's TTL recommendation, stored in the graph under the run id `ttl-DAY`."""
    from watershed.api.service.ttl_advice import TtlRunError, store_here

    settings = settings or NightlySettings()
    began = time.monotonic()
    try:
        summary = store_here(f"ttl-{check_date(day)}")
    except TtlRunError as exc:
        raise NightlyError(str(exc)) from None
    return save_result(
        settings,
        StepResult(
            step="ttl",
            date=day,
            run_id=summary.run_id,
            counts=summary.model_dump(exclude={"run_id"}),
            seconds=round(time.monotonic() - began, 2),
        ),
    )


# ------------------------------------------------------------------ protection


def plan_path(settings: NightlySettings, day: str) -> Path:
    return _step_dir(settings, day) / "protection-plan.json"


def _protection_policy(day: str):
    """The policy's protection section, or None when it has no rules."""
    from watershed.api.service.protection_runs import protection_section

    return protection_section(_policy(f"protection plan {day}: "))


def protection_plan(day: str, settings: NightlySettings | None = None) -> StepResult:
    """What protecting the sensitive columns would change, written to the night's plan file."""
    from watershed.api.service.protection_runs import plan as plan_protection
    from watershed.orc_crypto.files import write_atomically
    from watershed.orc_crypto.keys.base import KeyProviderError

    settings = settings or NightlySettings()
    check_date(day)
    began = time.monotonic()
    policy = _protection_policy(day)
    if policy is None:
        return _skipped(
            settings, "protection_plan", day, "the tag policy has no protection rules (docs/protection.md)"
        )
    store = _open_graph(settings)
    try:
        # incremental: the tables changed since the last night's plan, the rest carried forward
        plan = plan_protection(
            store, policy, kms=settings.nightly_kms, given_as=KMS_SETTING, incremental=True
        )
    except (KeyProviderError, WatershedError) as exc:
        raise NightlyError(f"protection plan {day}: {exc}") from None
    finally:
        store.close()
    path = plan_path(settings, day)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, plan.model_dump_json(indent=2).encode())
    counts = {
        "tables": len(plan.tables),
        "columns": sum(len(t.columns) for t in plan.tables),
        "files": plan.files,
        "bytes": sum(f.size for t in plan.tables for f in t.files),
        "problems": sum(len(t.problems) for t in plan.tables),
    }
    return save_result(
        settings,
        StepResult(
            step="protection_plan",
            date=day,
            counts=counts,
            seconds=round(time.monotonic() - began, 2),
            message=str(path),
        ),
    )


def _read_plan(settings: NightlySettings, day: str):
    from watershed.graph.protection import ProtectionPlan

    path = plan_path(settings, day)
    try:
        return ProtectionPlan.model_validate_json(path.read_bytes())
    except OSError:
        raise NightlyError(
            f"protection apply {day}: no plan at {path}; run the protection plan step first"
        ) from None
    except ValidationError as exc:
        raise NightlyError(
            f"protection apply {day}: {path} is not a protection plan ({exc.errors()[0]['msg']})"
        ) from None


def apply_skipped(day: str, settings: NightlySettings | None = None, reason: str = "") -> StepResult:
    """The apply step's result when it does not run (off, or nothing planned)."""
    return _skipped(
        settings or NightlySettings(),
        "protection_apply",
        day,
        reason
        or "protection apply is off: a steward turns it on (`--apply-protection`, or the DAG's apply_protection param)",
    )


def _skipped(settings: NightlySettings, step: str, day: str, message: str) -> StepResult:
    """A step's result, saved, when it does not run."""
    return save_result(settings, StepResult(step=step, date=day, status="skipped", message=message))


def apply_run_id(day: str) -> str:
    """The id of the night's protection run: a re-run of the date replaces its record."""
    return f"protect-nightly-{day}"


def protection_apply_job_args(day: str, settings: NightlySettings | None = None) -> list[str] | None:
    """The arguments of the apply job (orc_crypto/protect/spark_apply.py), or None when nothing is planned."""
    settings = settings or NightlySettings()
    plan = _read_plan(settings, check_date(day))
    if not plan.tables:
        return None
    from watershed.graph.protection import kms_uri

    args = ["--plan", str(plan_path(settings, day)), "--run-id", apply_run_id(day)]
    kms = kms_uri(settings.nightly_kms, plan.key_provider_path, given_as=KMS_SETTING)
    return args if kms is None else [*args, "--kms", kms]


def protection_apply(
    day: str, settings: NightlySettings | None = None, *, spark=None, say: Say | None = None
) -> StepResult:
    """Apply the night's plan: DDL through Spark SQL and file rewrites on Spark's executors (`spark`,
    else the session the harvest step opens: without one the DDL would not run and the step fail)."""
    from watershed.api.service.protection_runs import apply
    from watershed.ingest.harvest import spark_session
    from watershed.ingest.settings import IngestSettings
    from watershed.orc_crypto.protect.spark_apply import ApplyError

    settings = settings or NightlySettings()
    plan = _read_plan(settings, check_date(day))
    if not plan.tables:
        return apply_skipped(day, settings, "nothing to protect: every table is as the policy asks")
    store = _open_graph(settings)
    try:
        try:
            session = spark or spark_session(IngestSettings().spark_master)
            run = apply(
                store,
                plan,
                spark=session,
                kms=settings.nightly_kms,
                given_as=KMS_SETTING,
                run_id=apply_run_id(day),
                # the executors read the KMS delegation token from the file the driver was given
                # (on a local master they inherit it; on YARN or Kubernetes they do not)
                token_file=os.environ.get("HADOOP_TOKEN_FILE_LOCATION"),
            )
        except (ApplyError, WatershedError) as exc:
            raise NightlyError(f"protection apply {day}: {exc}") from None
        return _apply_result(day, settings, run, store)
    finally:
        store.close()


def protection_apply_result(day: str, settings: NightlySettings | None = None) -> StepResult:
    """The apply step's result from the night's protection run record (after a spark-submit apply)."""
    from watershed.orc_crypto.protect import records

    settings = settings or NightlySettings()
    store = _open_graph(settings)
    try:
        run = records.run(store, apply_run_id(check_date(day)))
        if run is None:
            raise NightlyError(f"protection apply {day}: the graph has no run {apply_run_id(day)}")
        return _apply_result(day, settings, run, store)
    finally:
        store.close()


def _apply_result(day: str, settings: NightlySettings, run, store) -> StepResult:
    from watershed.api.service.protection_runs import audit_run, run_counts

    counts = run_counts(run)
    audit_run(store, ACTOR, "protect.apply", run, date=day)
    if run.status != "done" or run.errors or run.skipped:
        raise NightlyError(
            f"protection apply {day}: run {run.id} is {run.status}: {len(run.errors)} files failed, "
            f"{len(run.skipped)} held back (`watershed protect runs`)"
        )
    return save_result(settings, StepResult(step="protection_apply", date=day, run_id=run.id, counts=counts))


# ------------------------------------------------------------------ coverage


def coverage(day: str, settings: NightlySettings | None = None) -> StepResult:
    """The date's coverage snapshot (api/service/coverage.py), after the protection steps so it
    counts tonight's apply: what the dashboard shows. A re-run of the date replaces the snapshot."""
    from watershed.api.service.coverage import new_unprotected, previous_id, refresh, unprotected_ids

    settings = settings or NightlySettings()
    check_date(day)
    policy = _policy(f"coverage {day}: ")
    store = _open_graph(settings)
    try:
        earlier = previous_id(store, day)
        before = unprotected_ids(store, earlier) if earlier is not None else None
        snapshot = refresh(store, policy, day)
        # the snapshot is coverage.py's write: its webhook event follows it
        event = events.unprotected(
            day, earlier, new_unprotected(before, unprotected_ids(store, snapshot.id) or set())
        )
        if event is not None:
            store.write_all([event])
    finally:
        store.close()
    return save_result(
        settings,
        StepResult(step="coverage", date=day, counts=snapshot.totals.model_dump(), seconds=snapshot.seconds),
    )


# ------------------------------------------------------------------ OpenLineage out


def emit(day: str, settings: NightlySettings | None = None) -> StepResult:
    """Every task's lineage as OpenLineage RunEvents to WATERSHED_OPENLINEAGE_EMIT_URL (with the key
    of WATERSHED_OPENLINEAGE_API_KEY_FILE), after propagation so the tags are tonight's; skipped
    when no URL is set. The events' time is the night's (the day after the logical date, 00:00 UTC),
    so a re-run of the date sends the very same events."""
    from watershed.api.service import lineage_emission

    settings = settings or NightlySettings()
    check_date(day)
    emission = lineage_emission.LineageEmissionSettings()
    url = emission.openlineage_emit_url
    if not url:
        return _skipped(
            settings, "emit", day, "OpenLineage emission is off (set WATERSHED_OPENLINEAGE_EMIT_URL)"
        )
    policy = _policy(f"emit {day}: ")
    night = datetime.combine(date.fromisoformat(day) + timedelta(days=1), datetime.min.time(), UTC)
    store = _open_graph(settings)
    try:
        transport = lineage_emission.http_target(url, emission, lineage_emission.api_key(emission))
        report = lineage_emission.emit(store, transport, url, policy, settings=emission, event_time=night)
    except lineage_emission.EmissionError as exc:
        raise NightlyError(f"emit {day}: {exc}") from None
    finally:
        store.close()
    return save_result(
        settings,
        StepResult(
            step="emit",
            date=day,
            counts={"tasks": report.tasks, "sent": report.sent, "skipped": len(report.skipped)},
            seconds=round(report.seconds, 2),
            message=f"to {url}",
        ),
    )


# ------------------------------------------------------------------ summary


def summary(
    day: str, settings: NightlySettings | None = None, *, since: datetime | None = None
) -> NightlySummary:
    """The night's results, as the ledger holds them, written to DATA_DIR/nightly/DAY/summary.json and audited.

    With `since` (when this run of the chain began), a result of an earlier run of the same date
    counts as missing: a step that failed this time is not hidden by last time's success.
    """
    from watershed.api.service.audit import statement
    from watershed.api.service.coverage import record_nightly
    from watershed.orc_crypto.files import write_atomically

    settings = settings or NightlySettings()
    found = results_of(settings, check_date(day))
    if since is not None:
        floor = since.astimezone(UTC).replace(microsecond=0)
        found = {step: r for step, r in found.items() if datetime.fromisoformat(r.finished_at) >= floor}
    missing = [step for step in STEPS if step not in found]
    result = NightlySummary(
        date=day,
        status="incomplete" if missing else "complete",
        steps=[found[step] for step in STEPS if step in found],
        missing=missing,
    )
    write_atomically(_step_dir(settings, day) / "summary.json", result.model_dump_json(indent=2).encode())
    store = _open_graph(settings)
    try:
        # the night's webhook events in the write of its audit entry
        store.write_all(
            [
                statement(
                    ACTOR,
                    "nightly.run",
                    f"nightly:{day}",
                    None,
                    {
                        "status": result.status,
                        "missing": missing,
                        **{s.step: s.run_id or s.status for s in result.steps},
                    },
                ),
                *events.nightly(
                    day, result.status, missing, _seconds(result), _earlier_seconds(settings, day)
                ),
            ]
        )
        # the dashboard's "last nightly" (api/service/coverage.py)
        record_nightly(store, day, result.status, missing)
    finally:
        store.close()
    return result


def _seconds(result: NightlySummary) -> float:
    return sum(step.seconds for step in result.steps)


def _earlier_seconds(settings: NightlySettings, day: str) -> list[float]:
    """How long the complete nightly runs of the dates before `day` took, oldest first (the ledger's summaries)."""
    found = []
    for path in sorted(settings.ledger_dir().glob("*/summary.json")):
        if path.parent.name >= day:
            continue
        try:
            earlier = NightlySummary.model_validate_json(path.read_text())
        except (OSError, ValidationError):
            continue
        if earlier.status == "complete":
            found.append(_seconds(earlier))
    return found


def _notify(settings: NightlySettings, statements: list) -> None:
    """Store webhook events of a change written elsewhere (a spark-submit job's run)."""
    wanted = [s for s in statements if s is not None]
    if not wanted:
        return
    store = _open_graph(settings)
    try:
        store.write_all(wanted)
    finally:
        store.close()


def failed(day: str, step: str, exc: BaseException, settings: NightlySettings | None = None) -> None:
    """The `nightly.failed` event of a step that raised (the chain stops there, with no summary).
    A graph that does not answer cannot take it; the step's own error, raised after, says why."""
    error = f"{type(exc).__name__}: {first_line(exc)}"
    try:
        _notify(
            settings or NightlySettings(),
            [events.statement("nightly.failed", {"date": day, "step": step, "error": error})],
        )
    except Exception as notify_exc:  # the step's error is the one the caller must see
        log.warning("nightly %s: its nightly.failed event was not stored: %s", day, first_line(notify_exc))
