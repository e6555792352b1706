"""`watershed coverage [--refresh]`: the stored coverage snapshot, or a new one computed now
(watershed.api.service.coverage; the nightly `coverage` step computes one every night)."""

from __future__ import annotations

import getpass
from enum import StrEnum
from pathlib import Path

import typer
from rich.table import Table

from watershed.api.cli.output import console, fail, usage_error, write_model
from watershed.api.cli.policy_option import POLICY_HELP, command_policy

#: each count and its short heading: the tables fit 80 columns
COUNTS = {
    "columns": "cols",
    "sensitive": "sens",
    "covered": "rule",
    "protected": "prot",
    "unprotected": "unprot",
    "uncovered": "no rule",
    "proposals": "props",
    "downstream": "below",
}
LEGEND = (
    "sens: sensitive; rule: a protection rule covers it; prot: protected; unprot: not yet protected; "
    "no rule: sensitive, no rule; props: proposals waiting; below: unprotected below a protected column"
)


class CoverageFormat(StrEnum):
    table = "table"
    json = "json"


def coverage_command(
    refresh: bool = typer.Option(
        False, "--refresh", help="Compute a snapshot now (replacing the date's) before showing it."
    ),
    day: str | None = typer.Option(
        None,
        "--date",
        help="With --refresh: the date (YYYY-MM-DD) the snapshot is kept under (default today, UTC).",
    ),
    policy: Path | None = typer.Option(None, "--policy", help=POLICY_HELP),
    top: int = typer.Option(
        20, "--top", min=0, help="How many owners and downstream columns to list (at most 100)."
    ),
    output: CoverageFormat = typer.Option(
        CoverageFormat.table, "--format", "-f", help="table, or json (the API's model).", case_sensitive=False
    ),
) -> None:
    """Sensitive columns found, protected by policy and not yet protected, by database and owner."""
    from watershed.api.cli.graph import open_store
    from watershed.api.service import coverage
    from watershed.api.service.nightly.steps import check_date
    from watershed.graph.errors import WatershedError

    if day is not None and not refresh:
        usage_error("--date is the date a --refresh keeps its snapshot under: give --refresh too")
    try:
        if day is not None:
            check_date(day)
    except WatershedError as exc:
        usage_error(f"--date: {exc}")
    if top > coverage.SUMMARY_DOWNSTREAM:
        usage_error(f"--top {top}: at most {coverage.SUMMARY_DOWNSTREAM}")
    the_policy = command_policy(policy) if refresh else None
    store = open_store()
    try:
        if refresh:
            coverage.refresh(store, the_policy, day, actor=f"cli:{getpass.getuser()}")
        found = coverage.coverage(store, top=top, downstream=top)
    finally:
        store.close()
    if output is CoverageFormat.json:
        write_model(found)
        return
    if found.snapshot is None:
        fail("no coverage snapshot yet: run `watershed coverage --refresh` (the nightly computes one too)")
    _print(found)


def _print(found) -> None:
    snapshot = found.snapshot
    totals = snapshot.totals
    console.print(
        f"coverage of {snapshot.id} (computed {snapshot.at}): {totals.sensitive} sensitive columns of "
        f"{totals.columns}, {totals.protected} protected, {totals.unprotected} not yet protected, "
        f"{totals.uncovered} with no protection rule; {totals.proposals} proposals waiting; "
        f"{totals.downstream} unprotected below protected columns"
    )
    if found.nightly is not None:
        missing = f" (missing: {', '.join(found.nightly.missing)})" if found.nightly.missing else ""
        console.print(f"last nightly: {found.nightly.date} {found.nightly.status}{missing}")
    for title, rows, first in (
        (f"databases ({found.databases_total})", snapshot.databases, "database"),
        (f"owners (top {len(found.owners)} of {found.owners_total})", found.owners, "owner"),
    ):
        view = Table(title=title, title_justify="left", caption=LEGEND if first == "owner" else None)
        view.add_column(first, overflow="fold")
        if first == "owner":
            view.add_column("db")
        for heading in COUNTS.values():
            view.add_column(heading, justify="right")
        for row in rows:
            names = [row.database] if first == "database" else [row.owner or "", row.database]
            view.add_row(*names, *(str(getattr(row, name)) for name in COUNTS))
        console.print(view)
    if snapshot.downstream:
        view = Table(title="unprotected below protected columns", title_justify="left")
        for heading in ("column", "tag", "status", "owner", "from"):
            view.add_column(heading, overflow="fold")
        for item in snapshot.downstream:
            view.add_row(item.column, item.tag, item.status, item.owner, ", ".join(item.roots))
        console.print(view)
