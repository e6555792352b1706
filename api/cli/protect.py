"""`watershed protect`: from the tag policy's protection section to the DDL and the ORC files to
encrypt. `plan` reads the graph (tables, columns, their tags, what was recorded as protected) and
the tails of each table's ORC files, and prints what an apply would change; `apply` and `rewrap`
(api/cli/protect_apply.py) carry it out."""

from __future__ import annotations

from pathlib import Path

import typer

from watershed.api.cli.output import OutputFormat, console, fail, format_option, styled, write_model
from watershed.api.cli.policy_option import POLICY_HELP
from watershed.api.cli.protect_apply import apply_command, protection_policy, rewrap_command

app = typer.Typer(help="Protect sensitive columns: table DDL and ORC file encryption.", no_args_is_help=True)

KMS_HELP = (
    "Hadoop KMS provider URI (kms://http@HOST:PORT/kms): every key the policy names must exist there, and "
    "it is the provider path the DDL sets (default: the policy's key_provider_path)."
)


def _print_plan(plan) -> None:
    if not plan.tables:
        console.print("nothing to protect: every table is as the policy asks")
        return
    for table in plan.tables:
        size = sum(f.size for f in table.files)
        console.print(styled((table.table, "bold"), f"  {table.location or '(no location)'}"))
        for change in table.columns:
            want = f"{change.want.key}/{change.want.mask}" if change.want else "-"
            have = f" (now {change.have.key}/{change.have.mask})" if change.have else ""
            console.print(
                styled(
                    "  ",
                    (f"{change.action:<9}", "bold"),
                    f" {change.name}  {change.tag or '-'}  {want}{have}  {change.why}",
                )
            )
        for statement in table.ddl:
            console.print(f"  DDL: {statement}")
        console.print(f"  files to rewrite: {len(table.files)} ({size} bytes)")
        for problem in table.problems:
            console.print(styled("  ", ("problem:", "yellow"), f" {problem}"))
    total = sum(f.size for t in plan.tables for f in t.files)
    console.print(
        f"{len(plan.tables)} tables, {plan.files} files ({total} bytes); policy {plan.policy_digest}"
    )


def plan_command(
    table: list[str] = typer.Option(None, "--table", "-t", help="Only this table (db.t); repeatable."),
    fmt: OutputFormat = format_option(),
    policy_file: Path | None = typer.Option(None, "--policy", help=POLICY_HELP),
    out: Path | None = typer.Option(None, "--out", help="Also write the plan as JSON to this file."),
    kms: str | None = typer.Option(None, "--kms", help=KMS_HELP),
    create: bool = typer.Option(
        False, "--create", help="Give CREATE TABLE statements instead of ALTER TABLE."
    ),
) -> None:
    """What protecting the sensitive columns would change: per table the columns (action, tag, key
    and mask, why), the DDL for future writes, and the ORC files to rewrite."""
    from watershed.api.cli.graph import open_store
    from watershed.api.service.protection_runs import plan
    from watershed.graph.errors import WatershedError
    from watershed.orc_crypto.files import write_atomically

    policy = protection_policy(policy_file)
    store = open_store()
    try:
        planned = plan(store, policy, kms=kms, tables=table or None, create=create)
    except WatershedError as exc:
        fail(str(exc))
    finally:
        store.close()
    if out is not None:
        try:
            write_atomically(out, planned.model_dump_json(indent=2).encode())
        except (OSError, WatershedError) as exc:
            fail(f"cannot write {out}: {exc}")
    if fmt == OutputFormat.json:
        write_model(planned)
    else:
        _print_plan(planned)


app.command("plan")(plan_command)
app.command("apply")(apply_command)
app.command("rewrap")(rewrap_command)
