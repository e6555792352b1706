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
    from watershed.graph.settings import GraphSettings
    from watershed.ttl_advisor.advisor import top_by_savings
    from watershed.ttl_advisor.batches import advise_in_batches
    from watershed.ttl_advisor.graph_uses import has_tables
    from watershed.ttl_advisor.model import AdviceCounts
    from watershed.ttl_advisor.settings import AdvisorSettings

    began = time.monotonic()
    # Settings first: a bad one is reported before any work.
    settings = AdvisorSettings() if margin_days is None else AdvisorSettings(ttl_margin_days=margin_days)
    graph_name = GraphSettings().graph_name
    store = open_store()
    if not has_tables(store):
        # A mistyped WATERSHED_GRAPH_NAME opens an empty graph: "0 columns" would read as advice.
        fail(f"graph {graph_name!r} has no tables: no such graph, or nothing harvested into it yet")
    # Batch by batch of tables (ttl_batch_tables): only the counts, the top so far and a few
    # problems outlive a batch. The top of (top so far + this batch) is the top of all batches.
    totals = AdviceCounts()
    chosen = []
    problems: list[str] = []
    for batch in advise_in_batches(store, settings, table=table.lower() if table else None):
        if table is not None and batch.catalog.get(table.lower()) is None:
            fail(f"{table}: no such table in the graph")
        totals.add(batch.recommendations)
        chosen = top_by_savings([*chosen, *batch.recommendations], top, min_savings)
        problems += batch.problems[: 5 - len(problems)]
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
            evidence or "(no downstream use)",
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
) -> None:
    """Queue the nightly TTL advice on the `ttl` queue: a worker stores every column's recommendation in the graph.

    Exit 1 when the broker cannot be reached, the run fails on the worker, or it is not done within --wait.
    """
    import redis
    from celery.exceptions import TimeoutError as CeleryTimeout
    from kombu.exceptions import OperationalError
    from kombu.utils.url import maybe_sanitize_url

    from watershed.api.service.celery_app import TTL_QUEUE, app_for, workers_serving
    from watershed.propagation.settings import PropagationSettings
    from watershed.ttl_advisor.tasks import TASK_NAME, TtlRunSummary, new_run_id

    settings = PropagationSettings()
    broker = maybe_sanitize_url(settings.broker_url())
    celery = app_for(settings)
    run_id = run_id or new_run_id()
    try:
        serving = workers_serving(celery, TTL_QUEUE)
        sent = celery.send_task(TASK_NAME, args=[run_id])
    except (OperationalError, redis.RedisError, OSError) as exc:
        fail(f"cannot reach the Celery broker at {broker} ({exc}); run `watershed services up`")
    if output is Format.table:
        console.print(f"TTL run {run_id} queued on the {TTL_QUEUE!r} queue of {broker} (task {sent.id})")
    if not serving:
        err_console.print(
            styled(("warning:", "yellow"), f" no worker serves the {TTL_QUEUE!r} queue now; "),
            "the run starts when one does (`watershed worker`)",
            sep="",
        )
    if wait <= 0:
        return
    try:
        result = sent.get(timeout=wait, interval=0.2)
    except CeleryTimeout:
        fail(f"TTL run {run_id} did not finish within {wait:g} s; it stays queued (or running)")
    except (OperationalError, redis.RedisError) as exc:
        fail(f"lost the Celery broker at {broker} while waiting for TTL run {run_id} ({exc})")
    except Exception as exc:
        # the worker's exception, rebuilt from the result backend: its message names the input at fault
        fail(f"TTL run {run_id} failed on the worker: {type(exc).__name__}: {exc}")
    summary = TtlRunSummary.model_validate(result)
    if output is Format.json:
        console.print_json(summary.model_dump_json())
        return
    console.print(
        f"TTL run {summary.run_id}: {summary.columns} columns stored, {summary.ttl} with a TTL "
        f"({summary.shorter_than_table} shorter than their table's), {summary.keep} keep, {summary.unused} unused"
    )
