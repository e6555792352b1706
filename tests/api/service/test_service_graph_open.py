"""Opening the graph and checking that it answers is one function (graph/backends.open_answering):
the CLI's commands, `watershed serve`, the harvest job and the nightly chain say the same line when
the configured graph does not answer, naming the backend and where its settings point."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from watershed.graph.server import free_port


@pytest.fixture
def dead_graph(monkeypatch):
    """Settings pointing at a FalkorDB port nothing listens on."""
    port = free_port()
    monkeypatch.setenv("WATERSHED_BACKEND", "falkordb")
    monkeypatch.setenv("WATERSHED_FALKORDB_HOST", "127.0.0.1")
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    return f"cannot reach the falkordb graph on 127.0.0.1:{port} ("


def test_every_face_says_the_same_line_for_a_graph_that_does_not_answer(dead_graph, tmp_path, monkeypatch):
    from watershed.api.cli import app
    from watershed.api.service.nightly import NightlyError, NightlySettings
    from watershed.api.service.nightly.steps import protection_apply_result
    from watershed.graph.backends import UnreachableGraphError, open_answering
    from watershed.graph.settings import GraphSettings
    from watershed.ingest.harvest import HarvestError, open_graph

    with pytest.raises(UnreachableGraphError) as opened:
        open_answering()
    assert str(opened.value).startswith(dead_graph)
    # a builtin ConnectionError still: callers that retry a lost connection keep doing so
    assert isinstance(opened.value, ConnectionError)

    with pytest.raises(HarvestError) as harvest:
        open_graph(GraphSettings())
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path))
    with pytest.raises(NightlyError) as nightly:
        protection_apply_result("2024-01-31", NightlySettings())
    for error in (harvest.value, nightly.value):
        assert str(error).startswith(dead_graph), error

    runner = CliRunner()
    for args in (["graph", "stats"], ["serve", "--port", str(free_port())]):
        result = runner.invoke(app, args)
        assert result.exit_code == 1, (args, result.output)
        line = " ".join(result.output.split())
        assert dead_graph in line and "run `watershed services up`" in line, (args, result.output)
