"""Fault injection: SIGKILL the graph server at random points of a harvest, restart, re-harvest.

Whatever statement the server was killed at, the re-harvest must converge to the graph of a
clean run (compared by `tests.graph.fingerprint`). Kill points are chosen from the server's own
command stream (its count of GRAPH.QUERY calls, INFO commandstats) over several rounds with a
seeded RNG; `WATERSHED_FAULT_SEED` replays a run. Half the rounds kill a harvest into an empty
graph, the other half kill a harvest of a changed corpus (new versions, removed tasks) over a
loaded graph and then harvest the original corpus back: a version cut short after its old edges
were deleted must not be taken for the version that comes back.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import threading
import time

import pytest
import redis

from bench.gen_warehouse import generate_warehouse
from graph.falkordb_store import FalkorDBStore
from graph.server import ServerSpec, free_port, start, stop
from ingest.catalog import Catalog
from ingest.harvest import run_harvest
from tests.graph.fingerprint import graph_fingerprint, graph_lines

pytestmark = pytest.mark.spark

ROUNDS = 6
#: small UNWIND batches: a load becomes many statements, so kills land between them
BATCH = 15


def _calls(client: redis.Redis) -> int:
    stats = client.info("commandstats")
    return sum(
        v["calls"] for k, v in stats.items() if k.lower() in ("cmdstat_graph.query", "cmdstat_graph.ro_query")
    )


class Killer(threading.Thread):
    """SIGKILLs the server once it has run `after` more graph queries (polling INFO commandstats)."""

    def __init__(self, spec: ServerSpec, pid: int, after: int) -> None:
        super().__init__(daemon=True)
        self.client = redis.Redis(host=spec.host, port=spec.port)
        self.pid = pid
        self.start_calls = _calls(self.client)
        self.target = self.start_calls + after
        self.done = threading.Event()
        self.killed_at: int | None = None

    def run(self) -> None:
        while not self.done.is_set():
            try:
                calls = _calls(self.client)
            except redis.RedisError:
                return
            if calls >= self.target:
                os.kill(self.pid, signal.SIGKILL)
                self.killed_at = calls - self.start_calls
                return
            time.sleep(0.0005)


@pytest.fixture
def corpora(tmp_path):
    """Corpus A (a generated warehouse) and B: A with a third of its tasks changed and a tenth removed."""
    root = tmp_path / "warehouse"
    generate_warehouse(root, tasks=40, seed=11, broken=1)
    a = root / "tasks"
    b = tmp_path / "changed" / "tasks"
    shutil.copytree(a, b)
    files = sorted(b.rglob("*.sql"))
    for index, path in enumerate(files):
        if index % 10 == 3:
            path.unlink()
        elif index % 3 == 0:
            path.write_text(path.read_text().replace("SELECT", "SELECT /* revised */", 1))
    return Catalog.load(root / "catalog.json"), a, b


def test_a_killed_harvest_converges_to_the_clean_graph(spark, corpora, tmp_path):
    catalog, corpus_a, corpus_b = corpora
    seed = int(os.environ.get("WATERSHED_FAULT_SEED", random.SystemRandom().randrange(1 << 30)))
    print(f"fault-injection seed: {seed} (WATERSHED_FAULT_SEED={seed} replays it)")
    rng = random.Random(seed)
    spec = ServerSpec("falkordb", "127.0.0.1", free_port(), tmp_path / "var", with_falkordb=True)
    pid = start(spec)
    counter = redis.Redis(host=spec.host, port=spec.port)

    def store(name: str) -> FalkorDBStore:
        graph = FalkorDBStore(spec.host, spec.port, graph=name, batch_size=BATCH)
        graph.ensure_schema()
        return graph

    def harvest(graph: FalkorDBStore, corpus) -> int:
        """Harvest `corpus`; the number of graph queries it sent."""
        before = _calls(counter)
        run_harvest(
            spark,
            tasks=str(corpus),
            catalog=catalog,
            store=graph,
            out_dir=tmp_path / "out",
            progress=lambda _: None,
        )
        return _calls(counter) - before

    try:
        # The clean runs: A into an empty graph; B over it and A back give A's graph again.
        reference = store("clean")
        calls_a = harvest(reference, corpus_a)
        clean = graph_fingerprint(reference)
        clean_lines = graph_lines(reference)
        calls_b = harvest(reference, corpus_b)
        changed = graph_fingerprint(reference)
        assert changed != clean  # B really changes the graph
        harvest(reference, corpus_a)
        assert graph_fingerprint(reference) == clean
        reference.close()

        disturbed = 0
        for round_ in range(ROUNDS):
            name = f"round{round_}"
            graph = store(name)
            over_loaded_graph = round_ % 2 == 1
            if over_loaded_graph:
                harvest(graph, corpus_a)
            corpus, calls = (corpus_b, calls_b) if over_loaded_graph else (corpus_a, calls_a)
            killer = Killer(spec, pid, rng.randint(1, calls - 2))
            killer.start()
            with contextlib.suppress(redis.RedisError):  # the kill cuts the harvest short
                harvest(graph, corpus)
            killer.done.set()
            killer.join()
            graph.close()
            print(f"round {round_}: killed after {killer.killed_at} queries, of {calls}")
            if killer.killed_at is None:
                continue  # the harvest finished first: nothing to recover from
            pid = start(spec)  # replays the append-only file
            counter = redis.Redis(host=spec.host, port=spec.port)
            graph = store(name)
            if graph_fingerprint(graph) != clean:
                disturbed += 1
            harvest(graph, corpus_a)
            after = graph_lines(graph)
            assert after == clean_lines, (
                f"round {round_} (seed {seed}): the re-harvest did not converge; "
                f"missing {sorted(set(clean_lines) - set(after))[:5]}, extra {sorted(set(after) - set(clean_lines))[:5]}"
            )
            graph.close()
        assert disturbed > 0, f"no kill left the graph different from a clean run (seed {seed})"
    finally:
        stop(spec)
