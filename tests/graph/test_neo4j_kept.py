"""The gateway's kept reads and its audit records on the live Neo4j (tests/support/neo4j.py): the
change stamps are graph nodes, a warm check is one auto-commit statement (RUN and PULL sent
together: one round trip) that finds the stamp unchanged and writes the decision's entry, and a
change made through another store counts at the next check. FalkorDB's server-side script does
the same in tests/api/service/test_authz_reuse.py."""

from __future__ import annotations

from tests.support.api_service import load_sample_warehouse
from tests.support.neo4j_counting import CountingDriver
from watershed.api.service.audit import entries
from watershed.api.service.authz.service import AuthzService
from watershed.graph.authz import Grant
from watershed.graph.kept import DATA_STAMP
from watershed.graph.neo4j_store import Neo4jStore
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy

POLICY = default_policy()
SQL = "SELECT user_id, email, phone FROM ods.user_profile WHERE dt = '2024-01-31'"


def test_a_warm_check_is_one_statement_and_a_change_elsewhere_counts(neo4j_server, neo4j_store):
    load_sample_warehouse(neo4j_store)
    GraphTagStore(neo4j_store, POLICY).set_tag("ods.user_profile.email", "pii", ["L3"], by="steward")
    admin = AuthzService(neo4j_store, POLICY)
    from watershed.api.service.accounts.rights import Me

    root = Me(name="root", role="admin")
    admin.grants.add_role(root, "analyst")
    admin.grants.assign(root, "analyst", "user", "ann")
    admin.grants.grant(root, Grant(id="", role="analyst", actions=["select"], database="ods"))

    counting = CountingDriver(neo4j_store.driver)
    neo4j_store.driver = counting
    service = AuthzService(neo4j_store, POLICY, reuse_seconds=60)
    assert service.check("ann", SQL).allowed  # cold: reads what it keeps
    before = neo4j_store.change_stamp(DATA_STAMP)
    counting.calls.clear()
    for _ in range(3):
        rewrite = service.rewrite("ann", SQL)
        assert [o.name for o in rewrite.outputs if o.masked] == ["email"]
    # each warm check: the one statement that confirms the stamp and writes its audit entry
    assert counting.calls == ["run"] * 3
    neo4j_store.driver = counting.driver
    assert len(entries(neo4j_store, action="authz.decision", limit=10)) == 4
    assert neo4j_store.change_stamp(DATA_STAMP) == before  # bookkeeping leaves the stamp

    # another process revokes the grant: the next check finds the stamp moved and reads again
    other = Neo4jStore.from_settings(neo4j_server.settings)
    try:
        grants = AuthzService(other, POLICY).grants
        (only,) = grants.grants_of("ann")
        grants.revoke(root, only.id)
    finally:
        other.close()
    assert not service.check("ann", SQL).allowed
    logged = entries(neo4j_store, actor="ann", action="authz.decision", limit=10)
    assert [e.after["allowed"] for e in logged][:2] == [False, True]
