"""POST /api/v1/lineage through openlineage-python's own HttpTransport (api_key auth) against the
served API: a producer's token is taken, no token is a 401, a token without the right a 403, and a
producer's token does nothing but post lineage."""

from __future__ import annotations

import gzip
import json

import httpx
import pytest
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import column_lineage_dataset
from openlineage.client.transport.http import ApiKeyTokenProvider, HttpCompression, HttpConfig, HttpTransport
from openlineage.client.uuid import generate_new_uuid

from tests.ingest.openlineage.samples import USER_DAILY_SQL, facet_event

HIVE = "hive://metastore:9083"
TASK = "spark_app.client_job"


@pytest.fixture(scope="module")
def producer(api):
    from watershed.api.service.accounts.store import AccountStore

    accounts = AccountStore(api.graph)
    accounts.add("spark_producer", "producer", None, actor="test")
    api.tokens["producer"] = accounts.create_token("spark_producer", "test").token
    return api.tokens["producer"]


def _client(api, token: str | None, **config) -> OpenLineageClient:
    auth = ApiKeyTokenProvider({"apiKey": token}) if token else None
    kwargs = {"url": api.url, **config}
    if auth is not None:
        kwargs["auth"] = auth
    return OpenLineageClient(transport=HttpTransport(HttpConfig(**kwargs)))


def _event(job: str = "client_job") -> RunEvent:
    masked = column_lineage_dataset.Transformation(type="DIRECT", subtype="TRANSFORMATION", masking=True)
    facet = column_lineage_dataset.ColumnLineageDatasetFacet(
        fields={
            "uid_hash": column_lineage_dataset.Fields(
                inputFields=[
                    column_lineage_dataset.InputField(
                        namespace=HIVE, name="ods.user_log", field="uid", transformations=[masked]
                    )
                ]
            )
        }
    )
    return RunEvent(
        eventType=RunState.COMPLETE,
        eventTime="2024-01-31T02:00:00.000Z",
        run=Run(runId=str(generate_new_uuid())),
        job=Job(namespace="spark_app", name=job),
        producer="https://github.com/OpenLineage/OpenLineage/tree/1.54.0/client/python",
        inputs=[InputDataset(namespace=HIVE, name="ods.user_log")],
        outputs=[OutputDataset(namespace=HIVE, name="dw.ol_client_out", facets={"columnLineage": facet})],
    )


def _edges(api, task: str = TASK):
    return api.graph.read(
        "MATCH (a:Column)-[r:FLOWS_TO]->(b:Column) WHERE r.task = $task RETURN a.id, b.id, r.functions",
        {"task": task},
    )


def test_the_stock_client_with_a_producer_token_is_taken(api, producer):
    _client(api, producer).emit(_event())
    assert _edges(api) == [["ods.user_log.uid", "dw.ol_client_out.uid_hash", ["openlineage.masking"]]]


def test_gzip_bodies_are_taken(api, producer):
    _client(api, producer, compression=HttpCompression.GZIP).emit(_event("gzipped_job"))
    assert _edges(api, "spark_app.gzipped_job")


def test_without_a_token_the_client_gets_401_and_nothing_is_loaded(api, producer):
    with pytest.raises(Exception, match="401"):
        _client(api, None).emit(_event("anonymous_job"))
    assert not _edges(api, "spark_app.anonymous_job")


def test_a_viewer_token_gets_403_naming_the_right(api, producer):
    with pytest.raises(Exception, match="403"):
        _client(api, api.tokens["viewer"]).emit(_event("viewer_job"))
    with api.client("viewer") as client:
        answer = client.post("/lineage", json=facet_event())
    assert (answer.status_code, answer.json()["detail"]) == (403, "steward right needed")


def test_a_steward_may_post_and_the_answer_says_what_was_loaded(api, producer):
    event = facet_event(job="steward_job")
    with api.client("steward") as client:
        first = client.post("/lineage", json=event)
        again = client.post("/lineage", json=event)
    assert (first.status_code, first.json()["loaded"]) == (201, ["spark_app.steward_job"])
    assert (again.status_code, again.json()["superseded"]) == (200, ["spark_app.steward_job"])


def test_a_bad_event_is_a_400_naming_the_field(api, producer):
    bad = facet_event(job="bad_job")
    bad["outputs"][0]["facets"]["columnLineage"]["fields"]["app"]["inputFields"][0].pop("field")
    with api.client("producer") as client:
        answer = client.post("/lineage", json=[facet_event(job="good_job"), bad])
    assert answer.status_code == 400
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["detail"].startswith(
        "[1].outputs[0].facets.columnLineage.fields.app.inputFields[0].field:"
    )
    assert not _edges(api, "spark_app.good_job")


@pytest.fixture
def small_limit_api(api, monkeypatch):
    """A second app on the same graph whose intake takes bodies of at most 2000 bytes."""
    from tests.support.api_service import ThreadServer
    from watershed.api.http.app import create_app
    from watershed.graph.server import free_port

    monkeypatch.setenv("WATERSHED_OPENLINEAGE_MAX_BODY_BYTES", "2000")
    port = free_port()
    server = ThreadServer(create_app(api.settings, api.graph), port)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}/api/v1"
    finally:
        server.stop()


def test_a_body_over_the_limit_is_a_413_naming_it(small_limit_api, producer):
    plain = json.dumps(facet_event(job="big_job")).encode()
    assert len(plain) > 2000 > len(gzip.compress(plain))
    headers = {"Authorization": f"Bearer {producer}", "Content-Type": "application/json"}
    with httpx.Client(base_url=small_limit_api) as client:
        answer = client.post("/lineage", content=plain, headers=headers)
        zipped = client.post(
            "/lineage", content=gzip.compress(plain), headers={**headers, "Content-Encoding": "gzip"}
        )
    assert answer.status_code == 413
    assert answer.json()["detail"] == "request body over 2000 bytes (WATERSHED_OPENLINEAGE_MAX_BODY_BYTES)"
    assert zipped.status_code == 413
    assert "once gunzipped" in zipped.json()["detail"]


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/me"), ("GET", "/search?q=ods"), ("GET", "/tables/ods.user_log"), ("POST", "/authz/points")],
)
def test_a_producer_token_reads_nothing_else(api, producer, method, path):
    with api.client("producer") as client:
        answer = client.request(method, path, json={"sql": "select 1"} if method == "POST" else None)
    assert (answer.status_code, answer.json()["detail"]) == (403, "viewer right needed")


def test_reconcile_is_the_same_through_the_api_and_the_cli(api, producer, monkeypatch):
    from urllib.parse import quote

    from typer.testing import CliRunner

    from watershed.api.cli import app

    task = "spark_app.`app.reconciled`"
    with api.client("producer") as client:
        assert client.post("/lineage", json=facet_event(job="app.reconciled", sql=USER_DAILY_SQL)).status_code == 201
    with api.client("viewer") as client:
        answer = client.get(f"/tasks/{quote(task, safe='')}/reconcile")
        missing = client.get("/tasks/spark_app.nothing/reconcile")
    assert answer.status_code == 200, answer.text
    assert [e["kind"] for e in answer.json()["sql_only"]] == ["weak:group"]
    assert missing.status_code == 404 and "not found" in missing.json()["detail"]
    for name, value in (
        ("WATERSHED_FALKORDB_HOST", api.settings.falkordb_host),
        ("WATERSHED_FALKORDB_PORT", str(api.settings.falkordb_port)),
        ("WATERSHED_GRAPH_NAME", api.settings.graph_name),
        ("WATERSHED_BACKEND", "falkordb"),
    ):
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(
        app, ["lineage", "reconcile", "--job", task, "--format", "json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["tasks"] == [answer.json()]
