"""`watershed lineage emit --file F` replaces F only once the emission finished: a graph that does
not answer, a bad policy or an unknown task leaves the previous F as it was, and nothing beside it."""

from __future__ import annotations

import json

from bench.propagation_bench import load_generated
from tests.support.cli import runner
from watershed.api.cli import app
from watershed.graph.server import free_port
from watershed.ingest.generator import generate_warehouse

PREVIOUS = '{"the": "previous night\'s events"}\n'


def emit(*args: str):
    return runner.invoke(app, ["lineage", "emit", *args], catch_exceptions=False)


def test_an_unreachable_graph_leaves_the_previous_file(tmp_path, monkeypatch):
    out = tmp_path / "events.jsonl"
    out.write_text(PREVIOUS)
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(free_port()))  # nothing listens there
    monkeypatch.setenv("WATERSHED_BACKEND", "falkordb")
    result = emit("--file", str(out))
    assert result.exit_code == 1, result.output
    assert out.read_text() == PREVIOUS
    assert [p.name for p in tmp_path.iterdir()] == ["events.jsonl"]


def test_a_failed_emission_keeps_the_file_and_a_finished_one_replaces_it(
    graph_store, falkordb_server, tmp_path, monkeypatch
):
    generate_warehouse(tmp_path / "w", tasks=4, seed=4)
    load_generated(graph_store, tmp_path / "w")
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(falkordb_server.port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    out = tmp_path / "out" / "events.jsonl"
    out.parent.mkdir()
    out.write_text(PREVIOUS)
    policy = tmp_path / "policy.yaml"
    policy.write_text("sensitivity: [not, a, mapping\n")
    assert emit("--file", str(out), "--policy", str(policy)).exit_code == 1
    assert emit("--file", str(out), "--task", "no_such_task").exit_code == 1
    assert out.read_text() == PREVIOUS and [p.name for p in out.parent.iterdir()] == ["events.jsonl"]

    result = emit("--file", str(out))
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(line)["eventType"] == "COMPLETE" for line in lines)
    assert [p.name for p in out.parent.iterdir()] == ["events.jsonl"]
