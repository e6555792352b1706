"""`watershed services`: start, stop and inspect the embedded FalkorDB and Redis."""

from __future__ import annotations

import typer
from rich.table import Table

from api.cli.output import console, fail
from graph.server import ServerError
from graph.services import down, status, up
from graph.settings import GraphSettings

app = typer.Typer(
    help="Start, stop and inspect the embedded services (FalkorDB graph, Redis for Celery).",
    no_args_is_help=True,
)


def _print(statuses) -> None:
    table = Table(title_justify="left")
    for header in ("service", "port", "running", "answering"):
        table.add_column(header)
    for item in statuses:
        table.add_row(
            item.name, str(item.port), "yes" if item.running else "no", "yes" if item.answering else "no"
        )
    console.print(table)


@app.command("up")
def up_command() -> None:
    """Start FalkorDB and Redis on loopback (ports and data directory from settings); harmless when running."""
    settings = GraphSettings()
    try:
        statuses = up(settings)
    except ServerError as exc:
        fail(str(exc))
    console.print(f"data directory: {settings.data_dir.resolve()}")
    _print(statuses)


@app.command("down")
def down_command() -> None:
    """Stop the services that `up` started from this data directory."""
    stopped = down(GraphSettings())
    console.print(f"stopped: {', '.join(stopped) if stopped else 'nothing was running'}")


@app.command("status")
def status_command() -> None:
    """Show whether each service runs and answers."""
    _print(status(GraphSettings()))
