"""Shared console helpers for the CLI: one place that prints errors and exits."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def parse_assignments(items: list[str], option: str) -> dict[str, str]:
    """`name=value` pairs from a repeatable option; a malformed one is an error naming it."""
    values: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            fail(f"{option} {item!r}: expected NAME=VALUE")
        values[name.strip()] = value
    return values
