"""A propagation run is one use case (api/service/propagation_runs.py) for `watershed propagate` and
the nightly chain's propagate step: the same lock wait and the same one-line errors, and the broker
is named without its password."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.api.service.nightly import steps
from watershed.api.service.nightly.settings import NightlySettings
from watershed.graph.server import free_port
from watershed.propagation.run_state import RunState
from watershed.propagation.settings import PropagationSettings

DAY = "2024-01-31"


@pytest.fixture
def run_env(graph_store, celery_redis, monkeypatch, tmp_path):
    port = graph_store.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    monkeypatch.setenv("WATERSHED_CELERY_BROKER", f"redis://127.0.0.1:{celery_redis.port}/0")
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path / "var"))
    return graph_store


def test_a_held_lock_is_the_same_error_through_the_cli_and_the_nightly_step(run_env):
    settings = PropagationSettings()
    state = RunState.from_url(settings.broker_url(), settings.graph_name)
    token = state.acquire(60)
    try:
        cli = CliRunner().invoke(app, ["propagate", "--local", "--wait", "0"])
        with pytest.raises(steps.NightlyError) as nightly:
            steps.propagate(DAY, NightlySettings(nightly_lock_wait_seconds=0.01), local=True)
    finally:
        state.release(token)
    assert cli.exit_code == 1
    cli_line = " ".join(cli.output.split()).removeprefix("error: ")
    assert f"(token {token}) holds the lock" in cli_line
    # the seconds left on the lock may tick between the two calls
    left = re.compile(r"for \d+ s more")
    assert left.sub("", str(nightly.value)) == left.sub("", f"propagate {DAY}: {cli_line}")
    # the lock free again, both faces run
    assert CliRunner().invoke(app, ["propagate", "--local"]).exit_code == 0
    result = steps.propagate(DAY, NightlySettings(), local=True)
    assert result.counts["mode"] == "incremental" and result.counts["resumed"] is None


@pytest.mark.parametrize("args", [["propagate", "--local"], ["propagate", "--status"]])
def test_the_cli_names_an_unreachable_broker_without_its_password(monkeypatch, args):
    port = free_port()
    monkeypatch.setenv("WATERSHED_CELERY_BROKER", f"redis://:s3cret-pw@127.0.0.1:{port}/0")
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert f"cannot reach the Celery Redis at redis://:**@127.0.0.1:{port}/0" in result.output
    assert "s3cret-pw" not in result.output and "Traceback" not in result.output
