"""`watershed tag why` of a node a block keeps a tag from says where the tag is blocked, by whom
and when (it said only "has no pii tag"), for the family's type key too."""

from __future__ import annotations

from tests.support.cli import invoke
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy


def _blocked_at(graph_store, node: str, key: str) -> str:
    own = GraphTagStore(graph_store, default_policy()).own_tags(node)
    return next(e["at"] for e in own if e["type"] == "BLOCKS" and e["key"] == key)


def test_why_names_the_block_upstream_its_steward_and_time(cli_env):
    assert invoke("tag", "block", "dwd.users.tax_id", "pii", "--by", "alice").exit_code == 0
    assert invoke("propagate", "--local").exit_code == 0
    at = _blocked_at(cli_env, "dwd.users.tax_id", "pii")

    downstream = invoke("tag", "why", "dws.stats.any_id", "pii")
    assert downstream.exit_code == 1
    text = " ".join(downstream.output.split())
    assert "dws.stats.any_id has no pii tag" in text
    assert f"pii is blocked at dwd.users.tax_id (1 hop(s) upstream) by alice at {at}" in text

    here = invoke("tag", "why", "dwd.users.tax_id", "pii_type")  # stopped by the pii family's block
    assert here.exit_code == 1
    assert f"pii is blocked here by alice at {at}" in " ".join(here.output.split())


def test_why_without_a_block_says_only_that_the_tag_is_missing(cli_env):
    assert invoke("propagate", "--local").exit_code == 0
    why = invoke("tag", "why", "dws.weak.uid", "pii")
    assert why.exit_code == 1
    assert "dws.weak.uid has no pii tag" in why.output and "blocked" not in why.output
