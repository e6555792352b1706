"""`watershed nightly`: the nightly chain for one logical date, for cron users.

The same steps as the Airflow DAG (dags/watershed_nightly.py) and the Celery beat task:
harvest → discover → propagate → TTL advice → protection plan → protection apply (off unless asked) → summary.
"""

from __future__ import annotations

from pathlib import Path

import typer

from watershed.api.cli.output import (
    OutputFormat,
    console,
    fail,
    format_option,
    styled,
    usage_error,
    write_model,
)


def _line(result) -> str:
    counts = ", ".join(f"{key} {value}" for key, value in result.counts.items())
    what = result.run_id or result.status
    extra = f"; {result.message}" if result.message else ""
    return f"{result.step:<17} {what}: {counts or '-'} ({result.seconds:.1f} s){extra}"


def nightly_command(
    day: str | None = typer.Option(
        None, "--date", "-d", help="The logical date YYYY-MM-DD (default: yesterday, UTC)."
    ),
    full: bool = typer.Option(False, "--full", help="A full propagation (default: incremental)."),
    apply_protection: bool = typer.Option(
        False,
        "--apply-protection",
        help="Also apply the protection plan: table DDL and encrypting existing ORC files (needs the KMS).",
    ),
    local: bool = typer.Option(
        False, "--local", help="Run the propagation batches in this process instead of on Celery workers."
    ),
    tasks: Path | None = typer.Option(
        None,
        "--tasks",
        "-t",
        help="The task corpus: a directory of .sql files or a .jsonl/.parquet export (default WATERSHED_NIGHTLY_TASKS).",
    ),
    catalog: Path | None = typer.Option(
        None, "--catalog", "-c", help="The JSON schema catalog (default WATERSHED_NIGHTLY_CATALOG)."
    ),
    status: bool = typer.Option(False, "--status", help="Print the date's recorded step results and exit."),
    output: OutputFormat = format_option("Output format: one line per step, or JSON (the night's summary)."),
) -> None:
    """Run the nightly chain for one date; re-running a date redoes each step idempotently.

    The task corpus is WATERSHED_NIGHTLY_TASKS (or WATERSHED_NIGHTLY_TASKS_TABLE) with the
    catalog WATERSHED_NIGHTLY_CATALOG; each step's result is kept in DATA_DIR/nightly/DATE/.
    Exit 1 when a step fails (the steps after it do not run).
    """
    from watershed.api.service.nightly import NightlyError, NightlySettings, run_nightly, yesterday
    from watershed.api.service.nightly.steps import STEPS, check_date, results_of

    chosen = {"nightly_tasks": tasks, "nightly_catalog": catalog}
    settings = NightlySettings(**{name: value for name, value in chosen.items() if value is not None})
    try:
        day = check_date(day or yesterday())
    except NightlyError as exc:
        usage_error(f"--date: {exc}")
    if status:
        found = results_of(settings, day)
        if not found:
            fail(f"no nightly step has run for {day}")
        for step in STEPS:
            console.print(_line(found[step]) if step in found else f"{step:<17} (no result)")
        return

    def on_step(result) -> None:
        if output is OutputFormat.table:
            console.print(_line(result))

    def say(message: str) -> None:
        if output is OutputFormat.table:
            console.print("  " + message)

    if output is OutputFormat.table:
        console.print(styled((f"nightly run for {day}", "bold")))
    try:
        summary = run_nightly(
            day,
            full=full,
            apply_protection=apply_protection,
            local=local,
            settings=settings,
            say=say,
            on_step=on_step,
        )
    except NightlyError as exc:
        fail(str(exc))
    if output is OutputFormat.json:
        write_model(summary)
        return
    console.print(f"summary: {settings.ledger_dir() / day / 'summary.json'} ({summary.status})")


__all__ = ["nightly_command"]
