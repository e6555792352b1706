"""A check keeps the catalog entries, grants and tags it read while the graph's data stamp stays,
and every change made through Watershed, in this process or another, counts at the next check
(FalkorDB)."""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys
from collections import Counter

import pytest
from redis.exceptions import ResponseError

from watershed.api.service.accounts.rights import Me
from watershed.api.service.audit import entries
from watershed.api.service.authz import AuthzService
from watershed.api.service.authz.grants import ADMINS, GRANTS_OF_USER
from watershed.api.service.authz.reads import ADMINS_PART, GRANTS_PART, TABLES_PART
from watershed.graph import queries as graph_queries
from watershed.graph.authz import Grant
from watershed.graph.catalog import Catalog, CatalogColumn, CatalogTable
from watershed.graph.falkordb_store import FalkorDBStore
from watershed.graph.kept import DATA_STAMP
from watershed.graph.store import GraphStore
from watershed.propagation import queries as tag_queries
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy

POLICY = default_policy()
ADMIN = Me(name="root", role="admin")
SQL = "SELECT user_id, email, phone FROM ods.user_profile WHERE dt = '2024-01-31'"
#: what a check reads from the graph, by query; a check's batched read (authz.reads) counts once
#: for each part it holds (its tables part brings their entries and tags)
READS = {
    graph_queries.CATALOG_ENTRIES: ("catalog",),
    GRANTS_OF_USER: ("grants",),
    tag_queries.CURRENT_TAGS: ("tags",),
    ADMINS: ("admins",),
}
PARTS = {TABLES_PART: ("catalog", "tags"), GRANTS_PART: ("grants",), ADMINS_PART: ("admins",)}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def graph(graph_store):
    from tests.api.conftest import load_sample_warehouse

    load_sample_warehouse(graph_store)
    tags = GraphTagStore(graph_store, POLICY)
    tags.set_tag("ods.user_profile.email", "pii", ["L3"], by="steward")
    grants = AuthzService(graph_store, POLICY).grants
    grants.add_role(ADMIN, "analyst")
    grants.assign(ADMIN, "analyst", "user", "ann")
    grants.grant(ADMIN, Grant(id="", role="analyst", actions=["select"], database="ods"))
    return graph_store


def counted_service(graph: GraphStore, monkeypatch, **options) -> tuple[AuthzService, Counter]:
    """A service whose graph reads are counted by kind (catalog, grants, tags)."""
    counts: Counter = Counter()
    read = graph.read

    def counting(query, params=None):
        kinds = READS.get(query) or [k for part, ks in PARTS.items() if part in query for k in ks]
        counts.update(kinds or ["other"])
        return read(query, params)

    monkeypatch.setattr(graph, "read", counting)
    return AuthzService(graph, POLICY, **options), counts


def masked(service: AuthzService, sql: str = SQL, user: str = "ann") -> list[str]:
    rewrite = service.rewrite(user, sql)
    assert rewrite.decision.allowed, rewrite.decision
    return [o.name for o in rewrite.outputs if o.masked]


def test_a_check_reads_the_graph_once_while_the_data_stamp_stays(graph, monkeypatch):
    service, counts = counted_service(graph, monkeypatch, reuse_seconds=60)
    before = graph.change_stamp(DATA_STAMP)
    for _ in range(4):
        assert masked(service) == ["email"]
    assert (counts["catalog"], counts["grants"], counts["tags"]) == (1, 1, 1)
    # every decision is still audited, and its entry (bookkeeping) leaves the stamp where it was
    assert len(entries(graph, action="authz.decision", limit=10)) == 4
    assert graph.change_stamp(DATA_STAMP) == before
    # a denial's suggestion (who may grant) is kept as well
    for _ in range(3):
        denied = service.check("bob", SQL)
        assert not denied.allowed and denied.missing[0].table == "ods.user_profile"
    assert (counts["grants"], counts["admins"]) == (2, 1)


def test_changes_from_another_process_count_at_the_next_check(graph, falkordb_server, monkeypatch):
    service, counts = counted_service(graph, monkeypatch, reuse_seconds=60)
    assert masked(service) == ["email"]
    other = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=graph.graph_name)
    try:
        # a steward's tag
        GraphTagStore(other, POLICY).set_tag("ods.user_profile.phone", "pii", ["L3"], by="steward")
        assert masked(service) == ["email", "phone"]
        # a grant revoked, then granted again
        grants = AuthzService(other, POLICY).grants
        (only,) = grants.grants_of("ann")
        grants.revoke(ADMIN, only.id)
        assert not service.check("ann", SQL).allowed
        grants.grant(ADMIN, Grant(id="", role="analyst", actions=["select"], database="ods"))
        assert service.check("ann", SQL).allowed
        # a column the kept catalog entry does not have yet
        with_column = "SELECT user_id, nickname FROM ods.user_profile"
        assert not service.check("ann", with_column).allowed
        entry = service.graph.catalog_entries(["ods.user_profile"])["ods.user_profile"]
        wider = entry.model_copy(update={"columns": [*entry.columns, CatalogColumn(name="nickname")]})
        other.upsert_catalog(Catalog(tables={"ods.user_profile": wider}))
        assert service.check("ann", with_column).allowed
    finally:
        other.close()
    assert counts["catalog"] >= 3 and counts["grants"] >= 4


def test_a_table_found_unknown_is_seen_once_a_load_brings_it(graph, falkordb_server, monkeypatch):
    service, counts = counted_service(graph, monkeypatch, reuse_seconds=60)
    sql = "SELECT id FROM ods.late_table"
    for _ in range(2):
        denied = service.check("ann", sql)
        assert not denied.allowed and "unknown table: ods.late_table" in denied.error
    assert counts["catalog"] == 1
    other = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=graph.graph_name)
    try:
        late = CatalogTable(name="ods.late_table", columns=[CatalogColumn(name="id")])
        other.upsert_catalog(Catalog(tables={"ods.late_table": late}))
    finally:
        other.close()
    assert service.check("ann", sql).allowed


@pytest.mark.parametrize("first", ["count", "write"])
def test_a_graph_nothing_wrote_yet_reads_as_empty_and_read_only(falkordb_server, first):
    store = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=f"test_never_written_{first}")
    try:
        stamp = store.change_stamp(DATA_STAMP)
        if first == "write":
            # refused on a graph that does not exist yet as on any other
            with pytest.raises(ResponseError, match=r"(?i)read-only"):
                store.read("CREATE (:Probe {id: 1})")
        assert store.read("MATCH (n) RETURN count(n)") == [[0]]
        assert store.stats().tables == 0
        # creating the graph's key is a write: it moves the stamp like any other
        assert store.change_stamp(DATA_STAMP) != stamp
    finally:
        store.clear()
        store.close()


def test_tokens_and_sessions_leave_the_data_stamp(graph_store):
    from watershed.api.service.accounts.rights import Me
    from watershed.api.service.accounts.store import ACCOUNTS_STAMP, AccountStore

    accounts = AccountStore(graph_store)
    accounts.add("erin", "viewer", None, actor="test")
    data = graph_store.change_stamp(DATA_STAMP)
    token = accounts.create_token("erin", actor="test")
    secret = accounts.open_session(Me(name="erin", role="viewer"), token.id, hours=1)
    assert secret is not None and accounts.session(secret) is not None
    before_logout = graph_store.change_stamp(ACCOUNTS_STAMP)
    accounts.close_session(secret)
    accounts.revoke_token("erin", token.id, actor="test")
    # the accounts stamp covers them, and it moved; no check's kept reads name them
    assert graph_store.change_stamp(ACCOUNTS_STAMP) != before_logout
    assert graph_store.change_stamp(DATA_STAMP) == data
    # a user's change is read by checks (who may grant): it moves the data stamp
    accounts.update("erin", actor="test", role="admin")
    assert graph_store.change_stamp(DATA_STAMP) != data


def test_a_failed_write_moves_the_stamp_and_bookkeeping_does_not(graph_store):
    stamp = graph_store.change_stamp(DATA_STAMP)
    graph_store.record("CREATE (:AuditEntry {id: 'probe'})")
    assert graph_store.change_stamp(DATA_STAMP) == stamp
    with pytest.raises(ResponseError, match=r"(?i)unknown function"):
        graph_store.execute("CREATE (n:Probe {id: 1}) SET n.x = no_such_function(1)")
    assert graph_store.change_stamp(DATA_STAMP) != stamp
    stamp = graph_store.change_stamp(DATA_STAMP)
    with pytest.raises(ResponseError, match=r"(?i)unknown function"):
        graph_store.write_all([("CREATE (:Probe {id: 2})", {}), ("RETURN no_such_function(1)", {})])
    assert graph_store.change_stamp(DATA_STAMP) != stamp
    assert graph_store.read("MATCH (n:Probe {id: 2}) RETURN count(n)") == [[1]]
    # a read may not write: what it wrote would stay hidden behind values kept from before
    with pytest.raises(ResponseError, match=r"(?i)read-only"):
        graph_store.read("CREATE (:Probe {id: 3})")


def test_a_change_around_the_stamp_counts_after_reuse_seconds(graph, monkeypatch):
    clock = Clock()
    service, counts = counted_service(graph, monkeypatch, reuse_seconds=30, clock=clock)
    assert masked(service) == ["email"]
    # a hand-written edit that bypasses Watershed's writes (no restamp)
    graph.record("MATCH (:Column {id: 'ods.user_profile.email'})-[g:TAGGED]->(:Tag) DELETE g")
    clock.now += 29
    assert masked(service) == ["email"]
    clock.now += 2
    assert masked(service) == []
    assert counts["tags"] == 2


@pytest.mark.parametrize("why", ["reuse-off", "no-stamps"])
def test_without_reuse_every_check_reads_the_graph(graph, monkeypatch, why):
    if why == "reuse-off":
        service, counts = counted_service(graph, monkeypatch, reuse_seconds=0)
    else:
        # a backend that keeps no stamps (Neo4j): GraphStore's own change_stamp
        monkeypatch.setattr(graph, "change_stamp", lambda name: GraphStore.change_stamp(graph, name))
        service, counts = counted_service(graph, monkeypatch, reuse_seconds=60)
    for _ in range(3):
        assert masked(service) == ["email"]
    assert (counts["catalog"], counts["grants"], counts["tags"]) == (3, 3, 3)


def test_a_table_wider_than_what_may_be_kept_is_read_every_time(graph, monkeypatch):
    from watershed.api.service.authz import service as service_module

    wide = CatalogTable(name="ods.wide", columns=[CatalogColumn(name=f"c{i}") for i in range(50)])
    graph.upsert_catalog(Catalog(tables={"ods.wide": wide}))
    monkeypatch.setattr(service_module, "KEPT_WEIGHT", 40)
    service, counts = counted_service(graph, monkeypatch, reuse_seconds=60)
    for _ in range(3):
        assert service.check("ann", "SELECT c1, c49 FROM ods.wide").allowed
    assert counts["catalog"] == 3


def test_checks_of_a_process_killed_right_after_them_are_all_audited(falkordb_server, graph_store):
    # a decision is answered only once its entry is written: a gateway process killed at once
    # after its checks leaves every one of them in the audit (writing entries without waiting for
    # the server's answer lost the last ones: a killed connection drops what the server has not
    # read yet, and what follows a write still running)
    child = f"""
import os, signal
from watershed.api.service.authz import AuthzService
from watershed.graph.falkordb_store import FalkorDBStore
from watershed.propagation.policy import default_policy
store = FalkorDBStore({falkordb_server.host!r}, {falkordb_server.port}, graph={graph_store.graph_name!r})
service = AuthzService(store, default_policy(), reuse_seconds=60)
for i in range(20):
    assert not service.check("killed", f"SELECT c{{i}} FROM nowhere.t{{i}}").allowed
os.kill(os.getpid(), signal.SIGKILL)
"""
    run = subprocess.run([sys.executable, "-c", child], timeout=120, capture_output=True, text=True)
    assert run.returncode == -signal.SIGKILL, run.stderr
    logged = entries(graph_store, actor="killed", action="authz.decision", limit=100)
    assert len(logged) == 20
    assert {e.after["query_hash"] for e in logged} == {
        hashlib.sha256(f"SELECT c{i} FROM nowhere.t{i}".encode()).hexdigest() for i in range(20)
    }


def test_a_warm_check_costs_one_round_trip_its_audit_entry(graph, monkeypatch):
    service = AuthzService(graph, POLICY, reuse_seconds=60)
    assert masked(service) == ["email"]
    sent: Counter = Counter()

    def counted(name: str):
        method = getattr(graph, name)

        def call(*args, **kwargs):
            sent[name] += 1
            return method(*args, **kwargs)

        return call

    for name in ("read", "change_stamp", "record", "queue_record"):
        monkeypatch.setattr(graph, name, counted(name))
    for _ in range(3):
        assert masked(service) == ["email"]
    # the stamp is confirmed by the round trip that queues the entry, not read before
    assert sent == Counter({"queue_record": 3})
    assert len(entries(graph, action="authz.decision", limit=10)) == 4


def test_a_check_made_under_a_moved_stamp_runs_again_and_only_its_answer_is_audited(
    graph, falkordb_server, monkeypatch
):
    service, counts = counted_service(graph, monkeypatch, reuse_seconds=60)
    assert service.check("ann", SQL).allowed
    other = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=graph.graph_name)
    try:
        grants = AuthzService(other, POLICY).grants
        (only,) = grants.grants_of("ann")
        grants.revoke(ADMIN, only.id)
    finally:
        other.close()
    # the kept grant still allowed it; the stamp had moved, so the check ran again on the graph
    assert not service.check("ann", SQL).allowed
    assert counts["grants"] == 2
    logged = entries(graph, actor="ann", action="authz.decision", limit=10)
    assert [e.after["allowed"] for e in logged] == [False, True]
