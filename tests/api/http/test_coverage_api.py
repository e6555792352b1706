"""GET /coverage, GET /coverage/columns and POST /coverage/refresh on the propagated sample warehouse,
and `watershed coverage` on the same graph: viewers read, stewards refresh (audited), a
database-limited caller sees only their databases, the CLI's JSON is the API's."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.api.service import audit, coverage

runner = CliRunner()


@pytest.fixture
def cli(api, monkeypatch):
    port = api.graph.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", api.graph.graph_name)

    def invoke(*args: str, code: int = 0) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == code, result.output
        return result.stdout

    return invoke


def test_before_any_snapshot_the_page_says_so(api, cli):
    with api.client("viewer") as client:
        found = client.get("/coverage")
        assert found.status_code == 200, found.text
        assert found.json()["snapshot"] is None and found.json()["trend"] == []
        listed = client.get("/coverage/columns")
        assert listed.status_code == 404 and "no coverage snapshot yet" in listed.json()["detail"]
    result = runner.invoke(app, ["coverage"])
    assert result.exit_code == 1 and "watershed coverage --refresh" in result.output


def test_a_viewer_reads_and_a_steward_refreshes_audited(api):
    with api.client("viewer") as client:
        refused = client.post("/coverage/refresh")
        assert refused.status_code == 403, refused.text
    with api.client("steward") as client:
        refreshed = client.post("/coverage/refresh")
        assert refreshed.status_code == 200, refreshed.text
    snapshot = refreshed.json()["snapshot"]
    assert snapshot["id"] == coverage.today()
    totals = snapshot["totals"]
    # the sample warehouse is tagged but nothing is encrypted yet
    assert totals["sensitive"] > 0 and totals["protected"] == 0
    assert totals["unprotected"] + totals["uncovered"] == totals["sensitive"]
    assert sum(row["columns"] for row in snapshot["databases"]) == totals["columns"]
    [entry] = [e for e in audit.entries(api.graph, limit=500) if e.action == "coverage.refresh"]
    assert (entry.actor, entry.target, entry.after) == ("steward", f"coverage:{snapshot['id']}", totals)
    with api.client("viewer") as client:
        assert client.get("/coverage").json() == refreshed.json()


def test_the_cli_shows_what_the_api_answers(api, cli):
    with api.client("viewer") as client:
        answer = client.get("/coverage").json()
    assert json.loads(cli("coverage", "--format", "json")) == answer
    text = cli("coverage")
    assert f"{answer['snapshot']['totals']['sensitive']} sensitive columns" in text


def test_a_database_limited_caller_sees_its_databases_only(api):
    with api.client("viewer") as client:
        whole = client.get("/coverage").json()
    with api.client("ods_steward") as client:
        limited = client.get("/coverage").json()
        page = client.get("/coverage/columns", params={"list": "unprotected", "limit": 1000}).json()
    assert [row["database"] for row in limited["snapshot"]["databases"]] == ["ods"]
    ods = next(row for row in whole["snapshot"]["databases"] if row["database"] == "ods")
    assert limited["snapshot"]["totals"] == {k: v for k, v in ods.items() if k not in ("database", "owner")}
    assert limited["hidden_databases"] == len(whole["snapshot"]["databases"]) - 1
    assert {owner["database"] for owner in limited["owners"]} == {"ods"}
    assert page["total"] == ods["unprotected"] and {c["database"] for c in page["columns"]} <= {"ods"}
    assert [point["totals"]["columns"] for point in limited["trend"]] == [ods["columns"]]


def test_the_columns_list_pages_and_filters(api):
    with api.client("viewer") as client:
        whole = client.get("/coverage/columns", params={"list": "unprotected", "limit": 1000}).json()
        first = client.get("/coverage/columns", params={"list": "unprotected", "limit": 2}).json()
        second = client.get(
            "/coverage/columns", params={"list": "unprotected", "limit": 2, "offset": 2}
        ).json()
        db = whole["columns"][0]["database"]
        one_db = client.get("/coverage/columns", params={"list": "unprotected", "database": db}).json()
        bad = client.get("/coverage/columns", params={"list": "everything"})
    ids = [c["column"] for c in whole["columns"]]
    assert ids == sorted(ids) and whole["total"] == len(ids) > 2
    assert [c["column"] for c in first["columns"] + second["columns"]] == ids[:4]
    assert one_db["total"] == sum(1 for c in whole["columns"] if c["database"] == db)
    assert bad.status_code == 422


def test_a_refresh_for_a_date_keeps_its_snapshot_under_it_and_the_trend_is_oldest_first(api):
    with api.client("steward") as client:
        bad = client.post("/coverage/refresh", params={"date": "2026-02-30"})
        assert bad.status_code == 422 and "date" in bad.text  # not a calendar day
        earlier = client.post("/coverage/refresh", params={"date": "2026-01-01"})
        assert earlier.status_code == 200, earlier.text
    answer = earlier.json()
    assert answer["snapshot"]["id"] == coverage.today()  # the newest stays the newest
    assert [point["id"] for point in answer["trend"]] == ["2026-01-01", coverage.today()]
