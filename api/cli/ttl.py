"""`watershed ttl advise` and `watershed ttl run`: column retention recommendations from the lineage graph."""

from __future__ import annotations

import json
import time
from enum import StrEnum

import typer
from rich.table import Table

from watershed.api.cli.output import console, err_console, fail, styled

app = typer.Typer(
    help="Column-level TTL advice from how far back downstream tasks read.", no_args_is_help=True
)


class Format(StrEnum):
    table = "table"
    json = "json"


def _bytes(value: int | None) -> str:
    if value is None:
        return "unknown"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(value)


@app.command("advise")
def advise_command(
    table: str | None = typer.Option(None, "--table", help="Only the columns of this table (db.table)."),
    min_savings: int = typer.Option(
        0, "--min-savings", min=0, help="Only recommendations freeing at least this many bytes (known sizes)."
    ),
    top: int = typer.Option(
        20, "--top", min=1, help="How many recommendations to print, most savings first."
    ),
    output: Format = typer.Option(Format.table, "--format", "-f", help="table or json."),
    margin_days: int | None = typer.Option(
        None, "--margin-days", min=0, help="Days added to the widest window (default from settings)."
    ),
) -> None:
    """Recommend a TTL per column: the widest downstream partition window plus a margin, capped by the table's TTL."""
    from watershed.api.cli.graph import open_store
    from watershed.api.service.ttl_advice import TtlAdviceError, advise
    from watershed.graph.settings import GraphSettings
    from watershed.ttl_advisor.settings import AdvisorSettings

    began = time.monotonic()
    # Settings first: a bad one is reported before any work.
    settings = AdvisorSettings() if margin_days is None else AdvisorSettings(ttl_margin_days=margin_days)
    graph_name = GraphSettings().graph_name
    store = open_store()
    try:
        found = advise(store, settings, graph_name=graph_name, table=table, top=top, min_savings=min_savings)
    except TtlAdviceError as exc:
        fail(str(exc))
    totals, chosen, problems = found.counts, found.top, found.problems
    elapsed = time.monotonic() - began
    shorter = totals.shorter_than_table
    counts = {"ttl": totals.ttl, "keep": totals.keep, "unused": totals.unused}
    if output is Format.json:
        console.print_json(
            json.dumps(
                {
                    "columns": totals.columns,
                    "counts": counts,
                    "shorter_than_table": shorter,
                    "seconds": round(elapsed, 2),
                    "top": [r.model_dump() for r in chosen],
                }
            )
        )
        return
    view = Table(title=f"top {len(chosen)} columns by estimated savings", title_justify="left")
    for header in (
        "column",
        "status",
        "ttl",
        "table ttl",
        "widest use",
        "savings",
        "evidence (task: window, predicates)",
    ):
        view.add_column(header)
    for rec in chosen:
        evidence = "\n".join(
            f"{u.task_id}: {u.window_days if u.window_days is not None else '∞'} d {'; '.join(u.predicates)}"
            for u in rec.evidence[:3]
        ) + (f"\n(+{len(rec.evidence) - 3} more)" if len(rec.evidence) > 3 else "")
        view.add_row(
            rec.column,
            rec.status,
            str(rec.ttl_days or "-"),
            str(rec.table_ttl_days or "-"),
            str(rec.max_window_days or "-"),
            _bytes(rec.savings_bytes),
            evidence
            or (
                f"read outside the warehouse by {', '.join(rec.read_outside_by)}"
                if rec.read_outside_by
                else "(no downstream use)"
            ),
        )
    console.print(view)
    console.print(
        f"{totals.columns} columns: {counts['ttl']} with a TTL ({shorter} shorter than their table's), "
        f"{counts['keep']} keep, {counts['unused']} unused; {elapsed:.1f} s"
    )
    for problem in problems:
        console.print(styled(("size unknown:", "yellow"), f" {problem}"))


@app.command("run")
def run_command(
    run_id: str | None = typer.Option(
        None, "--run-id", help="The id stored with every recommendation (default: a new ttl-<time>-<hex>)."
    ),
    wait: float = typer.Option(
        0.0,
        "--wait",
        min=0,
        help="Seconds to wait for the run to finish and print its summary (default: queue it and return).",
    ),
    output: Format = typer.Option(Format.table, "--format", "-f", help="table or json (the summary)."),
    full: bool = typer.Option(
        False,
        "--full",
        help="Advise every table again (default: only the tables whose inputs changed since the last complete run).",
    ),
) -> None:
    """Queue the nightly TTL advice on the `ttl` queue: a worker stores the recommendations in the graph.

    Exit 1 when the broker cannot be reached, the run fails on the worker, or it is not done within --wait.
    """
    from watershed.api.service import ttl_advice
    from watershed.api.service.celery_app import TTL_QUEUE

    try:
        queued = ttl_advice.queue(run_id, full=full)
    except ttl_advice.TtlBrokerUnreachableError as exc:
        fail(f"{exc}; run `watershed services up`")
    if output is Format.table:
        console.print(
            f"TTL run {queued.run_id} queued on the {TTL_QUEUE!r} queue of {queued.broker} (task {queued.task_id})"
        )
    if not queued.serving:
        err_console.print(
            styled(("warning:", "yellow"), f" no worker serves the {TTL_QUEUE!r} queue now; "),
            "the run starts when one does (`watershed worker`)",
            sep="",
        )
    if wait <= 0:
        return
    try:
        summary = ttl_advice.wait(queued, wait)
    except ttl_advice.TtlRunError as exc:
        fail(str(exc))
    if output is Format.json:
        console.print_json(summary.model_dump_json())
        return
    console.print(
        f"TTL run {summary.run_id} ({summary.mode}, {summary.tables} tables): {summary.columns} columns stored, {summary.ttl} with a TTL "
        f"({summary.shorter_than_table} shorter than their table's), {summary.keep} keep, {summary.unused} unused"
    )
