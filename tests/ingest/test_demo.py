"""`watershed demo`, the README's main command, on free ports: it ends with the services (web UI, API, worker) up."""

from __future__ import annotations

import httpx
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.graph.server import free_port


def test_demo_harvests_a_generated_warehouse_and_prints_trees(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_REDIS_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_KMS_PORT", str(free_port()))
    api_port = free_port()
    monkeypatch.setenv("WATERSHED_API_PORT", str(api_port))
    monkeypatch.delenv("WATERSHED_CELERY_BROKER", raising=False)
    runner = CliRunner()
    try:
        result = runner.invoke(app, ["demo", "--tasks", "40"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert "lineage graph" in result.output
        assert "(upstream)" in result.output and "(downstream)" in result.output
        assert f"web UI: http://127.0.0.1:{api_port}/" in result.output
        tokens = [line for line in result.output.splitlines() if line.startswith("wst_")]
        assert len(tokens) == 1
        api = f"http://127.0.0.1:{api_port}/api/v1"
        me = httpx.get(api + "/me", headers={"Authorization": f"Bearer {tokens[0]}"})
        assert me.json() == {"name": "demo-admin", "role": "admin", "databases": None}
        runs = httpx.get(api + "/propagation/runs", headers={"Authorization": f"Bearer {tokens[0]}"}).json()
        assert runs["items"][0]["status"] == "done"
        # A second run rotates the token: the first one stops working.
        again = runner.invoke(app, ["demo", "--tasks", "40"], catch_exceptions=False)
        assert again.exit_code == 0, again.output
        assert httpx.get(api + "/me", headers={"Authorization": f"Bearer {tokens[0]}"}).status_code == 401
    finally:
        runner.invoke(app, ["services", "down"])
