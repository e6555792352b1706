"""Crash safety on Neo4j: SIGKILL the Neo4j JVM during a harvest and during a propagation, restart
it (the store recovers from its transaction log), re-run: the whole graph equals a clean run's.

A Neo4j of the test's own (the session's is shared and must not die), started by the code
`watershed services up` runs. Community has one database, so the clean runs go first and the
graph is cleared before the killed ones. The kill lands before the store's k-th write (k in the
middle of a clean run's writes), so what committed before it stays; the driver is told not to
retry, so the cut-short run fails at once instead of waiting out the restart.
"""

from __future__ import annotations

import os
import signal

import pytest
import redis

from tests.graph.fingerprint import RUN_LABELS, TIMESTAMP_PROPERTIES, graph_lines
from tests.support.neo4j import neo4j_settings
from watershed.graph import neo4j_server, processes
from watershed.graph.catalog import Catalog
from watershed.graph.errors import GraphUnavailableError
from watershed.graph.neo4j_store import Neo4jStore
from watershed.graph.server import stop
from watershed.ingest.generator import generate_warehouse, seed_apps
from watershed.ingest.harvest import run_harvest

pytestmark = pytest.mark.services  # starts (and kills) a Neo4j of its own

#: small batches: a harvest and a propagation become many transactions, so a kill lands between them
BATCH = 15
#: nodes that record runs, fences and change stamps (ids, tokens and random values per run)
SKIPPED_LABELS = RUN_LABELS | {"PropagationRun", "PropagationFence", "WatershedStamp"}
#: when a node's own tags changed (a clock); the propagation run that last wrote its tags, its
#: write stamp and the run of a propagated TAGGED edge (a run id each)
SKIPPED_PROPERTIES = TIMESTAMP_PROPERTIES | {"own_changed_at", "tag_run", "tag_stamp", "run"}


def lines(store) -> list[str]:
    return graph_lines(store, SKIPPED_PROPERTIES, SKIPPED_LABELS)


class KillingStore(Neo4jStore):
    """The Neo4j store, counting its writes; SIGKILLs the server before write number `kill_at`."""

    def __init__(self, driver, pid: int, kill_at: int | None) -> None:
        super().__init__(driver, batch_size=BATCH, where="the test's Neo4j")
        self.pid, self.kill_at, self.writes = pid, kill_at, 0

    def _count(self) -> None:
        self.writes += 1
        if self.writes == self.kill_at:
            os.kill(self.pid, signal.SIGKILL)

    def write_all(self, statements):
        self._count()
        return super().write_all(statements)

    def execute(self, query, params=None):
        self._count()
        return super().execute(query, params)


def test_a_killed_harvest_and_a_killed_propagation_converge_to_the_clean_graph(
    spark, tmp_path, run_state_redis
):
    from neo4j import GraphDatabase

    from watershed.graph.services import neo4j_spec, start_spec
    from watershed.propagation.coordinator import RunInterruptedError, local_runner, propagate
    from watershed.propagation.graph_store import GraphTagStore
    from watershed.propagation.policy import default_policy
    from watershed.propagation.run_state import RunState
    from watershed.propagation.settings import PropagationSettings

    generate_warehouse(tmp_path / "warehouse", tasks=30, seed=11)
    catalog = Catalog.load(tmp_path / "warehouse" / "catalog.json")
    tasks = str(tmp_path / "warehouse" / "tasks")
    settings = neo4j_settings(tmp_path / "var")
    spec = neo4j_spec(settings)
    policy = default_policy()
    # a dead run's lock expires soon, so the re-run need not wait for it
    propagation = PropagationSettings(propagation_lock_ttl_seconds=3)
    state = RunState(redis.Redis(host=run_state_redis.host, port=run_state_redis.port), "neo4j-faults")

    def store(pid: int, kill_at: int | None = None) -> KillingStore:
        driver = GraphDatabase.driver(
            settings.neo4j_uri,
            auth=(settings.neo4j_user, neo4j_server.password(settings)),
            max_transaction_retry_time=0,
            notifications_min_severity="OFF",
        )
        graph = KillingStore(driver, pid, kill_at)
        graph.ensure_schema()
        return graph

    def harvest(graph: KillingStore) -> None:
        run_harvest(
            spark,
            tasks=tasks,
            catalog=catalog,
            store=graph,
            out_dir=tmp_path / "out",
            progress=lambda _: None,
        )

    def propagated(graph: KillingStore) -> None:
        seed_apps(GraphTagStore(graph, policy), catalog)
        record = propagate(graph, policy, state, local_runner, full=True, settings=propagation, batch_size=7)
        assert record.status == "done"

    def killed(run, graph: KillingStore) -> None:
        # a harvest fails with the store's error; propagation says it was interrupted, resumably
        with pytest.raises((GraphUnavailableError, RunInterruptedError)):
            run(graph)
        graph.close()
        # a killed JVM holds its port until it is gone (its threads exit, the kernel frees its heap):
        # the write that met the kill fails at once, so the restart would find the port still taken
        assert processes.wait_gone(graph.pid, 60)

    pid = start_spec(spec, settings)
    try:
        # the clean runs: their graphs, and how many writes each made
        clean = store(pid)
        harvest(clean)
        harvested, harvest_writes = lines(clean), clean.writes
        propagated(clean)
        tagged, propagation_writes = lines(clean), clean.writes - harvest_writes
        assert tagged != harvested
        clean.clear()
        clean.close()

        # a harvest killed halfway: restart, harvest again
        killed(harvest, store(pid, kill_at=harvest_writes // 2))
        pid = start_spec(spec, settings)  # Neo4j recovers its store from the transaction log
        graph = store(pid)
        assert lines(graph) != harvested  # the kill cut the harvest short
        harvest(graph)
        assert lines(graph) == harvested
        graph.close()

        # a propagation killed halfway: restart, propagate again (it resumes the unfinished run)
        killed(propagated, store(pid, kill_at=propagation_writes // 2))
        pid = start_spec(spec, settings)
        graph = store(pid)
        assert lines(graph) != tagged
        propagated(graph)
        after = lines(graph)
        assert after == tagged, (
            f"missing {sorted(set(tagged) - set(after))[:5]}, extra {sorted(set(after) - set(tagged))[:5]}"
        )
        graph.close()
    finally:
        stop(spec)
