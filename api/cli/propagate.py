"""`watershed propagate` and `watershed worker`: tag propagation runs, and the workers of the one Celery app."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from watershed.api.cli.output import OutputFormat, console, fail, format_option, styled, write_model
from watershed.api.cli.policy_option import POLICY_HELP, command_policy


def _state(settings):
    from watershed.api.service.propagation_runs import BrokerUnreachableError, run_state

    try:
        return run_state(settings)
    except BrokerUnreachableError as exc:
        fail(f"{exc}; run `watershed services up`")


def _run_line(record, before: str, after: str):
    """One line about a run: its mode and id, `before`, its counts, `after`."""
    return styled(
        (f"{record.mode} run {record.run_id}", "bold"),
        f": {before}{len(record.layers)} layers, {record.nodes_processed} nodes processed, "
        f"{record.tags_changed} nodes' tags changed, cone {record.cone}{after}",
    )


def propagate_command(
    full: bool = typer.Option(
        False,
        "--full",
        help="Recompute every tag (default: only the cone of what changed since the last run).",
    ),
    local: bool = typer.Option(
        False, "--local", help="Run the batches in this process instead of on Celery workers."
    ),
    policy_file: Path | None = typer.Option(None, "--policy", help=POLICY_HELP),
    batch_size: int | None = typer.Option(
        None,
        "--batch-size",
        min=1,
        help="Nodes per Celery task (default WATERSHED_PROPAGATION_BATCH_SIZE, 100).",
    ),
    wait: float = typer.Option(
        0.0, "--wait", min=0, help="Seconds to wait for another run's lock (a dead run's lock expires)."
    ),
    status: bool = typer.Option(False, "--status", help="Print the current or last run's record and exit."),
    output: OutputFormat = format_option("Output format: a summary, or JSON (the RunRecord model)."),
) -> None:
    """Propagate tags through the lineage graph, layer by layer, to a fixpoint.

    An interrupted run (a killed coordinator) is resumed from its last finished layer.
    """
    from watershed.api.cli.graph import open_store
    from watershed.api.service.propagation_runs import (
        NoWorkerError,
        PropagationRunError,
        RunStoppedError,
        run,
        runner_for,
    )
    from watershed.propagation.coordinator import Progress
    from watershed.propagation.settings import PropagationSettings

    settings = PropagationSettings()
    # A bad policy file is reported before any server is needed.
    policy = None if status else command_policy(policy_file)
    state = _state(settings)
    if status:
        record = state.current()
        if record is None:
            fail("no propagation run yet")
        if output is OutputFormat.json:
            write_model(record, exclude={"frontier"})
            return
        console.print(
            _run_line(
                record,
                f"{record.status}, started {record.started_at}, finished {record.finished_at or '-'}, ",
                f", resumed {record.resumed}",
            )
        )
        if record.error:
            console.print(styled(("error:", "red"), f" {record.error}"))
        return
    graph = open_store()

    def on_layer(layer, record) -> None:
        if output is OutputFormat.table:
            console.print(
                f"layer {layer.layer:>3}: {layer.nodes:>8} nodes in {layer.batches:>5} batches, "
                f"{layer.changed:>8} changed, {layer.seconds:7.2f} s"
            )

    def say(message: str) -> None:
        if output is OutputFormat.table:
            console.print(message)

    def resent(count: int) -> None:
        say(f"{count} batches had no answer in time; sent again")

    try:
        runner = runner_for(settings, policy, local=local, on_resend=resent)
        outcome = run(
            graph,
            policy,
            state,
            runner,
            settings,
            full=full,
            wait=wait,
            batch_size=batch_size,
            progress=Progress(on_layer=on_layer, on_message=say),
        )
    except NoWorkerError as exc:
        fail(f"{exc}; start one with `watershed worker` (or run in this process with --local)")
    except RunStoppedError as exc:
        fail(f"{exc}; the next `watershed propagate` starts a new run" if exc.failed else str(exc))
    except PropagationRunError as exc:
        fail(str(exc))
    record = outcome.record
    if output is OutputFormat.json:
        write_model(record, exclude={"frontier"})
        return
    console.print(
        _run_line(record, "", f", {outcome.seconds:.1f} s"),
        styled((" (stopped at the layer cap)" if record.stopped_at_cap else "", "yellow")),
        sep="",
    )


def worker_command(
    concurrency: int = typer.Option(2, "--concurrency", "-c", min=1, help="Worker processes."),
    queues: str = typer.Option(
        "propagation,ttl",
        "--queues",
        "-Q",
        help="Comma-separated queues to serve: propagation (tag propagation batches), ttl (TTL advice), "
        "nightly (the nightly chain; --beat adds it).",
    ),
    loglevel: str = typer.Option("WARNING", "--loglevel", help="Celery log level."),
    beat: bool = typer.Option(
        False,
        "--beat",
        help="Also run the Celery beat scheduler: the nightly chain at WATERSHED_NIGHTLY_CRON (default 0 2 * * *, UTC).",
    ),
) -> None:
    """Start a Celery worker of the one Watershed app on the configured Redis broker (propagation and ttl by default)."""
    from watershed.api.cli.output import usage_error
    from watershed.api.service.celery_app import parse_queues, worker_argv
    from watershed.api.service.propagation_runs import shown_broker
    from watershed.propagation.settings import PropagationSettings

    try:
        chosen = parse_queues(queues)
    except ValueError as exc:
        usage_error(f"--queues {queues}: {exc}")
    settings = PropagationSettings()
    schedule_file = None
    if beat:
        from watershed.api.service.celery_app import NIGHTLY_QUEUE
        from watershed.api.service.nightly.beat import nightly_crontab
        from watershed.api.service.nightly.settings import NightlySettings
        from watershed.api.service.nightly.steps import NightlyError

        nightly = NightlySettings()
        try:
            nightly_crontab(nightly.nightly_cron)
        except NightlyError as exc:
            usage_error(str(exc))
        if NIGHTLY_QUEUE not in chosen:
            chosen.append(NIGHTLY_QUEUE)
        if concurrency < 2:
            # the nightly task waits for its propagation batches: another process must run them
            usage_error(
                "--beat needs --concurrency 2 or more (the nightly task waits for propagation batches)"
            )
        nightly.data_dir.mkdir(parents=True, exist_ok=True)
        schedule_file = str(nightly.data_dir / "celerybeat-schedule")
        console.print(f"beat: the nightly chain at '{nightly.nightly_cron}' (UTC)")
    console.print(
        f"worker on {shown_broker(settings)}, queues {','.join(chosen)}, {concurrency} processes (Ctrl-C stops it)"
    )
    os.execv(
        sys.executable,
        worker_argv(concurrency, loglevel=loglevel, queues=chosen, beat_schedule_file=schedule_file),
    )


__all__ = ["propagate_command", "worker_command"]
