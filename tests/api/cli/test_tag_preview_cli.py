"""`watershed tag set|unset|block|unblock --preview`: the table and totals (or the TagPreview JSON) of
what the next run would change, the same answer as the use case's, and nothing changed."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.support.api_service import load_sample_warehouse, make_settings, propagate_locally
from watershed.api.cli import app
from watershed.api.service.audit import entries
from watershed.api.service.tag_preview import TagChange, TagPreview, preview_change
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy

runner = CliRunner()


@pytest.fixture
def propagated(graph_store, falkordb_server, celery_redis, monkeypatch, tmp_path):
    port = graph_store.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    load_sample_warehouse(graph_store)
    propagate_locally(
        graph_store, make_settings(falkordb_server, celery_redis, graph_store.graph_name, tmp_path)
    )
    return GraphTagStore(graph_store, default_policy())


def _state(store: GraphTagStore) -> tuple:
    tags = store.tags_of(store.tagged_nodes())
    own = store.own_tags("ods.user_profile.email")
    return (
        tags.keys(),
        {n: {k: t.values for k, t in f.items()} for n, f in tags.items()},
        own,
        entries(store.graph),
    )


def test_tag_block_preview_prints_the_changes_and_changes_nothing(propagated):
    before = _state(propagated)
    result = runner.invoke(app, ["tag", "block", "ods.user_profile.email", "pii", "--preview"])
    assert result.exit_code == 0, result.output
    assert _state(propagated) == before
    lines = [" ".join(line.split()) for line in result.output.splitlines()]
    at = lines.index("ads.app_user_rank_7d (2 changes)")
    assert lines[at + 1 : at + 3] == ["email pii L3 -> (none)", "email pii_type email -> (none)"]
    text = " ".join(lines)
    expected = preview_change(propagated, TagChange(node="ods.user_profile.email", action="block", key="pii"))
    assert (
        f"{expected.columns} columns in {expected.tables} tables would change ({expected.total} tags" in text
    )
    assert "nothing changed" in text


def test_tag_set_preview_as_json_is_the_use_cases_answer(propagated):
    result = runner.invoke(
        app,
        ["tag", "set", "ods.user_profile.city", "pii=L4", "--preview", "--format", "json", "--limit", "1"],
    )
    assert result.exit_code == 0, result.output
    found = TagPreview.model_validate(json.loads(result.output))
    expected = preview_change(
        propagated, TagChange(node="ods.user_profile.city", action="set", key="pii", values=["L4"]), limit=1
    )
    assert found == expected and found.total >= 2 and found.truncated
    assert not [e for e in propagated.own_tags("ods.user_profile.city") if e["key"] == "pii"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tag", "unblock", "ods.user_profile.email", "pii", "--preview"], "not blocked"),
        (["tag", "unset", "ods.user_profile.email", "pii", "--preview"], "no steward's pii tag"),
        (["tag", "set", "ods.user_profile.email", "pii=L9", "--preview"], "L9"),
    ],
)
def test_a_preview_of_a_change_that_cannot_be_made_says_why(propagated, args, message):
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and message in result.output


def test_a_preview_takes_one_change(propagated):
    result = runner.invoke(app, ["tag", "set", "ods.user_profile.email", "pii=L2", "app=douyin", "--preview"])
    assert result.exit_code == 2 and "one KEY=VALUE" in result.output
