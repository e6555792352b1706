"""`--format json` of the read commands on a real graph: each output parses into its model."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.api.service.pages import Page
from watershed.api.service.search import SearchHit
from watershed.graph.model import GraphStats, LineageView
from watershed.propagation.run_state import RunRecord
from watershed.propagation.views import NodeTags, WhyPaths

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def json_of(model, *args: str):
    result = invoke(*args, "--format", "json")
    assert result.exit_code == 0, result.output
    return model.model_validate_json(result.stdout)


def test_graph_commands_speak_json(cli_env):
    stats = json_of(GraphStats, "graph", "stats")
    assert stats == cli_env.stats()
    assert stats.tables > 0 and stats.column_edges > 0

    lineage = json_of(LineageView, "graph", "lineage", "dws.all_apps.uid")
    assert lineage.root == "dws.all_apps.uid" and lineage.direction == "upstream"
    assert {"dwd.douyin.uid", "dwd.xigua.uid", "ods.users.uid"} <= {node.id for node in lineage.nodes}
    assert not lineage.truncated

    down = json_of(LineageView, "graph", "lineage", "ods.users", "--downstream", "--table-level")
    assert down.level == "table" and "dws.all_apps" in {node.id for node in down.nodes}

    # the same model and the same bound as the API: --limit cuts and says so
    cut = json_of(LineageView, "graph", "lineage", "dws.all_apps.uid", "--limit", "2")
    assert cut.truncated and len(cut.nodes) == 2

    found = json_of(Page[SearchHit], "graph", "search", "dwd.dou")
    assert ("dwd.douyin", "Table") in {(hit.id, hit.label) for hit in found.items}
    assert ("dwd.douyin.uid", "Column") in {(hit.id, hit.label) for hit in found.items}
    # the API's search: substring stage, filters, pages
    columns = json_of(Page[SearchHit], "graph", "search", "uid", "--kind", "column", "--limit", "1")
    assert len(columns.items) == 1 and "uid" in columns.items[0].id and columns.next_cursor
    following = json_of(
        Page[SearchHit],
        "graph",
        "search",
        "uid",
        "--kind",
        "column",
        "--limit",
        "1",
        "--cursor",
        columns.next_cursor,
    )
    assert following.items and following.items[0].id != columns.items[0].id
    bad = invoke("graph", "search", "x", "--tag", "nosuchkey")
    assert bad.exit_code == 1 and "nosuchkey" in bad.output


def test_tag_commands_and_run_record_speak_json(cli_env):
    assert invoke("tag", "set", "ods.users.uid", "pii=L2", "--by", "alice").exit_code == 0
    assert invoke("propagate", "--local").exit_code == 0

    seed = json_of(NodeTags, "tag", "show", "ods.users.uid")
    assert [(e.key, e.value, e.origin, e.by) for e in seed.set_here] == [("pii", "L2", "manual", "alice")]

    shown = json_of(NodeTags, "tag", "show", "dws.all_apps.uid")
    pii = next(tag for tag in shown.tags if tag.key == "pii")
    assert pii.values == ["L2"] and pii.origin == "propagated" and pii.hops == 2
    assert {source.source for source in pii.provenance} == {"dwd.douyin.uid", "dwd.xigua.uid"}

    why = json_of(WhyPaths, "tag", "why", "dws.all_apps.uid", "pii")
    assert why.paths == 2 and not why.stopped_at_max_paths
    assert {child.node for child in why.tree.sources} == {"dwd.douyin.uid", "dwd.xigua.uid"}
    for child in why.tree.sources:
        assert child.via.rule == "keep" and child.via.task == "t_union"
        [seed_step] = child.sources
        assert seed_step.node == "ods.users.uid" and seed_step.origin == "manual"
        assert seed_step.via.task in ("t_eq", "t_xigua")

    record = json_of(RunRecord, "propagate", "--status")
    assert record.status == "done" and record.mode == "full" and record.layers
    table = invoke("propagate", "--status")
    assert table.exit_code == 0 and f"full run {record.run_id}: done" in table.output


@pytest.mark.parametrize(
    "args",
    [
        ("graph", "stats"),
        ("graph", "lineage", "a.b.c"),
        ("graph", "search", "a"),
        ("tag", "show", "a.b.c"),
        ("tag", "why", "a.b.c", "pii"),
        ("propagate", "--status"),
        ("lineage", "-"),
    ],
)
def test_a_bad_format_is_a_usage_error(args):
    result = runner.invoke(app, [*args, "--format", "yaml"])
    assert result.exit_code == 2
    assert "yaml" in result.output
