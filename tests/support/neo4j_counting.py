"""A Neo4j driver whose sessions count what they send: statements (`run`) and managed
transactions, for the tests that hold a store to a number of round trips."""

from __future__ import annotations


class CountingSession:
    def __init__(self, session, calls: list[str], statements: list[tuple[str, dict]]) -> None:
        self.session = session
        self.calls = calls
        self.statements = statements

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.session.close()
        return False

    def run(self, query, params=None):
        self.calls.append("run")
        self.statements.append((query, params))
        return self.session.run(query, params)

    def execute_read(self, work, *args, **kwargs):
        self.calls.append("read transaction")
        return self.session.execute_read(work, *args, **kwargs)

    def execute_write(self, work, *args, **kwargs):
        self.calls.append("write transaction")
        return self.session.execute_write(work, *args, **kwargs)


class CountingDriver:
    """The driver, with the sessions opened and every statement or transaction they send counted."""

    def __init__(self, driver) -> None:
        self.driver = driver
        self.calls: list[str] = []
        #: the text and parameters of every statement run on a session (not in a transaction)
        self.statements: list[tuple[str, dict]] = []
        self.sessions: list[dict] = []

    def session(self, **kwargs):
        self.sessions.append(kwargs)
        return CountingSession(self.driver.session(**kwargs), self.calls, self.statements)

    def __getattr__(self, name):
        return getattr(self.driver, name)
