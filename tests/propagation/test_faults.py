"""Fault injection: kill the graph server, the broker Redis, a worker or the coordinator mid-run, then converge.

Each round starts a full `watershed propagate` on a generated warehouse, SIGKILLs
one of the four at a random layer of the run, restarts what was killed, and runs
`watershed propagate --wait` until it completes; every node's tags with their
provenance must then equal a clean run's. The RNG seed is printed (and can be
set with WATERSHED_FAULT_SEED, the number of rounds with WATERSHED_FAULT_ROUNDS)
so a failing round can be replayed.

Also here: Redis dying under a running `propagate` is one line saying what was
lost and how the run goes on, exit 1 (issue 11 item 20).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time

import pytest
import redis

from bench.propagation_bench import load_generated
from tests.propagation.fingerprint import tag_fingerprint, tag_lines
from tests.support.celery_workers import Workers
from tests.support.paths import REPO
from watershed.graph.falkordb_store import FalkorDBStore
from watershed.graph.server import ServerSpec, free_port, start, stop
from watershed.ingest.generator import generate_warehouse, seed_apps
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy
from watershed.propagation.run_state import RunState

VICTIMS = ("falkordb", "redis", "worker", "coordinator")


class Cluster:
    """A FalkorDB, a broker Redis and a worker of the test's own, so killing them disturbs no other test."""

    def __init__(self, directory) -> None:
        self.falkordb = ServerSpec(
            "falkordb", "127.0.0.1", free_port(), directory / "graph", with_falkordb=True
        )
        self.redis = ServerSpec("redis", "127.0.0.1", free_port(), directory / "broker", with_falkordb=False)
        self.log_dir = directory / "logs"
        self.log_dir.mkdir()
        self.broker = f"redis://127.0.0.1:{self.redis.port}/0"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("WATERSHED_")},
            "WATERSHED_FALKORDB_PORT": str(self.falkordb.port),
            "WATERSHED_GRAPH_NAME": "faults",
            "WATERSHED_CELERY_BROKER": self.broker,
            # a dead coordinator's lock expires quickly; a lost batch is sent again soon
            "WATERSHED_PROPAGATION_LOCK_TTL_SECONDS": "3",
            "WATERSHED_PROPAGATION_STALL_SECONDS": "6",
            # small batches: a run has many tasks, so a kill lands in the middle of one
            "WATERSHED_PROPAGATION_BATCH_SIZE": "4",
            "PYTHONPATH": str(REPO),
        }
        self.workers = Workers(self.redis.port, self.falkordb.port, self.log_dir)
        self.layers = 0  # of the clean run

    def up(self) -> None:
        start(self.falkordb)
        start(self.redis)
        self.workers.start(1)

    def down(self) -> None:
        self.workers.stop_all()
        stop(self.redis)
        stop(self.falkordb)

    def state(self) -> RunState:
        return RunState.from_url(self.broker, "faults")

    def graph(self) -> FalkorDBStore:
        return FalkorDBStore("127.0.0.1", self.falkordb.port, graph="faults")

    def propagate(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "watershed.api.cli", "propagate", *args],
            env=self.env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def kill_server(self, spec: ServerSpec) -> None:
        # the server says its own pid: no reliance on how the launcher keeps its pid file
        pid = int(redis.Redis(host=spec.host, port=spec.port).info("server")["process_id"])
        os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)  # our child: reap it, or its pid lingers as a zombie

    def converge(self, attempts: int = 6) -> list[str]:
        """`watershed propagate --wait` until a run completes; returns each failed attempt's error line."""
        errors = []
        for _ in range(attempts):
            process = self.propagate("--wait", "30")
            _out, err = process.communicate(timeout=300)
            if process.returncode == 0:
                return errors
            assert "Traceback" not in err, err[-3000:]
            assert process.returncode == 1 and len(err.strip().splitlines()) == 1, err[-3000:]
            errors.append(err.strip())
            time.sleep(1)
        raise AssertionError(f"no run completed in {attempts} attempts: {errors}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("faults")
    cluster = Cluster(directory)
    cluster.up()
    try:
        generate_warehouse(directory / "warehouse", tasks=60, seed=11)
        graph = cluster.graph()
        graph.ensure_schema()
        _, catalog = load_generated(graph, directory / "warehouse")
        assert seed_apps(GraphTagStore(graph, default_policy()), catalog) > 0
        graph.close()
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="module")
def reference(cluster) -> list[str]:
    """The clean run's tags (and its layer count, to aim the kills)."""
    clean = cluster.propagate("--full")
    out, err = clean.communicate(timeout=300)
    assert clean.returncode == 0, out + err
    cluster.layers = len(cluster.state().current().layers)
    assert cluster.layers >= 4, cluster.layers
    graph = cluster.graph()
    lines = tag_lines(graph)
    graph.close()
    assert (
        sum(1 for line in lines if '"pii"' in line) > 50 and sum(1 for line in lines if '"app"' in line) > 50
    )
    return lines


def start_and_wait_for_layer(cluster: Cluster, layer: int) -> subprocess.Popen:
    """A full run, once it has finished `layer` layers (its record is in Redis after every layer)."""
    coordinator = cluster.propagate("--full")
    state = cluster.state()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert coordinator.poll() is None, (
            "the run ended before the fault: " + coordinator.communicate()[0][-2000:]
        )
        record = state.current()
        if record is not None and record.status == "running" and len(record.layers) >= layer:
            return coordinator
        time.sleep(0.01)
    raise AssertionError(f"the run did not reach layer {layer}")


def kill(cluster: Cluster, victim: str, coordinator: subprocess.Popen) -> None:
    if victim == "falkordb":
        cluster.kill_server(cluster.falkordb)
    elif victim == "redis":
        cluster.kill_server(cluster.redis)
    elif victim == "worker":
        cluster.workers.kill(cluster.workers.live()[0])
    else:
        coordinator.kill()


def restart(cluster: Cluster, victim: str) -> None:
    if victim == "falkordb":
        start(cluster.falkordb)
    elif victim == "redis":
        start(cluster.redis)
    elif victim == "worker":
        cluster.workers.start(1)


def test_redis_dying_mid_run_is_one_line_and_the_run_resumes(cluster, reference):
    coordinator = start_and_wait_for_layer(cluster, 1)
    cluster.kill_server(cluster.redis)
    out, err = coordinator.communicate(timeout=300)
    restart(cluster, "redis")
    assert coordinator.returncode == 1, out[-2000:] + err[-3000:]
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err[-3000:]
    assert "lost the Celery Redis" in err and "`watershed propagate` resumes the run" in err
    cluster.converge()
    graph = cluster.graph()
    assert tag_lines(graph) == reference
    graph.close()


def test_graph_dying_mid_run_leaves_the_run_resumable(cluster, reference):
    # the workers meet the lost graph first (they hold the batches): their GraphUnavailableError
    # is a lost server, not a verdict on the batch, so the run must stay resumable, not fail
    coordinator = start_and_wait_for_layer(cluster, 1)
    cluster.kill_server(cluster.falkordb)
    out, err = coordinator.communicate(timeout=300)
    restart(cluster, "falkordb")
    assert coordinator.returncode == 1, out[-2000:] + err[-3000:]
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err[-3000:]
    assert "`watershed propagate` resumes the run" in err, err
    assert cluster.state().current().status != "failed"
    cluster.converge()
    graph = cluster.graph()
    assert tag_lines(graph) == reference
    graph.close()


def test_kills_at_random_points_converge_to_the_clean_tags(cluster, reference):
    seed = int(os.environ.get("WATERSHED_FAULT_SEED", random.randrange(2**32)))
    rounds = int(os.environ.get("WATERSHED_FAULT_ROUNDS", len(VICTIMS)))
    print(f"fault injection: seed {seed}, {rounds} rounds (WATERSHED_FAULT_SEED={seed} replays them)")
    rng = random.Random(seed)
    # every victim at least once, in a random order, then random ones
    victims = rng.sample(VICTIMS, len(VICTIMS)) + [rng.choice(VICTIMS) for _ in range(rounds - len(VICTIMS))]
    expected = tag_fingerprint_of(reference)
    for number, victim in enumerate(victims[:rounds]):
        # after a finished layer, and before the last one ends: the kill lands mid-run
        layer = rng.randint(1, cluster.layers - 2)
        coordinator = start_and_wait_for_layer(cluster, layer)
        time.sleep(rng.uniform(0, 0.05))
        kill(cluster, victim, coordinator)
        if victim == "worker":
            restart(cluster, victim)  # the run goes on: its lost batches are sent again
        # a run that lost a server ends with one line; the others are killed or carry on
        _out, err = coordinator.communicate(timeout=300)
        if victim != "worker":
            restart(cluster, victim)
        print(
            f"round {number}: killed {victim} after layer {layer} of {cluster.layers}; "
            f"the run's own exit {coordinator.returncode}"
        )
        if victim != "coordinator" and coordinator.returncode != 0:
            assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err[-3000:]
        errors = cluster.converge()
        graph = cluster.graph()
        got = tag_lines(graph)
        graph.close()
        assert tag_fingerprint_of(got) == expected, (
            f"seed {seed} round {number} ({victim}): tags differ from the clean run's; "
            f"errors on the way: {errors}; first differences: {sorted(set(got) ^ set(reference))[:5]}"
        )


def tag_fingerprint_of(lines: list[str]) -> str:
    import hashlib

    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


__all__ = ["tag_fingerprint"]
