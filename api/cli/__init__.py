"""The `watershed` command line.

Each command group lives in its own module here and is registered below;
the modules only parse arguments and print, the work is done by the
packages they call.
"""

from __future__ import annotations

import typer

from watershed.api.cli import (
    authz,
    coverage,
    ddl,
    demo,
    discover,
    graph,
    harvest,
    impact,
    kms,
    lineage,
    lineage_emit,
    lineage_reconcile,
    lineage_sources,
    metadata,
    nightly,
    orc,
    propagate,
    protect,
    serve,
    services,
    tag,
    ttl,
    users,
    webhooks,
)

app = typer.Typer(
    name="watershed",
    help="Watershed: column-level lineage and SQL-semantic tag propagation for data warehouses.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: the distribution's name on the package index (`watershed` there is another project)
DISTRIBUTION = "watershed-lineage"


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"watershed {version(DISTRIBUTION)}")
        raise typer.Exit()


@app.callback()
def _options(
    show_version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the installed version and exit.",
    ),
) -> None:
    """Watershed: column-level lineage and SQL-semantic tag propagation for data warehouses."""


app.add_typer(lineage.app, name="lineage")
lineage.app.command("emit")(lineage_emit.emit_command)
lineage.app.command("sources")(lineage_sources.sources_command)
lineage.app.command("reconcile")(lineage_reconcile.reconcile_command)
app.command("demo")(demo.demo_command)
app.add_typer(services.app, name="services")
app.add_typer(graph.app, name="graph")
app.command("harvest")(harvest.harvest_command)
app.command("generate")(harvest.generate_command)
app.add_typer(ttl.app, name="ttl")
app.add_typer(kms.app, name="kms")
app.command("ddl")(ddl.ddl_command)
app.add_typer(orc.app, name="orc")
app.command("propagate")(propagate.propagate_command)
app.command("worker")(propagate.worker_command)
app.add_typer(tag.app, name="tag")
app.command("serve")(serve.serve_command)
app.add_typer(users.users_app, name="users")
app.add_typer(users.tokens_app, name="tokens")
app.add_typer(protect.app, name="protect")
app.add_typer(authz.app, name="authz")
app.command("nightly")(nightly.nightly_command)
app.add_typer(discover.app, name="discover")
app.command("impact")(impact.impact_command)
app.command("coverage")(coverage.coverage_command)
app.add_typer(webhooks.app, name="webhooks")
app.command("describe")(metadata.describe_command)
app.command("owner")(metadata.owner_command)
# Further command groups register here, one line each.


def main() -> None:
    """Run the CLI; a bad setting or a missing extra from any command is one line naming it, exit 1.

    Settings are read lazily, deep inside whichever command needs them, so this
    is the one place that sees every command's settings errors.
    """
    from pydantic import ValidationError

    from watershed.api.cli.output import FAILURE, err_console, styled
    from watershed.graph.extras import MissingExtraError
    from watershed.graph.settings import SettingsFileError, describe_settings_error

    try:
        app()
    except (SettingsFileError, MissingExtraError) as exc:
        message = str(exc)
    except ValidationError as exc:
        described = describe_settings_error(exc)
        if described is None:
            raise
        message = described
    else:
        return
    err_console.print(styled(("error:", "bold red"), " ", message))
    raise SystemExit(FAILURE)
