"""`watershed demo`, the README's main command, on free ports: it ends with the services (web UI, API, worker) up."""

from __future__ import annotations

import re

import httpx
import pytest
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
        # the generator's broken task is listed in words, without sqlglot's internals
        assert re.search(r"^  Task \w+, statement 1, line \d+(, column \d+)?: \S", result.output, re.M)
        assert "<class" not in result.output and "Required keyword" not in result.output
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


@pytest.mark.services  # starts its own Neo4j, Redis, API and worker through `watershed demo`
def test_demo_on_neo4j_ends_with_the_service_up_on_neo4j(spark, tmp_path, monkeypatch):
    """WATERSHED_BACKEND=neo4j: the demo starts a local Neo4j, harvests into it and the API serves
    from it (the demo used to open FalkorDB whatever the setting)."""
    monkeypatch.setenv("WATERSHED_BACKEND", "neo4j")
    monkeypatch.setenv("WATERSHED_NEO4J_URI", f"bolt://127.0.0.1:{free_port()}")
    monkeypatch.setenv("WATERSHED_NEO4J_PAGECACHE", "64m")
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path / "var"))
    for name in ("FALKORDB", "REDIS", "KMS"):
        monkeypatch.setenv(f"WATERSHED_{name}_PORT", str(free_port()))
    api_port = free_port()
    monkeypatch.setenv("WATERSHED_API_PORT", str(api_port))
    for name in ("WATERSHED_CELERY_BROKER", "WATERSHED_NEO4J_PASSWORD", "WATERSHED_NEO4J_PASSWORD_FILE"):
        monkeypatch.delenv(name, raising=False)
    runner = CliRunner()
    try:
        result = runner.invoke(app, ["demo", "--tasks", "40"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert "services: neo4j on port" in result.output
        assert "(upstream)" in result.output and "(downstream)" in result.output
        token = next(line for line in result.output.splitlines() if line.startswith("wst_"))
        auth = {"Authorization": f"Bearer {token}"}
        api = f"http://127.0.0.1:{api_port}/api/v1"
        assert httpx.get(api + "/me", headers=auth).json() == {
            "name": "demo-admin",
            "role": "admin",
            "databases": None,
        }
        assert httpx.get(api + "/propagation/runs", headers=auth).json()["items"][0]["status"] == "done"
        # what the API serves is the Neo4j graph the demo filled
        from watershed.graph.backends import open_answering
        from watershed.graph.neo4j_store import Neo4jStore
        from watershed.graph.settings import GraphSettings

        store = open_answering(GraphSettings())
        try:
            assert isinstance(store, Neo4jStore)
            assert store.stats().tasks == 40
        finally:
            store.close()
    finally:
        runner.invoke(app, ["services", "down"])
