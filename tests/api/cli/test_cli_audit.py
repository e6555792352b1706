"""The CLI's changes are audited too: `watershed tag` and `watershed users|tokens` write entries with the OS user as actor."""

from __future__ import annotations

import getpass

import pytest
from typer.testing import CliRunner

from tests.api.conftest import load_sample_warehouse
from watershed.api.cli import app
from watershed.api.service.audit import entries


@pytest.fixture
def cli_graph(graph_store, monkeypatch):
    port = graph_store.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    load_sample_warehouse(graph_store)
    return graph_store


def test_tag_commands_write_audit_entries(cli_graph):
    runner = CliRunner()
    node = "ods.user_profile.city"
    for args in (
        ["tag", "set", node, "pii=L2"],
        ["tag", "set", node, "pii=L3"],
        ["tag", "unset", node, "pii"],
        ["tag", "block", node, "app"],
        ["tag", "unblock", node, "app"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["tag", "unblock", node, "app"]).exit_code == 1  # no change, no entry
    found = entries(cli_graph, limit=50)
    assert [e.action for e in found] == ["tag.unblock", "tag.block", "tag.unset", "tag.set", "tag.set"]
    assert {e.actor for e in found} == {f"cli:{getpass.getuser()}"}
    assert {e.target for e in found} == {f"{node}:pii", f"{node}:app"}
    second_set = found[3]
    assert [v["value"] for v in second_set.before] == ["L2"] and [v["value"] for v in second_set.after] == [
        "L3"
    ]


def test_users_and_tokens_commands(cli_graph):
    runner = CliRunner()
    added = runner.invoke(app, ["users", "add", "fran", "--role", "steward", "--db", "ods", "--db", "dwd"])
    assert added.exit_code == 0, added.output
    token = [line for line in added.output.splitlines() if line.startswith("wst_")]
    assert len(token) == 1
    listed = runner.invoke(app, ["users", "list", "--format", "json"])
    assert '"databases":["dwd","ods"]' in listed.output and token[0] not in listed.output
    assert runner.invoke(app, ["users", "add", "gil", "--role", "root"]).exit_code == 1
    granted = runner.invoke(app, ["users", "grant", "fran", "--all-databases", "--role", "admin"])
    assert "admin on all databases" in granted.output
    second = runner.invoke(app, ["tokens", "create", "fran"])
    token_ids = runner.invoke(app, ["tokens", "list", "fran", "--format", "json"]).output
    assert token_ids.count('"id"') == 2 and token[0].split("_", 2)[2] not in token_ids
    token_id = second.output.split("(id ")[1].split(")")[0]
    assert runner.invoke(app, ["tokens", "revoke", "fran", token_id]).exit_code == 0
    assert runner.invoke(app, ["tokens", "revoke", "fran", token_id]).exit_code == 1
    assert runner.invoke(app, ["users", "delete", "fran"]).exit_code == 0
    actions = [e.action for e in entries(cli_graph, limit=50)]
    assert actions == [
        "user.delete",
        "token.revoke",
        "token.create",
        "user.grant",
        "token.create",
        "user.add",
    ]
