"""`watershed demo`, the README's main command, on free ports."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.graph.server import free_port

pytestmark = pytest.mark.spark


def test_demo_harvests_a_generated_warehouse_and_prints_trees(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_REDIS_PORT", str(free_port()))
    runner = CliRunner()
    try:
        result = runner.invoke(app, ["demo", "--tasks", "40"], catch_exceptions=False)
    finally:
        runner.invoke(app, ["services", "down"])
    assert result.exit_code == 0, result.output
    assert "lineage graph" in result.output
    assert "(upstream)" in result.output and "(downstream)" in result.output
