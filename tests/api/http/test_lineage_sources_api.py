"""GET /api/v1/lineage/sources[/stale] and `watershed lineage sources`: one use case, two faces."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage


def seen(days_ago: float) -> str:
    return (datetime.now(UTC) - timedelta(days=days_ago)).isoformat(timespec="seconds")


@pytest.fixture(scope="module")
def producers(api):
    """Tasks of two OpenLineage namespaces beside the sample warehouse (loaded with no source)."""
    for task_id, source, days in (
        ("ol_spark_old", "openlineage:spark", 10),
        ("ol_spark_older", "openlineage:spark", 20),
        ("ol_spark_new", "openlineage:spark", 1),
        ("ol_airflow", "openlineage:airflow", 2),
    ):
        task = SqlTask(
            task_id=task_id, sql=f"INSERT OVERWRITE TABLE dw.{task_id} SELECT a FROM ods.x", source=source
        )
        api.graph.upsert_tasks([(task, extract_lineage(task))], seen_at=seen(days))
    return api


def cli_json(api, monkeypatch, *args: str) -> dict:
    monkeypatch.setenv("WATERSHED_FALKORDB_HOST", api.settings.falkordb_host)
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(api.settings.falkordb_port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", api.settings.graph_name)
    monkeypatch.setenv("WATERSHED_BACKEND", "falkordb")
    result = CliRunner().invoke(
        app, ["lineage", "sources", *args, "--format", "json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_viewer_lists_the_sources_and_the_cli_prints_the_same_page(producers, monkeypatch):
    api = producers
    with api.client("viewer") as viewer:
        answer = viewer.get("/lineage/sources")
        assert answer.status_code == 200, answer.text
        page = answer.json()
    by_name = {item["name"]: item for item in page["items"]}
    spark = by_name["openlineage:spark"]
    assert (spark["kind"], spark["tasks"], spark["stale"]) == ("openlineage", 3, 2)
    assert spark["last_seen"][:10] == seen(1)[:10]  # the newest of its tasks' seen times
    assert by_name["openlineage:airflow"]["stale"] == 0
    # the sample warehouse was loaded without a source: listed under none, never stale
    assert by_name[None]["kind"] == "none" and by_name[None]["tasks"] > 0 and by_name[None]["stale"] == 0
    assert page["total"] == 3 and page["next_cursor"] is None
    assert cli_json(api, monkeypatch) == page
    table = CliRunner().invoke(app, ["lineage", "sources"], catch_exceptions=False)
    assert table.exit_code == 0, table.output
    spark_row = next(line for line in table.output.splitlines() if "openlineage:spark" in line)
    kind, tasks, last_seen, stale = (cell.strip() for cell in spark_row.split("│")[2:6])
    assert (kind, tasks, stale) == ("openlineage", "3", "2") and last_seen.startswith(spark["last_seen"][:10])
    assert "(none)" in table.output


def test_stale_tasks_are_paged_and_a_harvest_source_is_refused(producers, monkeypatch):
    api = producers
    with api.client("viewer") as viewer:
        first = viewer.get(
            "/lineage/sources/stale", params={"source": "openlineage:spark", "limit": 1}
        ).json()
        assert [t["task_id"] for t in first["items"]] == ["ol_spark_old"] and first["next_cursor"]
        rest = viewer.get(
            "/lineage/sources/stale",
            params={"source": "openlineage:spark", "limit": 1, "cursor": first["next_cursor"]},
        ).json()
        assert [t["task_id"] for t in rest["items"]] == ["ol_spark_older"] and rest["next_cursor"] is None
        # a shorter stale time, over every OpenLineage source
        every = viewer.get("/lineage/sources/stale", params={"stale_days": 1.5}).json()
        assert [t["task_id"] for t in every["items"]] == ["ol_airflow", "ol_spark_old", "ol_spark_older"]
        bad = viewer.get("/lineage/sources/stale", params={"source": "files:/corpus"})
        # the schema says a stale list is an OpenLineage source's
        assert bad.status_code == 422 and "source" in bad.json()["detail"]
        # the column lineage route is still the lineage router's
        assert viewer.get("/lineage/ods.user_profile.city").status_code == 200
    with api.client() as anonymous:
        assert anonymous.get("/lineage/sources").status_code == 401
    assert cli_json(api, monkeypatch, "--stale", "--source", "openlineage:spark", "--limit", "1") == first
    # stale is only ever reported
    assert api.graph.read("MATCH (k:Task) WHERE k.id STARTS WITH 'ol_' RETURN count(k)") == [[4]]
