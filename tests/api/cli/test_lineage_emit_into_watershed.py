"""`watershed lineage emit --to` a served Watershed: its POST /api/v1/lineage takes every event with a
producer's token from the key file, and each emitted task comes back as a task of the `watershed`
job namespace with the same column edges; without the key, the send fails naming the target."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.support.cli import runner
from watershed.api.cli import app
from watershed.graph import ids

EDGES = "MATCH (s:Column)-[r:FLOWS_TO]->(t:Column) RETURN r.task, s.id, t.id, r.kind, r.functions"


@pytest.fixture
def producer_key(api, tmp_path, monkeypatch):
    from watershed.api.service.accounts.store import AccountStore

    accounts = AccountStore(api.graph)
    if "emitter" not in {u.name for u in accounts.users()}:
        accounts.add("emitter", "producer", None, actor="test")
    key_file = tmp_path / "key"
    key_file.write_text(accounts.create_token("emitter", "test").token)
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(api.settings.falkordb_port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", api.graph.graph_name)
    monkeypatch.delenv("WATERSHED_OPENLINEAGE_API_KEY", raising=False)
    monkeypatch.delenv("WATERSHED_OPENLINEAGE_API_KEY_FILE", raising=False)
    return key_file


def test_a_watershed_takes_the_events_and_rebuilds_the_edges(api, producer_key):
    tasks = sorted(api.graph.task_ids())
    before = Counter(
        (ids.join("watershed", task), s, t, kind, tuple(functions or ()))
        for task, s, t, kind, functions in api.graph.read(EDGES)
    )
    result = runner.invoke(
        app, ["lineage", "emit", "--to", api.url, "--api-key-file", str(producer_key), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sent"] == len(tasks) > 0
    after = Counter(
        (task, s, t, kind, tuple(functions or ()))
        for task, s, t, kind, functions in api.graph.read(EDGES)
        if task.startswith("watershed.")
    )
    assert after == before


def test_without_the_key_the_send_fails_naming_the_target(api, producer_key):
    result = runner.invoke(app, ["lineage", "emit", "--to", api.url])
    assert result.exit_code == 1
    assert f"sending to {api.url} failed after 0 of" in result.stderr and "HTTP 401" in result.stderr
