"""A recorder in place of the Neo4j driver: what the Neo4j backend sends, per transaction.

The statements themselves run against the live local Neo4j (tests/support/neo4j.py); this
checks what a live server does not show: which kind of transaction (a read, a managed write the
driver retries, an auto-commit) the Neo4j store hands each statement to. Used by tests/graph/test_neo4j_store.py, test_neo4j_cypher.py and
tests/propagation/test_neo4j_tags.py."""

from __future__ import annotations


class RecordedResult:
    def __init__(self, rows):
        self.rows = rows

    def consume(self):
        return None

    def __iter__(self):
        return iter(self.rows)


class Record:
    def __init__(self, values):
        self._values = values

    def values(self):
        return self._values


class Recorder:
    def __init__(self):
        self.transactions: list[tuple[str, list[tuple[str, dict]]]] = []
        self.answers: dict[str, list] = {}

    # driver
    def session(self, database, default_access_mode="WRITE"):
        assert database == "lineage"
        return RecordedSession(self, default_access_mode)

    def close(self):
        pass

    def answer(self, query):
        return RecordedResult([Record(v) for v in self.answers.get(query.split()[0] + query[-20:], [])])


class RecordedSession:
    """A session of the recorder: an auto-commit statement of a READ session is recorded as a
    "read" (the driver routes it to a reader), of a WRITE session as "auto"."""

    def __init__(self, recorder: Recorder, access_mode: str) -> None:
        self.recorder = recorder
        self.access_mode = access_mode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def run(self, query, params=None):
        kind = "read" if self.access_mode == "READ" else "auto"
        self.recorder.transactions.append((kind, [(query, params or {})]))
        return self.recorder.answer(query) if kind == "read" else RecordedResult([])

    def _transaction(self, kind, work):
        statements: list[tuple[str, dict]] = []
        recorder = self.recorder

        class Tx:
            def run(self, query, params=None):
                statements.append((query, params or {}))
                return recorder.answer(query)

        result = work(Tx())
        recorder.transactions.append((kind, statements))
        return result

    def execute_write(self, work, *args, **kwargs):
        return self._transaction("write", lambda tx: work(tx, *args, **kwargs))

    def execute_read(self, work, *args, **kwargs):
        return self._transaction("read", lambda tx: work(tx, *args, **kwargs))
