"""`watershed authz` on a FalkorDB graph holding the sample warehouse: grant management, points,
check (exit 0 allowed, 3 denied) and rewrite, with JSON output and audit entries."""

from __future__ import annotations

import getpass
import json

import pytest
from typer.testing import CliRunner

from tests.api.conftest import load_sample_warehouse
from watershed.api.cli import app
from watershed.api.service.audit import entries
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy
from watershed.propagation.rules import PROPAGATED, TagValue

QUERY = "SELECT user_id, email FROM ods.user_profile WHERE dt = '2024-01-31'"


@pytest.fixture
def cli_graph(graph_store, monkeypatch, tmp_path):
    port = graph_store.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    load_sample_warehouse(graph_store)
    tags = GraphTagStore(graph_store, default_policy())
    tags.raise_fence(1)
    tags.write_tags(
        {"ods.user_profile.email": {"pii": TagValue("pii", frozenset(["L3"]), PROPAGATED)}},
        "run-1",
        1,
        "run-1#0",
    )
    (tmp_path / "q.sql").write_text(QUERY)
    return graph_store, tmp_path / "q.sql"


def run(*args: str, code: int = 0):
    result = CliRunner().invoke(app, ["authz", *args])
    assert result.exit_code == code, result.output
    return result


def test_manage_check_and_rewrite(cli_graph):
    graph, query = cli_graph
    run("role", "add", "analyst")
    run("role", "assign", "analyst", "--group", "team")
    run("group", "add-user", "team", "ann")
    run("role", "assign", "analyst", code=2)  # neither --user nor --group
    run("grant", "analyst", "--action", "select", "--table", "ods.user_profile", "--columns", "user_id")
    run("grant", "analyst", "--action", "drop", "--database", "ods", code=2)
    failed = run("grant", "analyst", "--action", "select", "--tag", "pii<=L9", code=1)
    assert "L9" in failed.output
    denied = run("check", str(query), "--user", "ann", "--format", "json", code=3)
    decision = json.loads(denied.output)
    assert not decision["allowed"] and decision["missing"][0]["columns"] == ["ods.user_profile.email"]
    assert (
        "request: select on ods.user_profile (email) where dt = '2024-01-31'"
        in run("check", str(query), "--user", "ann", code=3).output
    )
    granted = run(
        "grant",
        "analyst",
        "--action",
        "select",
        "--table",
        "ods.user_profile",
        "--where",
        "dt >= '2024-01-01'",
    )
    again = run(
        "grant",
        "analyst",
        "--action",
        "select",
        "--table",
        "ods.user_profile",
        "--where",
        "dt >= '2024-01-01'",
    )
    grant_id = granted.output.split()[-1]
    assert again.output.strip() == f"already granted: {grant_id}"
    assert "allowed" in run("check", str(query), "--user", "ann").output
    rewrite = json.loads(run("rewrite", str(query), "--user", "ann", "--format", "json").output)
    assert [o["masked"] for o in rewrite["outputs"]] == [False, True] and QUERY in rewrite["sql"]
    plain = run("rewrite", str(query), "--user", "ann")
    assert plain.stdout.startswith("SELECT") and "IF(FALSE" in plain.stdout
    listed = json.loads(run("grants", "--role", "analyst", "--format", "json").output)
    assert {g["id"] for g in listed} >= {grant_id}
    roles = json.loads(run("role", "list", "--format", "json").output)
    assert roles[0]["groups"] == ["team"]
    points = json.loads(run("points", str(query), "--format", "json").output)
    assert points["tables"] == ["ods.user_profile"] and "cells" in run("points", str(query)).output
    run("revoke", grant_id)
    assert "not found" in run("revoke", grant_id, code=1).output
    run("check", str(query), "--user", "ann", code=3)
    broken = query.parent / "broken.sql"
    broken.write_text("SELECT FROM WHERE (")
    assert "denied" in run("check", str(broken), "--user", "ann", code=3).output
    run("group", "remove-user", "team", "ann")
    run("role", "delete", "analyst")
    assert json.loads(run("grants", "--format", "json").output) == []
    found = entries(graph, action="authz.", limit=50)
    assert {e.actor for e in found} == {f"cli:{getpass.getuser()}"}
    assert all(QUERY not in json.dumps(e.after) for e in found)
    assert sum(e.action == "authz.decision" for e in found) == 7
