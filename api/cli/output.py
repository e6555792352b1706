"""Shared console helpers for the CLI: one place that prints, reports errors and exits.

Both consoles print text literally: identifiers, SQL and file names are user
data, and a name such as `[red]` or `[/]` must neither vanish nor crash the
output as console markup would. Styling is explicit, through `styled`. Output
is never wrapped, so piped lines stay whole.

Exit codes: 1 for a failure (bad input, an unreachable service, a failed
step), 2 for a usage error (a malformed or conflicting option), as Click does.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import NoReturn

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.text import Text

console = Console(markup=False, highlight=False, soft_wrap=True)
err_console = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)

FAILURE = 1
USAGE = 2


class OutputFormat(StrEnum):
    """The closed choice of every read command's --format: a typo is a usage error (exit 2)."""

    table = "table"
    json = "json"


def format_option(
    help: str = "Output format: a table for people, or JSON (the API's model).",
) -> OutputFormat:
    return typer.Option(OutputFormat.table, "--format", "-f", help=help, case_sensitive=False)


def write_model(model: BaseModel, **dump) -> None:
    """A model as indented JSON on standard output, written as dumped (no re-parse, no wrapping)."""
    sys.stdout.write(model.model_dump_json(indent=2, **dump))
    sys.stdout.write("\n")
    sys.stdout.flush()


def styled(*parts: str | tuple[str, str]) -> Text:
    """One line of plain strings (printed literally) and `(text, style)` pairs (printed styled)."""
    return Text.assemble(*parts)


def fail(message: str, code: int = FAILURE) -> NoReturn:
    err_console.print(styled(("error:", "bold red"), " ", message))
    raise typer.Exit(code)


def usage_error(message: str) -> NoReturn:
    fail(message, USAGE)


def parse_assignments(items: list[str], option: str) -> dict[str, str]:
    """`name=value` pairs from a repeatable option; a malformed one is a usage error naming it."""
    values: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            usage_error(f"{option} {item!r}: expected NAME=VALUE")
        values[name.strip()] = value
    return values
