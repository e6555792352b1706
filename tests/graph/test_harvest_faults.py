"""Fault injection: SIGKILL the graph server at random points of a harvest, restart, re-harvest.

Whatever statement the server was killed at, the re-harvest must converge to the graph of a
clean run (compared by `tests.graph.fingerprint`). Kill points are chosen from the server's own
command stream (MONITOR): a clean run's stream gives the numbers of the graph queries that load
tasks, and each round kills the server as it receives one of them, over several rounds with a
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

import pytest
import redis

from tests.graph.fingerprint import graph_fingerprint, graph_lines
from watershed.graph.catalog import Catalog
from watershed.graph.errors import GraphUnavailableError
from watershed.graph.falkordb_store import FalkorDBStore
from watershed.graph.server import ServerSpec, free_port, start, stop
from watershed.ingest.generator import generate_warehouse
from watershed.ingest.harvest import run_harvest

ROUNDS = 6
#: small UNWIND batches: a load becomes many statements, so kills land between them
BATCH = 15


class Watcher(threading.Thread):
    """Reads the server's command stream (MONITOR): records its graph queries, and SIGKILLs the
    server once it has received query number `kill_at` (counted from 1) when one is given."""

    STOP = "watcher-stop"

    def __init__(self, spec: ServerSpec, pid: int, kill_at: int | None = None) -> None:
        super().__init__(daemon=True)
        self.spec = spec
        self.pid = pid
        self.kill_at = kill_at
        self.queries: list[str] = []
        self.killed_at: int | None = None
        # No read timeout (redis-py's default is 5 s): Spark may extract for longer between two loads.
        self.monitor = redis.Redis(host=spec.host, port=spec.port, socket_timeout=None).monitor()
        self.monitor.__enter__()  # MONITOR is on before the harvest sends anything

    def run(self) -> None:
        try:
            while True:
                command = self.monitor.next_command()["command"]
                if command == f"ECHO {self.STOP}":
                    return
                if not command.startswith("GRAPH.QUERY"):
                    continue
                self.queries.append(command)
                if len(self.queries) == self.kill_at:
                    os.kill(self.pid, signal.SIGKILL)
                    self.killed_at = len(self.queries)
                    return
        except redis.RedisError:
            return  # the server is gone

    def finish(self) -> None:
        if self.killed_at is None:
            with contextlib.suppress(redis.RedisError):
                redis.Redis(host=self.spec.host, port=self.spec.port).echo(self.STOP)
        self.join()


def load_window(queries: list[str]) -> tuple[int, int]:
    """The query numbers (from 1) of a harvest's task loads: its first to its last write on a Task."""
    on_tasks = [
        number for number, query in enumerate(queries, 1) if ":Task" in query and " RETURN " not in query
    ]
    return on_tasks[0], on_tasks[-1]


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

    def store(name: str) -> FalkorDBStore:
        graph = FalkorDBStore(spec.host, spec.port, graph=name, batch_size=BATCH)
        graph.ensure_schema()
        return graph

    def harvest(graph: FalkorDBStore, corpus, kill_at: int | None = None) -> Watcher:
        """Harvest `corpus` while watching the server's command stream (and killing it at `kill_at`)."""
        watcher = Watcher(spec, pid, kill_at)
        watcher.start()
        try:
            run_harvest(
                spark,
                tasks=str(corpus),
                catalog=catalog,
                store=graph,
                out_dir=tmp_path / "out",
                progress=lambda _: None,
            )
        except (redis.RedisError, GraphUnavailableError):
            if kill_at is None:
                raise  # only the kill may cut a harvest short
        finally:
            watcher.finish()
        return watcher

    try:
        # The clean runs: A into an empty graph; B over it and A back give A's graph again.
        reference = store("clean")
        window_a = load_window(harvest(reference, corpus_a).queries)
        clean = graph_fingerprint(reference)
        clean_lines = graph_lines(reference)
        window_b = load_window(harvest(reference, corpus_b).queries)
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
            corpus, window = (corpus_b, window_b) if over_loaded_graph else (corpus_a, window_a)
            # Kill points within the task loads, where lineage is written (the catalog comes first).
            watcher = harvest(graph, corpus, kill_at=rng.randint(*window))
            graph.close()
            print(f"round {round_}: killed at graph query {watcher.killed_at} (task loads: queries {window})")
            if watcher.killed_at is None:
                continue  # the harvest finished first: nothing to recover from
            pid = start(spec)  # replays the append-only file
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
