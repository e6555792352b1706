"""`watershed lineage emit`: every task's lineage as OpenLineage RunEvents, to a consumer's HTTP
endpoint, a JSON-lines file or the console (docs/openlineage.md, "What Watershed emits").

Exit status: 0 when every event was sent; 1 when the graph, the policy, the key file or the target
fails (a failed send says how many events had gone); 2 on usage (no target or two).
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from watershed.api.cli.graph import open_store
from watershed.api.cli.output import (
    OutputFormat,
    console,
    err_console,
    fail,
    format_option,
    usage_error,
    write_model,
)
from watershed.api.cli.policy_option import POLICY_HELP, command_policy


def emit_command(
    to: str | None = typer.Option(
        None, "--to", help="The consumer's base URL (events are posted to its api/v1/lineage)."
    ),
    file: Path | None = typer.Option(
        None, "--file", help="Write the events to this file, one JSON per line."
    ),
    to_console: bool = typer.Option(False, "--console", help="Print the events, one JSON per line."),
    task: list[str] = typer.Option([], "--task", help="Only this task (repeatable; default: every task)."),
    api_key_file: Path | None = typer.Option(
        None,
        "--api-key-file",
        help="A file holding the consumer's API key (default: WATERSHED_OPENLINEAGE_API_KEY_FILE).",
    ),
    policy: Path | None = typer.Option(None, "--policy", help=POLICY_HELP),
    output: OutputFormat = format_option("The report: a line for people, or JSON."),
) -> None:
    """Send every task's lineage as OpenLineage RunEvents: job = task, datasets with their schemas,
    column lineage with Watershed's kinds and masking, and the columns' tags.

    Without a target, WATERSHED_OPENLINEAGE_EMIT_URL is the URL.
    """
    from watershed.api.service import lineage_emission as service

    settings = service.LineageEmissionSettings()
    chosen = [name for name, given in (("--to", to), ("--file", file), ("--console", to_console)) if given]
    if len(chosen) > 1:
        usage_error(f"{' and '.join(chosen)}: give one target")
    if not chosen:
        if not settings.openlineage_emit_url:
            usage_error(
                "give a target: --to URL, --file F or --console (or set WATERSHED_OPENLINEAGE_EMIT_URL)"
            )
        to = settings.openlineage_emit_url
    try:
        if to_console:
            target, transport = "the console", service.console_target()
        elif file is not None:
            target, transport = str(file), service.file_target(file)
        else:
            assert to is not None
            target = to
            transport = service.http_target(to, settings, service.api_key(settings, api_key_file))
    except service.EmissionError as exc:
        fail(str(exc))
    tag_policy = command_policy(policy)
    store = open_store()
    # the events own standard output with --console: progress and the report go to standard error
    report_console = err_console if to_console else console
    handler = service.log_console_events(sys.stdout) if to_console else None

    def progress(done: int, total: int) -> None:
        err_console.print(f"{done}/{total} tasks", highlight=False)

    try:
        report = service.emit(
            store, transport, target, tag_policy, settings=settings, task_ids=task or None, progress=progress
        )
    except service.EmissionError as exc:
        fail(str(exc))
    finally:
        store.close()
        if handler is not None:
            import logging

            logging.getLogger(service.CONSOLE_LOGGER).removeHandler(handler)
    if output is OutputFormat.json and not to_console:
        write_model(report)
        return
    line = f"sent {report.sent} events ({report.tasks} tasks) to {report.target} in {report.seconds:.1f}s"
    if report.skipped:
        line += f"; {len(report.skipped)} tasks without a complete version not sent: {', '.join(report.skipped[:5])}"
    report_console.print(line)
