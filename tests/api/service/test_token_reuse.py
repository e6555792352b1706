"""A verified token's or session's row is reused only while the graph's accounts stamp stays the
same (FalkorDB)."""

from __future__ import annotations

import time

import pytest

from watershed.api.service.accounts import store as account_store
from watershed.api.service.accounts.store import (
    ACCOUNTS_STAMP,
    AUTH_SESSION,
    AUTH_TOKEN,
    DELETE_TOKEN_SESSIONS,
    AccountStore,
    UnknownTokenError,
)
from watershed.graph.store import GraphStore


class CountingReads:
    """The store as it is, counting the token and session lookups the accounts send it."""

    def __init__(self, store: GraphStore) -> None:
        self.store = store
        self.token_reads = 0
        self.session_reads = 0

    def __getattr__(self, name: str):
        return getattr(self.store, name)

    def read(self, query, params=None):
        if query == AUTH_TOKEN:
            self.token_reads += 1
        if query == AUTH_SESSION:
            self.session_reads += 1
        return self.store.read(query, params)


class WithoutStamps(CountingReads):
    """A backend that keeps no stamps (as Neo4j): GraphStore's own change_stamp."""

    def change_stamp(self, name: str) -> str | None:
        return GraphStore.change_stamp(self.store, name)


class Clock:
    """The kept rows' clock, moved by the test instead of waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def accounts_with(graph_store, reads_class=CountingReads, reuse_seconds: float = 60.0, clock=time.monotonic):
    admin = AccountStore(graph_store)
    admin.add("erin", "viewer", None, actor="test")
    token = admin.create_token("erin", actor="test")
    counted = reads_class(graph_store)
    return admin, AccountStore(counted, reuse_seconds=reuse_seconds, clock=clock), counted, token


def test_a_kept_row_answers_until_an_account_change_moves_the_stamp(graph_store):
    admin, api, counted, token = accounts_with(graph_store)
    for _ in range(5):
        me, token_id = api.authenticate(token.token)
        assert (me.name, me.role, token_id) == ("erin", "viewer", token.id)
    assert counted.token_reads == 1
    # a wrong secret for a kept id is still refused: only the row is kept, never a verdict
    assert api.authenticate(f"wst_{token.id}_{'x' * 43}") is None
    before = graph_store.change_stamp(ACCOUNTS_STAMP)
    admin.update("erin", actor="test", role="steward")
    assert graph_store.change_stamp(ACCOUNTS_STAMP) != before
    assert api.authenticate(token.token)[0].role == "steward"
    assert counted.token_reads == 2
    admin.revoke_token("erin", token.id, actor="test")
    assert api.authenticate(token.token) is None


class FailingSessionCleanup(CountingReads):
    """The graph failing a revocation part way: the token is deleted, its sessions are not."""

    def record(self, query, params=None):
        # tokens and sessions are written through `record` (the accounts stamp covers them)
        if query == DELETE_TOKEN_SESSIONS:
            raise RuntimeError("the graph went away")
        return self.store.record(query, params)


def test_a_change_failing_part_way_moves_the_stamp_and_one_that_found_nothing_does_not(graph_store):
    admin, api, _counted, token = accounts_with(graph_store)
    assert api.authenticate(token.token) is not None
    before = graph_store.change_stamp(ACCOUNTS_STAMP)
    # an unknown id of one's own is refused and changes nothing (any caller can ask)
    with pytest.raises(UnknownTokenError):
        admin.revoke_token("erin", "0123456789abcdef", actor="test")
    assert graph_store.change_stamp(ACCOUNTS_STAMP) == before
    failing = AccountStore(FailingSessionCleanup(graph_store))
    with pytest.raises(RuntimeError):
        failing.revoke_token("erin", token.id, actor="test")
    assert graph_store.change_stamp(ACCOUNTS_STAMP) != before
    assert api.authenticate(token.token) is None  # deleted: the kept row is not used


def test_a_change_made_around_the_store_shows_after_the_reuse_time(graph_store):
    clock = Clock()
    _, api, _counted, token = accounts_with(graph_store, reuse_seconds=60, clock=clock)
    assert api.authenticate(token.token)[0].role == "viewer"
    graph_store.execute("MATCH (u:User {name: 'erin'}) SET u.role = 'admin'")
    clock.now += 59
    assert api.authenticate(token.token)[0].role == "viewer"  # no stamp moved: the kept row
    clock.now += 2
    assert api.authenticate(token.token)[0].role == "admin"


def test_recording_a_use_does_not_extend_a_kept_rows_time(graph_store):
    clock = Clock()
    _, api, counted, token = accounts_with(graph_store, reuse_seconds=60, clock=clock)
    assert api.authenticate(token.token) is not None  # never used: records its use, keeps the row
    clock.now += 59
    api._reuse_touched(token.id, int(time.time() * 1000) + 120_000)  # a later use, recorded
    clock.now += 2
    assert api.authenticate(token.token) is not None
    assert counted.token_reads == 2


def test_a_login_racing_a_revocation_makes_no_session(graph_store):
    """The API verified the token from its kept row; the token is deleted before the stamp moves."""
    _, api, _counted, token = accounts_with(graph_store)
    me, token_id = api.authenticate(token.token)
    graph_store.execute("MATCH (t:ApiToken {id: $id}) DELETE t", {"id": token_id})
    assert api.open_session(me, token_id, hours=1) is None
    assert graph_store.read("MATCH (s:Session {user: 'erin'}) RETURN count(s)") == [[0]]


def test_clearing_the_graph_moves_every_stamp(graph_store):
    _, api, counted, token = accounts_with(graph_store)
    assert api.authenticate(token.token) is not None
    graph_store.clear()
    assert api.authenticate(token.token) is None
    assert counted.token_reads == 2


def test_without_stamps_every_request_reads_the_row(graph_store):
    _, api, counted, token = accounts_with(graph_store, reads_class=WithoutStamps)
    for _ in range(3):
        assert api.authenticate(token.token) is not None
    assert counted.token_reads == 3


def test_with_reuse_off_every_request_reads_the_row(graph_store):
    _, api, counted, token = accounts_with(graph_store, reuse_seconds=0)
    for _ in range(3):
        assert api.authenticate(token.token) is not None
    assert counted.token_reads == 3


def test_a_kept_row_records_its_use_once(graph_store):
    _, api, _counted, token = accounts_with(graph_store)
    for _ in range(5):
        assert api.authenticate(token.token) is not None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        rows = graph_store.read("MATCH (t:ApiToken {id: $id}) RETURN t.last_used", {"id": token.id})
        if rows[0][0] is not None:
            break
        time.sleep(0.05)
    assert rows[0][0] is not None
    assert api._reused.peek(("token", token.id))[2] is not None  # the kept row knows: no touch per request


def session_with(graph_store, **options):
    admin, api, counted, token = accounts_with(graph_store, **options)
    me, token_id = api.authenticate(token.token)
    secret = api.open_session(me, token_id, hours=1)
    assert secret is not None
    return admin, api, counted, token, secret


def test_a_kept_session_answers_until_a_logout_elsewhere_moves_the_stamp(graph_store):
    admin, api, counted, _token, secret = session_with(graph_store)
    for _ in range(5):
        assert api.session(secret).name == "erin"
    assert counted.session_reads == 1
    assert api.session("not-the-cookie") is None  # an unknown cookie still asks the graph
    before = graph_store.change_stamp(ACCOUNTS_STAMP)
    admin.close_session(secret)  # the logout went through another process
    assert graph_store.change_stamp(ACCOUNTS_STAMP) != before
    assert api.session(secret) is None
    # logging out a cookie that is no session (any caller can send one) moves nothing
    stamp = graph_store.change_stamp(ACCOUNTS_STAMP)
    admin.close_session(secret)
    admin.close_session("made-up")
    assert graph_store.change_stamp(ACCOUNTS_STAMP) == stamp


def test_a_kept_session_sees_role_changes_revocations_and_deletions(graph_store):
    admin, api, _counted, token, secret = session_with(graph_store)
    assert api.session(secret).role == "viewer"
    admin.update("erin", actor="test", role="steward")
    assert api.session(secret).role == "steward"
    admin.revoke_token("erin", token.id, actor="test")
    assert api.session(secret) is None

    again = admin.create_token("erin", actor="test")
    secret = api.open_session(*api.authenticate(again.token), hours=1)
    assert api.session(secret) is not None
    admin.delete("erin", actor="test")
    assert api.session(secret) is None


def test_a_kept_session_is_refused_once_it_expires(graph_store, monkeypatch):
    _admin, api, counted, _token, secret = session_with(graph_store)
    assert api.session(secret) is not None
    later = account_store._ms() + 3_600_000 + 1
    monkeypatch.setattr(account_store, "_ms", lambda: later)
    assert api.session(secret) is None
    assert counted.session_reads == 1  # refused from the kept row: the expiry is checked at use


def test_without_reuse_every_session_request_reads_the_row(graph_store):
    _admin, api, counted, _token, secret = session_with(graph_store, reuse_seconds=0)
    for _ in range(3):
        assert api.session(secret) is not None
    assert counted.session_reads == 3
