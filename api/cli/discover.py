"""`watershed discover`: sample tables' files for sensitive content and propose tags; `discover
proposals|accept|reject` for stewards, `discover flags` for the derived columns whose content
disagrees with their tags. The use case is api/service/discovery.py."""

from __future__ import annotations

import getpass
from pathlib import Path

import typer
from rich.table import Table

from watershed.api.cli.output import OutputFormat, console, fail, format_option, usage_error, write_model
from watershed.api.cli.policy_option import POLICY_HELP, command_policy

app = typer.Typer(
    help="Find sensitive columns by their content and propose tags for stewards to accept.",
    invoke_without_command=True,
)

COLUMN_HELP = "The column (db.table.column) whose proposal this decides."


def _actor() -> str:
    """Who the audit names for a decision made here: the OS user, as for `watershed tag`."""
    return f"cli:{getpass.getuser()}"


def _tags(tags: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(tags.items()))


@app.callback()
def discover_command(
    ctx: typer.Context,
    tables: list[str] = typer.Option(
        None, "--table", help="A table (db.table) to sample; repeatable (default: every root table)."
    ),
    paths: list[Path] = typer.Option(
        None, "--path", help="A local ORC/Parquet file or directory to sample; shown, not stored."
    ),
    sample_rows: int = typer.Option(None, "--sample-rows", min=1, help="Rows read per table."),
    force: bool = typer.Option(False, "--force", help="Sample tables whose files did not change too."),
    derived: bool = typer.Option(
        None,
        "--derived/--roots-only",
        help="Without --table: sample derived tables too, for leak and over-tag flags "
        "(default: the discovery_derived setting).",
    ),
    master: str = typer.Option(
        None,
        "--master",
        help="Spark master for remote tables (hdfs://, s3://) and tables whose files reach "
        "discovery_spark_min_bytes (default: those are skipped, or read here).",
    ),
    policy_file: Path = typer.Option(None, "--policy", help=POLICY_HELP),
    output: OutputFormat = format_option(),
) -> None:
    """Sample tables (their ORC/Parquet files), run the detectors, store proposals and flags."""
    if ctx.invoked_subcommand is not None:
        if tables or paths or sample_rows or force or derived is not None or master:
            usage_error(
                "--table, --path, --sample-rows, --force, --derived and --master go with "
                "`watershed discover` alone"
            )
        return
    from watershed.api.cli.graph import open_store
    from watershed.api.service.discovery import discover
    from watershed.discovery.detectors import UnknownRegionError
    from watershed.graph.extras import MissingExtraError

    policy = command_policy(policy_file)
    graph = open_store()
    try:
        run = discover(
            graph,
            policy,
            tables=tables or None,
            paths=[str(p) for p in paths or []],
            sample_rows=sample_rows,
            force=force,
            derived=derived,
            master=master,
        )
    except (UnknownRegionError, MissingExtraError) as exc:
        fail(str(exc))
    if output == OutputFormat.json:
        write_model(run)
        return
    table = Table(
        "table", "status", "on", "files", "rows", "values", "proposals", "flags", "protected", "note"
    )
    for item in run.tables:
        note = item.reason or (f"stopped by {item.stopped_by}" if item.stopped_by else "")
        if item.errors:
            note = "; ".join([note, *item.errors] if note else item.errors)
        table.add_row(
            item.table,
            item.status,
            item.sampled_on or "",
            str(item.files),
            str(item.rows),
            str(item.values),
            str(len(item.proposals)),
            str(len(item.flags)),
            ", ".join(item.protected),
            note,
        )
    console.print(table)
    found = [p for item in run.tables for p in item.proposals]
    if found:
        _print_proposals(found)
    flagged = [f for item in run.tables for f in item.flags]
    if flagged:
        _print_flags(flagged)
    console.print(
        f"{run.proposed} proposed, {run.auto_accepted} accepted automatically, {run.flagged} flagged, "
        f"{run.values} values judged in {run.seconds:.1f} s"
    )


def _listed(
    listing, render, output: OutputFormat, *, table: str | None, limit: int, cursor: str | None, **filters
):
    """One page of `listing` (the use case's proposals or flags), printed by `render` or as JSON,
    and the option that reads the next page."""
    from watershed.api.cli.graph import open_store
    from watershed.api.service.pages import CursorError

    try:
        page = listing(
            open_store(), table=table.lower() if table else None, limit=limit, cursor=cursor, **filters
        )
    except CursorError as exc:
        usage_error(str(exc))
    if output == OutputFormat.json:
        write_model(page)
        return
    render(page.items)
    if page.next_cursor:
        console.print(f"more: --cursor {page.next_cursor}")


def _one_of(option: str, value: str | None, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        usage_error(f"{option} {value!r}: expected {', '.join(allowed[:-1])} or {allowed[-1]}")


def _print_proposals(proposals) -> None:
    rows = Table("column", "tags", "confidence", "sampled", "detectors", "examples", "status", "by")
    for p in proposals:
        rows.add_row(
            p.column,
            _tags(p.tags),
            f"{p.confidence:.2f}",
            str(p.sampled),
            " ".join(f"{k}:{v}" for k, v in p.evidence.detectors.items()),
            ", ".join(p.evidence.examples),
            p.status,
            p.by or "",
        )
    console.print(rows)


@app.command("proposals")
def proposals_command(
    status: str = typer.Option(None, "--status", help="open, accepted or rejected (default: all)."),
    table: str = typer.Option(None, "--table", help="Only this table's (db.table)."),
    limit: int = typer.Option(50, "--limit", min=1, max=500, help="At most this many."),
    cursor: str = typer.Option(None, "--cursor", help="The next_cursor of the previous page (JSON)."),
    output: OutputFormat = format_option(),
) -> None:
    """List discovery proposals in column order."""
    from watershed.api.service.discovery import proposals

    _one_of("--status", status, ("open", "accepted", "rejected"))
    _listed(proposals, _print_proposals, output, status=status, table=table, limit=limit, cursor=cursor)


def _print_flags(flags) -> None:
    rows = Table("column", "flag", "tags", "holds", "confidence", "sampled", "path", "why")
    for f in flags:
        path = " → ".join(
            [
                f.root or "?",
                *[f"{s.target}" + (f" [{', '.join(s.functions)}]" if s.functions else "") for s in f.path],
            ]
        )
        rows.add_row(
            f.column,
            f.kind,
            _tags(f.tags),
            " ".join(f"{k}={','.join(v)}" for k, v in sorted(f.held.items())),
            f"{f.confidence:.2f}",
            str(f.sampled),
            path if f.path else "",
            f.reason,
        )
    console.print(rows)


@app.command("flags")
def flags_command(
    kind: str = typer.Option(None, "--kind", help="leak or over_tag (default: both)."),
    table: str = typer.Option(None, "--table", help="Only this table's (db.table)."),
    limit: int = typer.Option(50, "--limit", min=1, max=500, help="At most this many."),
    cursor: str = typer.Option(None, "--cursor", help="The next_cursor of the previous page (JSON)."),
    output: OutputFormat = format_option(),
) -> None:
    """List leak and over-tag flags: derived columns whose sampled content disagrees with their tags."""
    from watershed.api.service.discovery import flags

    _one_of("--kind", kind, ("leak", "over_tag"))
    _listed(flags, _print_flags, output, kind=kind, table=table, limit=limit, cursor=cursor)


def _decide(column: str, accept: bool, policy_file: Path | None) -> None:
    from watershed.api.cli.graph import open_store
    from watershed.api.service import discovery
    from watershed.propagation.graph_store import UnknownNodeError
    from watershed.propagation.policy import UnknownTagError

    column = column.strip().lower()
    policy = command_policy(policy_file)
    graph = open_store()
    try:
        if accept:
            done = discovery.accept(graph, policy, column, actor=_actor(), by=getpass.getuser())
        else:
            done = discovery.reject(graph, policy, column, actor=_actor())
    except (discovery.DiscoveryError, UnknownNodeError, UnknownTagError) as exc:
        fail(str(exc))
    console.print(f"{column}: {done.status} {_tags(done.tags)}; run `watershed propagate`")


@app.command("accept")
def accept_command(
    column: str = typer.Argument(..., help=COLUMN_HELP),
    policy_file: Path = typer.Option(None, "--policy", help=POLICY_HELP),
) -> None:
    """Accept a proposal: its tags become seeds of the column with origin `discovered` (audited)."""
    _decide(column, True, policy_file)


@app.command("reject")
def reject_command(
    column: str = typer.Argument(..., help=COLUMN_HELP),
    policy_file: Path = typer.Option(None, "--policy", help=POLICY_HELP),
) -> None:
    """Reject a proposal: remembered, not proposed again until the column's content changes (audited)."""
    _decide(column, False, policy_file)
