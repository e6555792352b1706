"""What keeps Neo4j's round trips few (issue 37, bench/backends_bench.py measures the time): a read is
one auto-commit statement on a session its thread keeps, retried on a new session when the server
dropped the connection, and an incremental propagation's change scans are index seeks."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from urllib.parse import urlsplit

import pytest

from tests.support.neo4j_counting import CountingDriver
from tests.support.neo4j_plans import plan_operators
from watershed.graph import neo4j_server as local_neo4j
from watershed.graph.neo4j_store import Neo4jStore
from watershed.propagation import queries as propagation_queries

COLUMN = "MATCH (c:Column {id: $id}) RETURN c.id"


def test_reads_are_one_statement_each_on_a_session_per_thread(neo4j_store):
    neo4j_store.execute("CREATE (:Column {id: 'db.t.c'})")
    counting = CountingDriver(neo4j_store.driver)
    neo4j_store.driver = counting
    try:
        for _ in range(3):
            assert neo4j_store.read(COLUMN, {"id": "db.t.c"}) == [["db.t.c"]]
        # RUN and PULL in one round trip, on one session opened for reads (routed to a reader)
        assert counting.calls == ["run"] * 3
        assert counting.sessions == [{"database": "neo4j", "default_access_mode": "READ"}]

        # sessions are not thread-safe: another thread reads on a session of its own
        found = []
        thread = threading.Thread(target=lambda: found.append(neo4j_store.read(COLUMN, {"id": "db.t.c"})))
        thread.start()
        thread.join()
        assert found == [[["db.t.c"]]]
        assert len(counting.sessions) == 2
        assert neo4j_store.read(COLUMN, {"id": "db.t.c"}) == [["db.t.c"]]
        assert len(counting.sessions) == 2
    finally:
        neo4j_store.driver = counting.driver


class CuttableProxy:
    """A TCP relay to the server whose open connections the test can cut, as a network would."""

    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            self.open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
        for end in (source, target):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def cut(self) -> int:
        cut, self.open = self.open, []
        for end in cut:
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
        return len(cut)

    def close(self) -> None:
        self.listener.close()
        self.cut()


def test_a_read_whose_connection_is_cut_runs_again_on_a_new_one(neo4j_server, neo4j_store):
    from neo4j import GraphDatabase

    settings = neo4j_server.settings
    address = urlsplit(settings.neo4j_uri)
    proxy = CuttableProxy(address.hostname, address.port)
    driver = GraphDatabase.driver(
        f"bolt://127.0.0.1:{proxy.port}",
        auth=(settings.neo4j_user, local_neo4j.password(settings)),
        notifications_min_severity="OFF",
    )
    store = Neo4jStore(driver)
    # long enough (seconds) to be found running and its connection cut under it
    slow = "UNWIND range(1, 20000000) AS x WITH x WHERE x < 0 RETURN count(x) AS cut_read"
    cut: list[int] = []

    def cut_it_while_it_runs() -> None:
        for _ in range(400):
            running = (
                "SHOW TRANSACTIONS YIELD currentQuery WHERE currentQuery CONTAINS 'AS cut_read' RETURN 1"
            )
            if len(neo4j_store.read(running)) > 1:  # this SHOW's own text matches too
                cut.append(proxy.cut())
                return
            time.sleep(0.05)

    killer = threading.Thread(target=cut_it_while_it_runs)
    try:
        killer.start()
        # the statement fails on its cut connection once, and runs again to its end on another
        assert store.read(slow) == [[0]]
        killer.join()
        assert cut and cut[0] > 0
    finally:
        killer.join()
        store.close()
        proxy.close()


@pytest.mark.parametrize(
    "query", [*propagation_queries.CHANGED_SINCE, propagation_queries.COLUMNS_CREATED_SINCE]
)
def test_an_incremental_propagations_change_scans_are_index_seeks(neo4j_store, query):
    found = plan_operators(neo4j_store, query, {"since": 0})
    assert "NodeByLabelScan" not in found and "AllNodesScan" not in found, found
    assert "NodeIndexSeekByRange" in found, found
