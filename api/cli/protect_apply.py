"""`watershed protect apply` and `rewrap`: run a protection plan, the DDL through Spark SQL and the
ORC file rewrites on Spark executors, recording each file and table in the graph (the use case is
api/service/protection_runs.py; the Spark job orc_crypto/protect/spark_apply.py). Registered under
`watershed protect` by api/cli/protect.py, which takes the policy's protection section from here."""

from __future__ import annotations

import contextlib
import getpass
import os
from pathlib import Path

import typer

from watershed.api.cli.output import (
    OutputFormat,
    console,
    err_console,
    fail,
    format_option,
    styled,
    write_model,
)
from watershed.api.cli.policy_option import POLICY_HELP, command_policy

KMS_HELP = (
    "Hadoop KMS provider URI (kms://http@HOST:PORT/kms) the executors unwrap file keys with "
    "(default: the plan's key provider path)."
)


def _read_plan(path: Path):
    from pydantic import ValidationError

    from watershed.graph.protection import ProtectionPlan

    try:
        return ProtectionPlan.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        fail(f"cannot read plan {path}: {exc.strerror or exc}")
    except ValidationError as exc:
        fail(f"plan {path} is not a protection plan: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}")


def protection_policy(policy_file: Path | None):
    """The protection section of the tag policy (loaded as `watershed propagate` loads it)."""
    from watershed.api.service.protection_runs import protection_section

    protection = protection_section(command_policy(policy_file))
    if protection is None:
        fail(
            "the tag policy has no protection rules: add a `protection:` section with rules "
            "(see docs/protection.md), or give --policy"
        )
    return protection


def _spark_session(master: str, kms: str | None, hive: bool):
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("watershed protect apply").master(master)
    if kms:
        # the tables' future writes (and any read in this session) unwrap keys through the same KMS
        builder = builder.config("spark.hadoop.hadoop.security.key.provider.path", kms)
    token_file = os.environ.get("HADOOP_TOKEN_FILE_LOCATION")
    if token_file:
        builder = builder.config("spark.executorEnv.HADOOP_TOKEN_FILE_LOCATION", token_file)
    if hive:
        builder = builder.enableHiveSupport()
    return builder.getOrCreate()


@contextlib.contextmanager
def _spark(master: str, kms: str | None, hive: bool, *, wanted: bool):
    """A Spark session for the run (None when it runs in this process), stopped after it."""
    if not wanted:
        yield None
        return
    spark = _spark_session(master, kms, hive)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield spark
    finally:
        spark.stop()


def _run_and_report(action: str, fmt: OutputFormat, work) -> None:
    """`work(store)` -> a ProtectionRun, audited as `action`, then reported; a WatershedError is
    one line and exit 1."""
    from watershed.api.cli.graph import open_store
    from watershed.graph.errors import WatershedError

    store = open_store()
    try:
        run = work(store)
        _audit(store, action, run)
    except WatershedError as exc:
        fail(str(exc))
    finally:
        store.close()
    _report(run, fmt)


def _audit(store, action: str, run) -> None:
    """The audit entry of a run made here; the actor is the OS user (`cli:NAME`), as for
    `watershed tag`."""
    from watershed.api.service.protection_runs import audit_run

    audit_run(store, f"cli:{getpass.getuser()}", action, run, run=run.id)


def _print_run(run) -> None:
    console.print(styled(("run", "bold"), f" {run.id}  {run.status}  policy {run.policy_digest or '-'}"))
    console.print(
        f"tables {run.tables}; files protected {run.files_done}, unchanged {run.files_unchanged}, "
        f"skipped {len(run.skipped)}, failed {len(run.errors)}; "
        f"{run.bytes_rewritten} bytes rewritten in {run.seconds:.1f} s"
    )
    for problem in run.skipped:
        console.print(
            styled("  ", ("skipped", "yellow"), f" {problem.table} {problem.path}: {problem.error}")
        )
    for problem in run.errors:
        console.print(
            styled("  ", ("failed", "bold red"), f" {problem.table} {problem.path}: {problem.error}")
        )


def _progress(fmt: OutputFormat):
    """Files finished so far, on standard error (the table format only: JSON stays parseable)."""

    def progress(done: int, total: int) -> None:
        if fmt == OutputFormat.table:
            err_console.print(f"files {done}/{total}")

    return progress


def _report(run, fmt: OutputFormat) -> None:
    """The run as the format asks; exit 1 when a file or a DDL failed."""
    if fmt == OutputFormat.json:
        write_model(run)
    else:
        _print_run(run)
    if run.errors or run.more_errors:
        raise typer.Exit(1)


def apply_command(
    plan_file: Path | None = typer.Option(
        None,
        "--plan",
        help="A plan written by `watershed protect plan --out` (default: plan now from the graph).",
    ),
    table: list[str] = typer.Option(
        None, "--table", "-t", help="When planning now: only this table; repeatable."
    ),
    policy_file: Path | None = typer.Option(None, "--policy", help=POLICY_HELP),
    master: str = typer.Option(
        "local[2]", "--master", help="Spark master URL (local[N], spark://..., yarn)."
    ),
    kms: str | None = typer.Option(None, "--kms", help=KMS_HELP),
    hive: bool = typer.Option(
        True, "--hive/--no-hive", help="Run the DDL against the Hive metastore (Spark's enableHiveSupport)."
    ),
    local: bool = typer.Option(
        False,
        "--local",
        help="Rewrite the files in this process, without Spark (the DDL is reported as not run).",
    ),
    fmt: OutputFormat = format_option(),
) -> None:
    """Apply a protection plan: set each table's ORC options for future writes (Spark SQL) and
    encrypt its existing files in place on Spark executors. Safe to re-run: finished files are
    left alone, and a killed apply resumes where it stopped. Exit 1 when a file or a DDL failed."""
    from watershed.api.service.protection_runs import apply, plan
    from watershed.graph.protection import KmsUriError, kms_uri

    try:
        kms_uri(kms, None)
    except KmsUriError as exc:
        fail(str(exc))

    def work(store):
        if plan_file:
            planned = _read_plan(plan_file)
        else:
            planned = plan(store, protection_policy(policy_file), kms=kms, tables=table or None)
        if not planned.tables:
            err_console.print("nothing to apply: every table is as the policy asks")
        # the session's own reads and the tables' future writes use the KMS the apply uses
        uri = kms_uri(kms, planned.key_provider_path)
        with _spark(master, uri, hive, wanted=not local and bool(planned.tables)) as spark:
            return apply(store, planned, kms=kms, spark=spark, progress=_progress(fmt))

    _run_and_report("protect.apply", fmt, work)


def rewrap_command(
    table: list[str] = typer.Option(
        None, "--table", "-t", help="Only this table's files (db.t); repeatable."
    ),
    master: str = typer.Option(
        "local[2]", "--master", help="Spark master URL (local[N], spark://..., yarn)."
    ),
    kms: str | None = typer.Option(
        None, "--kms", help="Hadoop KMS provider URI (default: the policy's key_provider_path)."
    ),
    policy_file: Path | None = typer.Option(None, "--policy", help=POLICY_HELP),
    local: bool = typer.Option(False, "--local", help="Rewrap the files in this process, without Spark."),
    fmt: OutputFormat = format_option(),
) -> None:
    """After `watershed kms roll KEY`: re-key every protected file (recorded in the graph, or
    found encrypted under a protected table's location) to its master keys' current versions.
    Only the encrypted bytes and the tail are rewritten, in place; files already current are
    left alone."""
    from watershed.api.service.protection_runs import ProtectionRunError, rewrap, rewrap_kms
    from watershed.graph.errors import WatershedError

    try:
        uri = rewrap_kms(None if kms else protection_policy(policy_file), kms)
    except (ProtectionRunError, WatershedError) as exc:
        fail(str(exc))

    def work(store):
        with _spark(master, uri, hive=False, wanted=not local) as spark:
            return rewrap(store, uri, tables=table or None, spark=spark, progress=_progress(fmt))

    _run_and_report("protect.rewrap", fmt, work)
