"""The `watershed` command in the test process (typer's CliRunner), exceptions raised rather than
turned into an exit code, so a traceback shows where a command broke."""

from __future__ import annotations

from typer.testing import CliRunner

from watershed.api.cli import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)
