"""`watershed users` and `watershed tokens`: accounts of the steward service, in the graph.

The CLI runs with the graph's own access (whoever can reach the graph owns it), so it needs
no token; its changes are audited with the OS user as the actor (`cli:NAME`).
"""

from __future__ import annotations

import getpass

import typer
from rich.table import Table

from watershed.api.cli.output import (
    OutputFormat,
    console,
    err_console,
    fail,
    format_option,
    parse_assignments,
    write_model,
)

users_app = typer.Typer(help="Users of the steward service: roles and database grants.", no_args_is_help=True)
tokens_app = typer.Typer(help="API tokens (shown once, stored as salted hashes).", no_args_is_help=True)

ROLE_HELP = (
    "producer (posts OpenLineage events, nothing else), viewer (reads), steward (+ tags, runs), "
    "admin (+ users, grants, audit)."
)
DB_HELP = "Limit a steward or admin to this database; repeatable (default: all databases)."


def _actor() -> str:
    return f"cli:{getpass.getuser()}"


def _accounts():
    from watershed.api.cli.graph import open_store
    from watershed.api.service.accounts.store import AccountStore

    store = open_store()
    store.ensure_schema()
    return AccountStore(store)


def _print_token(created) -> None:
    console.print(f"token for {created.user} (id {created.id}); it is shown only now, keep it safe:")
    # Plain print: a token must come out whole on one line, whatever the terminal width.
    typer.echo(created.token)


@users_app.command("add")
def add_command(
    name: str = typer.Argument(..., help="The user's name."),
    role: str = typer.Option(..., "--role", help=ROLE_HELP),
    databases: list[str] = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Add a user and print their first API token (once)."""
    from watershed.api.service.accounts.names import InvalidUserNameError
    from watershed.api.service.accounts.store import AccountError

    accounts = _accounts()
    try:
        user = accounts.add(name, role, databases or None, actor=_actor())
    except (AccountError, InvalidUserNameError) as exc:
        fail(str(exc))
    scope = ", ".join(user.databases) if user.databases else "all databases"
    console.print(f"user {user.name}: {user.role} on {scope}")
    _print_token(accounts.create_token(user.name, _actor()))


@users_app.command("list")
def list_command(
    output: OutputFormat = format_option("Output format: a table, or JSON (a list of User)."),
) -> None:
    """Every user with their role and databases."""
    accounts = _accounts()
    found, after = [], ""
    while batch := accounts.users(after, 500):
        found += batch
        after = batch[-1].name
    if output is OutputFormat.json:
        typer.echo("[" + ",".join(u.model_dump_json() for u in found) + "]")
        return
    table = Table()
    for header in ("user", "role", "databases", "created"):
        table.add_column(header)
    for user in found:
        table.add_row(
            user.name,
            user.role,
            ", ".join(user.databases) if user.databases else "(all)",
            user.created_at or "",
        )
    console.print(table)


@users_app.command("grant")
def grant_command(
    name: str = typer.Argument(..., help="The user's name."),
    role: str = typer.Option(None, "--role", help=ROLE_HELP),
    databases: list[str] = typer.Option(None, "--db", help="Limit to these databases (replaces the list)."),
    all_databases: bool = typer.Option(False, "--all-databases", help="Lift the database limit."),
) -> None:
    """Change a user's role or databases."""
    from watershed.api.service.accounts.names import InvalidUserNameError
    from watershed.api.service.accounts.store import AccountError, UnknownUserError

    if databases and all_databases:
        fail("give --db or --all-databases, not both")
    change = None if all_databases else (databases or ...)
    try:
        user = _accounts().update(name, _actor(), role=role, databases=change)
    except (AccountError, UnknownUserError, InvalidUserNameError) as exc:
        fail(str(exc))
    console.print(
        f"user {user.name}: {user.role} on {', '.join(user.databases) if user.databases else 'all databases'}"
    )


@users_app.command("delete")
def delete_command(name: str = typer.Argument(..., help="The user's name.")) -> None:
    """Delete a user: their tokens and sessions stop working at once."""
    from watershed.api.service.accounts.names import InvalidUserNameError
    from watershed.api.service.accounts.store import UnknownUserError

    try:
        user = _accounts().delete(name, _actor())
    except (UnknownUserError, InvalidUserNameError) as exc:
        fail(str(exc))
    console.print(f"user {user.name} deleted")


@users_app.command("fold-names")
def fold_names_command(
    renames: list[str] = typer.Option(
        None,
        "--rename",
        help="STORED=NEW: the new name of a stored account (a case twin, a name outside the rule).",
    ),
) -> None:
    """Once, after upgrading: give accounts stored before user names were case-insensitive their
    lower-case name (tokens, sessions and data-role memberships follow). Exit 1 when some are left."""
    from watershed.api.service.accounts.names import RULE

    report = _accounts().fold_names(_actor(), parse_assignments(renames or [], "--rename"))
    for old, new in report.renamed.items():
        console.print(f"user {old} is now {new}")
    for why in report.left:
        err_console.print(f"left: {why}")
    if report.left:
        fail(f"{len(report.left)} account(s) left as they were; user names: {RULE}")
    if not report.renamed:
        console.print("every user name is already folded")


@tokens_app.command("create")
def create_token_command(name: str = typer.Argument(..., help="The user the token is for.")) -> None:
    """Create another API token for a user (printed once)."""
    from watershed.api.service.accounts.names import InvalidUserNameError
    from watershed.api.service.accounts.store import UnknownUserError

    try:
        _print_token(_accounts().create_token(name, _actor()))
    except (UnknownUserError, InvalidUserNameError) as exc:
        fail(str(exc))


@tokens_app.command("list")
def list_tokens_command(
    name: str = typer.Argument(..., help="The user."),
    output: OutputFormat = format_option("Output format: a table, or JSON (a list of TokenInfo)."),
) -> None:
    """A user's tokens: ids, created, last used (never the secrets)."""
    from watershed.api.service.accounts.names import InvalidUserNameError
    from watershed.api.service.accounts.store import UnknownUserError

    try:
        found = _accounts().tokens(name, "", 500)
    except (UnknownUserError, InvalidUserNameError) as exc:
        fail(str(exc))
    if output is OutputFormat.json:
        typer.echo("[" + ",".join(t.model_dump_json() for t in found) + "]")
        return
    table = Table()
    for header in ("id", "created", "last used"):
        table.add_column(header)
    for token in found:
        table.add_row(token.id, token.created_at or "", token.last_used or "never")
    console.print(table)


@tokens_app.command("revoke")
def revoke_token_command(
    name: str = typer.Argument(..., help="The user."),
    token_id: str = typer.Argument(..., help="The token's id (see `tokens list`)."),
) -> None:
    """Revoke a token (and the browser sessions opened with it)."""
    from watershed.api.service.accounts.names import InvalidUserNameError
    from watershed.api.service.accounts.store import UnknownTokenError

    try:
        _accounts().revoke_token(name, token_id, _actor())
    except (UnknownTokenError, InvalidUserNameError) as exc:
        fail(str(exc))
    console.print(f"token {token_id} of {name} revoked")


__all__ = ["tokens_app", "users_app", "write_model"]
