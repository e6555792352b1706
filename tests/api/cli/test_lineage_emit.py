"""`watershed lineage emit`: to a file, the console or a consumer's URL (the key from a file), one
target at a time, errors naming the target."""

from __future__ import annotations

import json

import pytest

from bench.propagation_bench import load_generated
from tests.support.cli import runner
from tests.support.openlineage_emission import KEY, receiving
from watershed.api.cli import app
from watershed.ingest.generator import generate_warehouse
from watershed.ingest.openlineage.events import parse_event


@pytest.fixture
def receiver():
    with receiving() as state:
        yield state


@pytest.fixture
def graph(graph_store, falkordb_server, tmp_path, monkeypatch):
    generate_warehouse(tmp_path / "w", tasks=6, seed=4)
    load_generated(graph_store, tmp_path / "w")
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(falkordb_server.port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    monkeypatch.delenv("WATERSHED_OPENLINEAGE_EMIT_URL", raising=False)
    return graph_store


def emit(*args: str):
    return runner.invoke(app, ["lineage", "emit", *args], catch_exceptions=False)


def test_to_a_file_and_to_the_console(graph, tmp_path):
    out = tmp_path / "events.jsonl"
    result = emit("--file", str(out))
    assert result.exit_code == 0, result.output
    assert f"sent 6 events (6 tasks) to {out}" in result.output
    lines = out.read_text().splitlines()
    assert sorted(parse_event(json.loads(line)).job.name for line in lines) == sorted(graph.task_ids())

    result = emit("--console", "--task", graph.task_ids()[0])
    assert result.exit_code == 0, result.output
    (event,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert event["job"]["name"] == graph.task_ids()[0]
    assert "sent 1 events (1 tasks) to the console" in result.stderr


def test_to_a_url_with_the_key_from_a_file(graph, receiver, tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text(KEY)
    result = emit("--to", receiver.url, "--api-key-file", str(key_file), "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sent"] == 6
    assert {auth for _, auth, _ in receiver.posts} == {f"Bearer {KEY}"}
    assert KEY not in result.output


def test_the_setting_s_url_is_the_default_target(graph, receiver, monkeypatch):
    assert emit().exit_code == 2
    monkeypatch.setenv("WATERSHED_OPENLINEAGE_EMIT_URL", receiver.url)
    assert emit().exit_code == 0 and len(receiver.posts) == 6


def test_usage_and_target_errors(graph, receiver, tmp_path):
    result = emit("--to", receiver.url, "--console")
    assert result.exit_code == 2 and "--to and --console: give one target" in result.stderr
    result = emit("--to", "ftp:/x")
    assert result.exit_code == 1 and "'ftp:/x' is not an http(s) URL" in result.stderr
    result = emit("--to", receiver.url, "--task", "no_such_task")
    assert result.exit_code == 1 and "no task no_such_task in the graph" in result.stderr
    receiver.refuse_from = 2
    result = emit("--to", receiver.url)
    assert result.exit_code == 1
    assert f"sending to {receiver.url} failed after 2 of 6 events" in result.stderr
