"""`watershed webhooks`: add (secret generated and printed once, or read from a file), list, deliver,
deliveries, dead letters and retry, against a real local receiver that fails on purpose."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tests.support.webhook_receiver import start_receiver
from watershed.api.cli import app
from watershed.api.service.audit import entries
from watershed.api.service.notifications import events

runner = CliRunner()


@pytest.fixture
def cli_graph(graph_store, monkeypatch):
    port = graph_store.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    monkeypatch.setenv("WATERSHED_WEBHOOK_MAX_ATTEMPTS", "1")
    return graph_store


@pytest.fixture(scope="module")
def receiver():
    found, server = start_receiver()
    yield found
    server.shutdown()


def _invoke(*args: str):
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_add_prints_a_generated_secret_once_and_deliver_sends_signed_posts(cli_graph, receiver):
    out = _invoke("webhooks", "add", f"{receiver.url}/ok", "--kind", "tag.changed")
    sub, secret = out.split()[1].rstrip(":"), out.strip().splitlines()[-1]
    receiver.secrets["/ok"] = secret
    listed = json.loads(_invoke("webhooks", "list", "--format", "json"))
    assert [(s["id"], s["url"], s["kinds"]) for s in listed] == [(sub, f"{receiver.url}/ok", ["tag.changed"])]
    assert secret not in json.dumps(listed)

    cli_graph.write_all([events.statement("tag.changed", {"node": "ods.t.c"})])
    assert "1 delivered, 0 to retry, 0 dead" in _invoke("webhooks", "deliver")
    (post,) = receiver.at("/ok")
    assert post.signed
    history = json.loads(_invoke("webhooks", "deliveries", sub, "--format", "json"))
    assert [(h["status_code"], h["outcome"]) for h in history] == [(200, "delivered")]
    assert next(e.actor for e in entries(cli_graph, action="webhook.add")).startswith("cli:")
    _invoke("webhooks", "remove", sub)
    assert json.loads(_invoke("webhooks", "list", "--format", "json")) == []


def test_a_secret_from_a_file_a_dead_letter_and_its_retry(cli_graph, receiver, tmp_path):
    secret_file = tmp_path / "secret"
    secret_file.write_text("a-secret-of-the-receiver\n")
    out = _invoke(
        "webhooks",
        "add",
        f"{receiver.url}/down",
        "--kind",
        "nightly.failed",
        "--secret-file",
        str(secret_file),
    )
    assert "a-secret-of-the-receiver" not in out
    receiver.secrets["/down"] = "a-secret-of-the-receiver"
    cli_graph.write_all([events.statement("nightly.failed", {"date": "2026-01-01"})])
    assert "0 delivered, 0 to retry, 1 dead" in _invoke("webhooks", "deliver")
    assert receiver.at("/down")[-1].signed
    (dead,) = json.loads(_invoke("webhooks", "dead-letters", "--format", "json"))
    assert dead["last_error"] == "HTTP 500 Internal Server Error"
    assert "is due again" in _invoke("webhooks", "retry", dead["id"])
    assert json.loads(_invoke("webhooks", "dead-letters", "--format", "json")) == []


def test_a_bad_url_or_unknown_ids_fail_naming_them(cli_graph):
    result = runner.invoke(app, ["webhooks", "add", "file:///etc/passwd", "--kind", "tag.changed"])
    assert result.exit_code == 1 and "only http and https" in result.output
    result = runner.invoke(app, ["webhooks", "remove", "wh_0000000000000000"])
    assert result.exit_code == 1 and "no webhook subscription 'wh_0000000000000000'" in result.output
    result = runner.invoke(app, ["webhooks", "retry", "nothing"])
    assert result.exit_code == 1 and "no dead letter 'nothing'" in result.output
    # no option takes a secret on the command line
    assert (
        runner.invoke(
            app, ["webhooks", "add", "http://x/", "--kind", "tag.changed", "--secret", "s" * 20]
        ).exit_code
        == 2
    )


def test_a_paused_subscription_gets_no_new_events_and_its_pending_ones_wait(cli_graph, receiver):
    out = _invoke("webhooks", "add", f"{receiver.url}/ok", "--kind", "harvest.errors")
    sub = out.split()[1].rstrip(":")
    receiver.secrets["/ok"] = out.strip().splitlines()[-1]
    before = len(receiver.at("/ok"))
    cli_graph.write_all([events.statement("harvest.errors", {"run": "r1"})])
    assert f"webhook {sub} paused" in _invoke("webhooks", "pause", sub)
    cli_graph.write_all([events.statement("harvest.errors", {"run": "r2"})])
    assert "0 delivered, 0 to retry, 0 dead" in _invoke("webhooks", "deliver")
    _invoke("webhooks", "resume", sub)
    assert "1 delivered, 0 to retry, 0 dead" in _invoke("webhooks", "deliver")
    assert [json.loads(p.body)["data"] for p in receiver.at("/ok")[before:]] == [{"run": "r1"}]
