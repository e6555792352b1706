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
    def session(self, database):
        assert database == "lineage"
        return self

    def close(self):
        pass

    # session
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def run(self, query, params=None):
        self.transactions.append(("auto", [(query, params or {})]))
        return RecordedResult([])

    def _transaction(self, kind, work):
        statements: list[tuple[str, dict]] = []
        recorder = self

        class Tx:
            def run(self, query, params=None):
                statements.append((query, params or {}))
                return RecordedResult(
                    [Record(v) for v in recorder.answers.get(query.split()[0] + query[-20:], [])]
                )

        result = work(Tx())
        self.transactions.append((kind, statements))
        return result

    def execute_write(self, work, *args, **kwargs):
        return self._transaction("write", lambda tx: work(tx, *args, **kwargs))

    def execute_read(self, work, *args, **kwargs):
        return self._transaction("read", lambda tx: work(tx, *args, **kwargs))
