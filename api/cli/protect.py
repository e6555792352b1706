"""`watershed protect`: from the tag policy's protection section to the DDL and the ORC files to
encrypt. `plan` reads the graph (tables, columns, their tags, what was recorded as protected) and
the tails of each table's ORC files, and prints what an apply would change; `apply` and `rewrap`
(api/cli/protect_apply.py) carry it out."""

from __future__ import annotations

from pathlib import Path

import typer

from watershed.api.cli.output import OutputFormat, console, fail, format_option, styled, write_model
from watershed.api.cli.policy_option import POLICY_HELP, command_policy
from watershed.api.cli.protect_apply import apply_command, rewrap_command

app = typer.Typer(help="Protect sensitive columns: table DDL and ORC file encryption.", no_args_is_help=True)

KMS_HELP = (
    "Hadoop KMS provider URI (kms://http@HOST:PORT/kms): every key the policy names must exist there, and "
    "it is the provider path the DDL sets (default: the policy's key_provider_path)."
)


def protection_policy(policy_file: Path | None):
    """The protection section of the tag policy (loaded as `watershed propagate` loads it)."""
    policy = command_policy(policy_file)
    if policy.protection is None or not policy.protection.rules:
        fail(
            "the tag policy has no protection rules: add a `protection:` section with rules "
            "(see docs/protection.md), or give --policy"
        )
    return policy.protection


def key_provider(uri: str | None):
    from watershed.orc_crypto.keys.base import KeyProviderError
    from watershed.orc_crypto.keys.kms_client import KmsClient

    if not uri:
        return None
    if not uri.startswith("kms://"):
        fail(f"--kms {uri}: expected a kms://http@HOST:PORT/kms provider URI")
    try:
        return KmsClient(uri)
    except (KeyProviderError, ValueError) as exc:
        fail(f"{uri}: {exc}")


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
    from watershed.graph.errors import WatershedError
    from watershed.orc_crypto.files import write_atomically
    from watershed.orc_crypto.protect.plan import plan_protection

    policy = protection_policy(policy_file)
    uri = kms or (policy.key_provider_path if (policy.key_provider_path or "").startswith("kms://") else None)
    provider = key_provider(uri)
    store = open_store()
    try:
        plan = plan_protection(
            store, policy, tables=table or None, provider=provider, create=create, key_provider_path=kms
        )
    except WatershedError as exc:
        fail(str(exc))
    finally:
        store.close()
    if out is not None:
        try:
            write_atomically(out, plan.model_dump_json(indent=2).encode())
        except (OSError, WatershedError) as exc:
            fail(f"cannot write {out}: {exc}")
    if fmt == OutputFormat.json:
        write_model(plan)
    else:
        _print_plan(plan)


app.command("plan")(plan_command)
app.command("apply")(apply_command)
app.command("rewrap")(rewrap_command)
