"""What the OpenLineage emission tests share: a consumer of events (an HTTP server on a free
loopback port that keeps every POST: path, Authorization header, JSON body, and can refuse from
the n-th on), the API key they send, and a generated warehouse loaded and propagated."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bench.propagation_bench import load_generated
from watershed.ingest.generator import generate_warehouse, seed_apps

#: the API key the tests send to their consumer
KEY = "ol-key-7f3a"


@dataclass
class Receiver:
    """An HTTP consumer of OpenLineage events: keeps each POST; answers `refuse_with` from the
    `refuse_from`-th (0-based) on."""

    url: str = ""
    posts: list[tuple[str, str | None, dict]] = field(default_factory=list)
    refuse_from: int | None = None
    refuse_with: int = 401


@contextmanager
def receiving() -> Iterator[Receiver]:
    """A Receiver serving on a free loopback port until the block ends."""
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            refused = state.refuse_from is not None and len(state.posts) >= state.refuse_from
            if not refused:
                state.posts.append((self.path, self.headers.get("Authorization"), json.loads(body)))
            self.send_response(state.refuse_with if refused else 201)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def propagated_warehouse(store, falkordb_server, directory: Path):
    """A generated warehouse (30 tasks) loaded into `store` as a harvest loads it, seeded (the
    demo's app values, pii on one ODS uid column) and propagated."""
    import redis

    from watershed.propagation.coordinator import local_runner, propagate
    from watershed.propagation.graph_store import GraphTagStore
    from watershed.propagation.policy import default_policy
    from watershed.propagation.run_state import RunState
    from watershed.propagation.settings import PropagationSettings

    generate_warehouse(directory, tasks=30, seed=5)
    _, catalog = load_generated(store, directory)
    policy = default_policy()
    tags = GraphTagStore(store, policy)
    seed_apps(tags, catalog)
    ods = sorted(c for c in store.known_columns() if c.startswith("ods.") and c.endswith(".uid"))
    tags.set_tag(ods[0], "pii", ["L3"], by="test")
    # the run's lock and record live in a Redis: the FalkorDB server is one
    state = RunState(
        redis.Redis(host=falkordb_server.host, port=falkordb_server.port), f"emit-{directory.name}"
    )
    record = propagate(store, policy, state, local_runner, full=True, settings=PropagationSettings())
    assert record.status == "done", record
    return store


@contextmanager
def consumer_graph(falkordb_server, name: str):
    """An empty FalkorDB graph on the session's server: the Watershed that takes emitted events."""
    from watershed.graph.falkordb_store import FalkorDBStore

    store = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=name)
    store.ensure_schema()
    try:
        yield store
    finally:
        store.clear()
        store.close()
