"""Impact analysis (api/service/impact.py) through both faces: `watershed impact` and GET /impact/{id}
give the same answer on the propagated sample warehouse, grouped by owner, bounded, as JSON and CSV;
a database-limited viewer sees only their databases."""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.api.service.accounts.store import AccountStore

runner = CliRunner()
COLUMN, TABLE = "ods.user_profile.user_id", "ods.user_profile"
CSV_HEADER = "owner,id,kind,via,hops,layer,tags,ttl_days,ttl_status,ttl_days_recommended"


@pytest.fixture(scope="module")
def owned(api):
    """The sample warehouse with owners: dwd's tables from the catalog, dws's from the task writing them
    (the sample has neither), and a viewer limited to dwd."""
    api.graph.execute("MATCH (t:Table) WHERE t.db = 'dwd' SET t.owner = 'data-platform'")
    api.graph.execute("MATCH (k:Task {id: '02_dwd_to_dws_stats'}) SET k.owner = 'growth'")
    accounts = AccountStore(api.graph)
    accounts.add("dwd_viewer", "viewer", ["dwd"], actor="test")
    api.tokens["dwd_viewer"] = accounts.create_token("dwd_viewer", "test").token
    return api


@pytest.fixture
def cli(owned, monkeypatch):
    """`watershed` pointed at the API's graph."""
    port = owned.graph.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", owned.graph.graph_name)

    def invoke(*args: str, code: int = 0) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == code, result.output
        return result.stdout

    return invoke


def _http(api, node: str, who: str = "viewer", **params):
    with api.client(who) as client:
        return client.get(f"/impact/{node}", params=params)


@pytest.mark.parametrize("node", [COLUMN, TABLE])
def test_the_cli_and_the_api_give_the_same_impact(owned, cli, node):
    answer = _http(owned, node)
    assert answer.status_code == 200, answer.text
    assert json.loads(cli("impact", node, "--format", "json")) == answer.json()
    as_csv = _http(owned, node, format="csv")
    assert as_csv.headers["content-type"].startswith("text/csv")
    assert cli("impact", node, "--format", "csv") == as_csv.text


def test_items_are_grouped_by_owner_with_layer_tags_and_ttl(owned):
    found = _http(owned, TABLE).json()
    owners = [group["owner"] for group in found["groups"]]
    assert set(owners) == {"data-platform", "growth", None}, owners
    assert owners[-1] is None  # nobody's items last
    for group in found["groups"]:
        assert group["count"] == len(group["items"]) > 0
        assert {item["owner"] for item in group["items"]} == {group["owner"]}
    items = {item["id"]: item for group in found["groups"] for item in group["items"]}
    assert found["total"] == len(items) and not found["truncated"]
    email = items["dwd.user_contact_df.email"]
    assert (email["kind"], email["via"], email["hops"], email["owner_from"]) == (
        "column",
        "flows_to",
        1,
        "catalog",
    )
    assert (email["layer"], email["ttl_days"], email["tags"]["pii"]) == ("dwd", 90, ["L3"])
    stats = items["dws.user_app_stats_1d"]
    assert (stats["kind"], stats["owner"], stats["owner_from"], stats["hops"]) == (
        "table",
        "growth",
        "task",
        2,
    )
    assert TABLE not in items


def test_a_table_reached_only_by_a_weak_edge_says_so(owned):
    items = {item["id"]: item for group in _http(owned, COLUMN).json()["groups"] for item in group["items"]}
    # user_id is the join key of the event table's load: it shapes the rows without flowing there
    assert items["dwd.user_event_di"]["via"] == "influences"
    assert items["dwd.user_contact_df"]["via"] == "flows_to"
    assert not any(item["kind"] == "column" and item["via"] == "influences" for item in items.values())


def test_the_list_is_bounded_nearest_first(owned, cli):
    whole = _http(owned, TABLE).json()
    cut = _http(owned, TABLE, limit=3).json()
    assert (cut["total"], cut["truncated"], cut["limit"]) == (whole["total"], True, 3)
    listed = [item for group in cut["groups"] for item in group["items"]]
    assert len(listed) == 3 and max(item["hops"] for item in listed) == 1
    assert json.loads(cli("impact", TABLE, "--format", "json", "--limit", "3")) == cut
    assert "3 listed (truncated)" in cli("impact", TABLE, "--limit", "3")
    assert _http(owned, TABLE, limit=0).status_code == 422


def test_the_csv_has_a_row_per_listed_node(owned):
    answer = _http(owned, COLUMN, format="csv")
    assert answer.text.splitlines()[0] == CSV_HEADER
    rows = list(csv.DictReader(io.StringIO(answer.text)))
    found = _http(owned, COLUMN).json()
    assert [row["id"] for row in rows] == [i["id"] for g in found["groups"] for i in g["items"]]
    with owned.client("viewer") as client:
        by_accept = client.get(f"/impact/{COLUMN}", headers={"Accept": "text/csv"})
    assert by_accept.text == answer.text
    assert 'filename="impact-ods.user_profile.user_id.csv"' in answer.headers["content-disposition"]


def test_nobody_without_a_token_and_an_unknown_node(owned, cli):
    with owned.client() as anonymous:
        assert anonymous.get(f"/impact/{COLUMN}").status_code == 401
    assert _http(owned, "ods.user_profile.nope").status_code == 404
    assert (
        "column ods.user_profile.nope not found"
        in runner.invoke(app, ["impact", "ods.user_profile.nope"]).output
    )
    cli("impact", "not-an-id", code=2)


def test_a_database_limited_viewer_sees_only_their_databases(owned):
    assert _http(owned, TABLE, "dwd_viewer").status_code == 403
    every = _http(owned, "dwd.user_contact_df.user_id").json()
    limited = _http(owned, "dwd.user_contact_df.user_id", "dwd_viewer").json()
    seen = [i["id"] for g in every["groups"] for i in g["items"]]
    kept = [i["id"] for g in limited["groups"] for i in g["items"]]
    assert any(not node.startswith("dwd.") for node in seen), seen
    assert kept == [node for node in seen if node.startswith("dwd.")]
    assert limited["hidden"] == len(seen) - len(kept) and limited["total"] == len(kept)


@pytest.mark.parametrize("node", [COLUMN, TABLE])
def test_the_walk_stops_at_its_cap_and_says_the_total_is_a_lower_bound(owned, node):
    from watershed.api.service.impact import impact

    kind = "column" if node.count(".") == 2 else "table"
    whole = impact(owned.graph, node, kind)
    assert not whole.total_bounded and whole.total > 3
    capped = impact(owned.graph, node, kind, walk_cap=3)
    assert (capped.total, capped.total_bounded, capped.truncated) == (3, True, True)
    assert sum(group.count for group in capped.groups) == 3
