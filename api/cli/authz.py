"""`watershed authz`: a query's permission points, decisions and masked rewrites, and the data
roles, groups and grants they are decided on.

The CLI runs with the graph's own access, as an unrestricted admin; its changes and decisions
are audited with the OS user as the actor (`cli:NAME`), as for `watershed users`.
"""

from __future__ import annotations

import getpass
import sys
from pathlib import Path

import typer
from rich.table import Table

from watershed.api.cli.output import (
    OutputFormat,
    console,
    err_console,
    fail,
    format_option,
    usage_error,
    write_model,
)
from watershed.api.cli.policy_option import POLICY_HELP

#: the exit code of `check` and `rewrite` when the query is denied (1 is a failure, 2 a usage error)
DENIED = 3

app = typer.Typer(
    help="Query-time protection: check and rewrite queries against data roles and grants, and manage them.",
    no_args_is_help=True,
)
role_app = typer.Typer(
    help="Data roles: grants go to roles, roles to users and groups.", no_args_is_help=True
)
group_app = typer.Typer(
    help="Groups of users (roles assigned to a group reach its users).", no_args_is_help=True
)
app.add_typer(role_app, name="role")
app.add_typer(group_app, name="group")

FILE_HELP = "The query: a .sql file with one statement, or - for standard input."
USER_HELP = "Whose rights to check (default: the OS user)."
DIALECT_HELP = "The query's SQL dialect (sqlglot's name: spark, hive, trino, ...)."
DEFAULT_DB_HELP = "The database of unqualified table names."


def _me():
    from watershed.api.service.accounts.rights import Me

    return Me(name=f"cli:{getpass.getuser()}", role="admin")


def _service(policy_file: Path | None = None, default_database: str = "default"):
    from watershed.api.cli.graph import open_store
    from watershed.api.cli.policy_option import command_policy
    from watershed.api.service.authz import AuthzService

    store = open_store()
    store.ensure_schema()
    return AuthzService(store, command_policy(policy_file), default_database=default_database)


def _read(file: str) -> str:
    if file == "-":
        return sys.stdin.read()
    path = Path(file)
    try:
        return path.read_text()
    except OSError as exc:
        fail(f"{file}: cannot read it ({exc.strerror or exc})")


def _print_points(points) -> None:
    console.print(f"{points.kind} statement, query hash {points.query_hash[:16]}")
    console.print(f"tables: {', '.join(points.tables) or '(none)'}")
    if points.writes:
        console.print(f"writes: {', '.join(points.writes)}")
    if points.unknown_tables:
        console.print(f"unknown tables: {', '.join(points.unknown_tables)}")
    for problem in points.problems:
        console.print(f"problem: {problem}")
    columns = Table(title="output columns")
    for header in ("#", "name", "base columns"):
        columns.add_column(header)
    for column in points.columns:
        sources = "; ".join(
            f"{s.column} ({s.kind}{': ' + ', '.join(s.functions) if s.functions else ''})"
            for s in column.sources
        )
        columns.add_row(str(column.position), column.name, sources or "(none)")
    console.print(columns)
    if points.join_columns:
        console.print(f"join columns: {', '.join(points.join_columns)}")
    cells = Table(title="cells")
    for header in ("table", "columns", "rows"):
        cells.add_column(header)
    for cell in points.cells:
        cells.add_row(
            cell.table,
            ", ".join(c.rsplit(".", 1)[-1] for c in cell.columns) or "(rows only)",
            " AND ".join(c.text for c in cell.conditions) or "(all rows)",
        )
    console.print(cells)


def _print_decision(decision) -> None:
    if decision.allowed:
        console.print(f"allowed: {decision.user} may run this query")
        return
    if decision.error:
        console.print(f"denied: {decision.error}")
        return
    console.print(f"denied: {decision.user} lacks {len(decision.missing) + decision.more_missing} cell(s)")
    for missing in decision.missing:
        suggestion = missing.suggestion
        what = f"{suggestion.action} on {suggestion.table}"
        if suggestion.columns:
            what += f" ({', '.join(suggestion.columns)})"
        if suggestion.condition:
            what += f" where {suggestion.condition}"
        asked = f"; ask {', '.join(suggestion.request_from)}" if suggestion.request_from else ""
        console.print(f"- {missing.reason}")
        console.print(f"  request: {what}{asked}")
    if decision.more_missing:
        console.print(f"... and {decision.more_missing} more")


@app.command("points")
def points_command(
    file: str = typer.Argument(..., help=FILE_HELP),
    dialect: str = typer.Option("spark", "--dialect", help=DIALECT_HELP),
    default_database: str = typer.Option("default", "--default-db", help=DEFAULT_DB_HELP),
    output: OutputFormat = format_option("Output format: tables, or JSON (QueryPoints)."),
) -> None:
    """A query's permission points: tables, output columns traced to base columns, row conditions, cells."""
    from watershed.ingest.points import QueryError

    sql = _read(file)
    try:
        points = _service(default_database=default_database).points(sql, dialect)
    except QueryError as exc:
        fail(str(exc))
    if output is OutputFormat.json:
        write_model(points)
    else:
        _print_points(points)


@app.command("check")
def check_command(
    file: str = typer.Argument(..., help=FILE_HELP),
    user: str = typer.Option(None, "--user", help=USER_HELP),
    dialect: str = typer.Option("spark", "--dialect", help=DIALECT_HELP),
    default_database: str = typer.Option("default", "--default-db", help=DEFAULT_DB_HELP),
    policy_file: Path = typer.Option(None, "--policy", help=POLICY_HELP),
    output: OutputFormat = format_option("Output format: text, or JSON (Decision)."),
) -> None:
    """May the user run the query? Exit 0 allowed, 3 denied, 1 on a failure.

    A denial lists the missing cells and the grant to request for each. Every decision is
    audited (user, query hash, decision, missing cells; never the SQL text).
    """
    from watershed.api.service.accounts.names import InvalidUserNameError

    try:
        decision = _service(policy_file, default_database).check(
            user or getpass.getuser(), _read(file), dialect, caller=_me()
        )
    except InvalidUserNameError as exc:
        usage_error(f"--user: {exc}")
    if output is OutputFormat.json:
        write_model(decision)
    else:
        _print_decision(decision)
    if not decision.allowed:
        raise typer.Exit(DENIED)


@app.command("rewrite")
def rewrite_command(
    file: str = typer.Argument(..., help=FILE_HELP),
    user: str = typer.Option(None, "--user", help=USER_HELP),
    dialect: str = typer.Option("spark", "--dialect", help=DIALECT_HELP),
    default_database: str = typer.Option("default", "--default-db", help=DEFAULT_DB_HELP),
    policy_file: Path = typer.Option(None, "--policy", help=POLICY_HELP),
    output: OutputFormat = format_option("Output format: the SQL and a table of outputs, or JSON (Rewrite)."),
) -> None:
    """The SQL to run for the user, masked after computing. Exit 0, 3 denied, 1 on a failure.

    The SQL goes to standard output, the table of outputs (why each is or is not masked) to
    standard error; denied, nothing is printed to run.
    """
    from watershed.api.service.accounts.names import InvalidUserNameError

    try:
        rewrite = _service(policy_file, default_database).rewrite(
            user or getpass.getuser(), _read(file), dialect, caller=_me()
        )
    except InvalidUserNameError as exc:
        usage_error(f"--user: {exc}")
    if output is OutputFormat.json:
        write_model(rewrite)
    elif rewrite.sql is None:
        _print_decision(rewrite.decision)
    else:
        typer.echo(rewrite.sql)
        table = Table(title="outputs")
        for header in ("#", "name", "masked", "why"):
            table.add_column(header)
        for out in rewrite.outputs:
            table.add_row(str(out.position), out.name, out.mask if out.masked else "no", out.why)
        err_console.print(table)
    if rewrite.sql is None:
        raise typer.Exit(DENIED)


# ------------------------------------------------------------------ roles and groups


def _changed(call, done: str, unchanged: str) -> None:
    from watershed.api.service.accounts.rights import ForbiddenError
    from watershed.api.service.authz import AuthzError, UnknownGrantError

    try:
        changed = call()
    except (AuthzError, UnknownGrantError, ForbiddenError) as exc:
        fail(str(exc))
    message = done if changed is not False else unchanged
    if message:
        console.print(message)


@role_app.command("add")
def role_add_command(name: str = typer.Argument(..., help="The data role's name.")) -> None:
    """Create a data role (no grants, no members yet)."""
    _changed(
        lambda: _service().grants.add_role(_me(), name), f"data role {name} added", f"data role {name} exists"
    )


@role_app.command("delete")
def role_delete_command(name: str = typer.Argument(..., help="The data role's name.")) -> None:
    """Delete a data role with its grants and assignments."""
    _changed(lambda: _service().grants.delete_role(_me(), name), f"data role {name} deleted", "")


@role_app.command("list")
def role_list_command(
    output: OutputFormat = format_option("Output format: a table, or JSON (a list of DataRole)."),
) -> None:
    """Every data role with its users and groups."""
    roles = _service().grants.roles()
    if output is OutputFormat.json:
        typer.echo("[" + ",".join(r.model_dump_json() for r in roles) + "]")
        return
    table = Table()
    for header in ("role", "users", "groups", "created"):
        table.add_column(header)
    for role in roles:
        table.add_row(
            role["name"], ", ".join(role["users"]), ", ".join(role["groups"]), role["created_at"] or ""
        )
    console.print(table)


def _member(user: str | None, group: str | None) -> tuple[str, str]:
    if (user is None) == (group is None):
        usage_error("give --user or --group (one of them)")
    return ("user", user) if user is not None else ("group", group)


@role_app.command("assign")
def role_assign_command(
    role: str = typer.Argument(..., help="The data role."),
    user: str = typer.Option(None, "--user", help="Assign it to this user."),
    group: str = typer.Option(None, "--group", help="Assign it to this group (every user in it)."),
) -> None:
    """Assign a data role to a user or a group."""
    kind, name = _member(user, group)
    _changed(
        lambda: _service().grants.assign(_me(), role, kind, name),
        f"data role {role} assigned to {kind} {name}",
        f"data role {role} was already assigned to {kind} {name}",
    )


@role_app.command("unassign")
def role_unassign_command(
    role: str = typer.Argument(..., help="The data role."),
    user: str = typer.Option(None, "--user", help="Take it from this user."),
    group: str = typer.Option(None, "--group", help="Take it from this group."),
) -> None:
    """Take a data role from a user or a group."""
    kind, name = _member(user, group)
    _changed(
        lambda: _service().grants.unassign(_me(), role, kind, name),
        f"data role {role} taken from {kind} {name}",
        "",
    )


@group_app.command("add-user")
def group_add_user_command(
    group: str = typer.Argument(..., help="The group."), user: str = typer.Argument(..., help="The user.")
) -> None:
    """Put a user into a group (the group exists while it has users)."""
    _changed(
        lambda: _service().grants.add_to_group(_me(), group, user),
        f"user {user} added to group {group}",
        f"user {user} was already in group {group}",
    )


@group_app.command("remove-user")
def group_remove_user_command(
    group: str = typer.Argument(..., help="The group."), user: str = typer.Argument(..., help="The user.")
) -> None:
    """Take a user out of a group."""
    _changed(
        lambda: _service().grants.remove_from_group(_me(), group, user),
        f"user {user} removed from group {group}",
        "",
    )


@group_app.command("list")
def group_list_command(
    output: OutputFormat = format_option("Output format: a table, or JSON ({group: [users]})."),
) -> None:
    """Every group with its users."""
    import json

    groups = _service().grants.groups()
    if output is OutputFormat.json:
        typer.echo(json.dumps(groups))
        return
    table = Table()
    for header in ("group", "users"):
        table.add_column(header)
    for name, users in groups.items():
        table.add_row(name, ", ".join(users))
    console.print(table)


# ------------------------------------------------------------------ grants


@app.command("grant")
def grant_command(
    role: str = typer.Argument(..., help="The data role that receives the grant."),
    action: str = typer.Option(
        ..., "--action", help="select, insert, unmask or all; comma-separated for several."
    ),
    database: str = typer.Option(
        None, "--database", help="A database grant; with --tag, limits the tag grant to it."
    ),
    table: str = typer.Option(None, "--table", help="A table grant: db.table."),
    columns: str = typer.Option(
        None, "--columns", help="With --table: only these columns (comma-separated)."
    ),
    where: str = typer.Option(
        None, "--where", help="With --table: a row condition, e.g. \"app = 'douyin' AND dt >= '2024-01-01'\"."
    ),
    tag: str = typer.Option(None, "--tag", help="A tag grant: pii<=L2, pii_type=email, app=douyin."),
    policy_file: Path = typer.Option(None, "--policy", help=POLICY_HELP),
) -> None:
    """Grant a data role an action on a database, a table (columns, rows) or tagged data.

    Granting the same thing twice changes nothing and prints the same id.
    """
    from watershed.api.service.authz import AuthzError, parse_actions
    from watershed.graph.authz import Grant

    if table is None and (columns is not None or where is not None):
        usage_error("--columns and --where need --table")
    if sum(x is not None for x in (table, tag)) > 1 or (table is not None and database is not None):
        usage_error("give one scope: --database, --table (with --columns/--where) or --tag (with --database)")
    if table is None and tag is None and database is None:
        usage_error("give a scope: --database, --table or --tag")
    try:
        actions = parse_actions(action)
    except AuthzError as exc:
        usage_error(str(exc))
    request = Grant(
        id="",
        role=role,
        actions=actions,
        database=database,
        table=table,
        columns=[c for c in columns.split(",")] if columns is not None else None,
        condition=where,
        tag=tag,
    )
    service = _service(policy_file)
    found: list = []
    _changed(lambda: found.append(service.grants.grant(_me(), request)), "", "")
    stored, new = found[0]
    console.print(f"{'granted' if new else 'already granted'}: {stored.id}")


@app.command("revoke")
def revoke_command(
    grant_id: str = typer.Argument(..., help="The grant's id (see `watershed authz grants`)."),
) -> None:
    """Revoke a grant."""
    _changed(lambda: _service().grants.revoke(_me(), grant_id), f"grant {grant_id} revoked", "")


@app.command("grants")
def grants_command(
    role: str = typer.Option(None, "--role", help="Only this data role's grants."),
    output: OutputFormat = format_option("Output format: a table, or JSON (a list of Grant)."),
) -> None:
    """Every grant (of one data role)."""
    found = _service().grants.grants(role=role)
    if output is OutputFormat.json:
        typer.echo("[" + ",".join(g.model_dump_json() for g in found) + "]")
        return
    table = Table()
    for header in ("id", "role", "actions", "scope", "created"):
        table.add_column(header)
    for g in found:
        if g.tag is not None:
            scope = f"tag {g.tag}" + (f" in {g.database}" if g.database else "")
        elif g.table is not None:
            scope = g.table + (f" ({', '.join(g.columns)})" if g.columns else "")
            scope += f" where {g.condition}" if g.condition else ""
        else:
            scope = f"database {g.database}"
        table.add_row(
            g.id, g.role, ",".join(g.actions), scope, f"{g.created_at or ''} by {g.created_by or '?'}"
        )
    console.print(table)
