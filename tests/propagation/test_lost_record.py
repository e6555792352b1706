"""A run record Redis lost (with its token counter) still converges: the graph's fence says a run did not finish."""

from __future__ import annotations

import os

from tests.propagation.fingerprint import tag_lines
from tests.support.cli import invoke
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy
from watershed.propagation.run_state import RunState


def test_a_run_whose_record_redis_lost_is_repaired_by_a_full_run(cli_env):
    assert invoke("tag", "set", "ods.users.uid", "pii=L2").exit_code == 0
    assert invoke("propagate", "--local").exit_code == 0
    clean = tag_lines(cli_env)
    assert any('"pii"' in line for line in clean)

    # A full run started, cleared every propagated tag, and was killed; then Redis lost its
    # run record and its token counter (replaced, flushed, or the last second of its log).
    state = RunState.from_url(os.environ["WATERSHED_CELERY_BROKER"], cli_env.graph_name)
    store = GraphTagStore(cli_env, default_policy())
    token = state.acquire(30)
    store.raise_fence(token)
    store.clear_tags(store.tagged_nodes(), "prop-lost", token)
    state.release(token)
    state.client.delete(state._key("run"), state._key("token"))
    assert tag_lines(cli_env) != clean

    result = invoke("propagate", "--local")
    assert result.exit_code == 0, result.output
    assert "did not finish and left no record" in " ".join(result.output.split())
    assert state.current().mode == "full"
    assert tag_lines(cli_env) == clean
