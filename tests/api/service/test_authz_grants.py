"""Data roles, groups and grants in the graph: validation naming the input, idempotence, delegated
administration, and an audit entry for every change."""

from __future__ import annotations

import pytest

from tests.api.conftest import load_sample_warehouse
from watershed.api.service.accounts.rights import ForbiddenError, Me
from watershed.api.service.audit import entries
from watershed.api.service.authz import AuthzError, GrantStore, UnknownGrantError, parse_actions
from watershed.graph.authz import Grant
from watershed.propagation.policy import default_policy

ROOT = Me(name="root", role="admin")
ODS_ADMIN = Me(name="ods_admin", role="admin", databases=["ods"])


@pytest.fixture
def store(graph_store):
    load_sample_warehouse(graph_store)
    return GrantStore(graph_store, default_policy())


def g(role="analyst", actions=("select",), **scope) -> Grant:
    return Grant(id="", role=role, actions=list(actions), **scope)


def test_grant_is_idempotent_and_audited(store):
    assert store.add_role(ROOT, "analyst") is True
    assert store.add_role(ROOT, "analyst") is False
    first, new = store.grant(
        ROOT, g(table="ODS.User_Profile", columns=["email", "user_id"], condition="dt >= '2024-01-01'")
    )
    assert new and first.id.startswith("g") and first.table == "ods.user_profile"
    assert first.columns == ["email", "user_id"] and first.created_by == "root"
    again, new = store.grant(
        ROOT, g(table="ods.user_profile", columns=["user_id", "email"], condition="dt >= '2024-01-01'")
    )
    assert not new and again.id == first.id
    assert [x.id for x in store.grants()] == [first.id]
    tag, _ = store.grant(ROOT, g(actions=["unmask", "select", "select"], tag="pii <= L2"))
    assert tag.tag == "pii<=L2" and tag.actions == ["select", "unmask"]
    assert {x.id for x in store.grants(role="analyst")} == {first.id, tag.id}
    assert store.revoke(ROOT, first.id).id == first.id
    with pytest.raises(UnknownGrantError, match=first.id):
        store.revoke(ROOT, first.id)
    actions = [e.action for e in entries(store.graph, action="authz.", limit=20)]
    assert actions == ["authz.revoke", "authz.grant", "authz.grant", "authz.role.add"]


@pytest.mark.parametrize(
    ("grant", "message"),
    [
        (g(table="ods.nope"), "table ods.nope: not in the graph"),
        (g(table="nope"), "expected db.table"),
        (g(table="ods.user_profile", columns=["emial"]), "column 'emial'"),
        (g(table="ods.user_profile", condition="app = 'douyin'"), "no column 'app'"),
        (g(table="ods.user_profile", condition="dt = 'a' OR dt = 'b'"), "condition"),
        (g(tag="pii<=L9"), "pii takes one level of L1, L2, L3, L4"),
        (g(tag="app<=douyin"), "not a sensitivity family"),
        (g(tag="app=tiktok"), "tiktok"),
        (g(database="nodb"), "database nodb"),
        (g(database="ods", tag="pii<=L2", table="ods.user_profile"), "one scope"),
        (g(), "needs a scope"),
        (g(columns=["a"], database="ods"), "need a table"),
    ],
)
def test_validation_names_the_input(store, grant, message):
    store.add_role(ROOT, "analyst")
    with pytest.raises(AuthzError, match=message.replace("(", r"\(")):
        store.grant(ROOT, grant)
    assert store.grants() == []


def test_actions():
    assert parse_actions("all,select, SELECT") == ["select", "all"]
    with pytest.raises(AuthzError, match="action 'delete'"):
        parse_actions(["select", "delete"])
    with pytest.raises(AuthzError, match="actions"):
        parse_actions("")


def test_unknown_role(store):
    with pytest.raises(UnknownGrantError, match="data role ghost"):
        store.grant(ROOT, g(role="ghost", database="ods"))


def test_delegated_administration(store):
    store.add_role(ODS_ADMIN, "ods_reader")
    ods, _ = store.grant(ODS_ADMIN, g(role="ods_reader", table="ods.user_profile"))
    with pytest.raises(ForbiddenError, match="database dwd"):
        store.grant(ODS_ADMIN, g(role="ods_reader", database="dwd"))
    with pytest.raises(ForbiddenError, match="all databases"):
        store.grant(ODS_ADMIN, g(role="ods_reader", tag="pii<=L2"))
    assert store.grant(ODS_ADMIN, g(role="ods_reader", tag="pii<=L2", database="ods"))[1]
    with pytest.raises(ForbiddenError):
        store.grant(Me(name="s", role="steward"), g(role="ods_reader", database="ods"))
    # a role reaching another database is not a limited admin's to hand on or delete
    store.add_role(ROOT, "wide")
    store.grant(ROOT, g(role="wide", database="dwd"))
    with pytest.raises(ForbiddenError, match="dwd"):
        store.assign(ODS_ADMIN, "wide", "user", "ann")
    with pytest.raises(ForbiddenError, match="dwd"):
        store.delete_role(ODS_ADMIN, "wide")
    assert store.assign(ODS_ADMIN, "ods_reader", "user", "ann") is True
    with pytest.raises(ForbiddenError):
        store.revoke(ODS_ADMIN, store.grants(role="wide")[0].id)
    assert store.revoke(ODS_ADMIN, ods.id).table == "ods.user_profile"


def test_membership_and_role_deletion(store):
    store.add_role(ROOT, "analyst")
    db, _ = store.grant(ROOT, g(database="ods"))
    assert store.assign(ROOT, "analyst", "group", "team") is True
    assert store.assign(ROOT, "analyst", "group", "team") is False
    assert store.grants_of("ann") == []
    assert store.add_to_group(ROOT, "team", "ann") is True
    assert store.add_to_group(ROOT, "team", "ann") is False
    assert [x.id for x in store.grants_of("ann")] == [db.id]
    assert store.assign(ROOT, "analyst", "user", "bob")
    assert [x.id for x in store.grants_of("bob")] == [db.id]
    [role] = store.roles()
    assert (role.name, role.users, role.groups) == ("analyst", ["bob"], ["team"]) and role.created_at
    assert store.groups() == {"team": ["ann"]}
    store.remove_from_group(ROOT, "team", "ann")
    assert store.grants_of("ann") == []
    with pytest.raises(UnknownGrantError, match="not in group team"):
        store.remove_from_group(ROOT, "team", "ann")
    with pytest.raises(UnknownGrantError, match="not assigned"):
        store.unassign(ROOT, "analyst", "user", "ann")
    removed = store.delete_role(ROOT, "analyst")
    assert [x.id for x in removed] == [db.id]
    assert store.grants() == [] and store.roles() == [] and store.grants_of("bob") == []
    with pytest.raises(UnknownGrantError):
        store.delete_role(ROOT, "analyst")
    deleted = entries(store.graph, action="authz.role.delete", limit=1)[0]
    assert deleted.before["grants"][0]["id"] == db.id and deleted.actor == "root"
    with pytest.raises(AuthzError, match="role name"):
        store.add_role(ROOT, "two words")


def test_statements_are_neo4j_5_cypher():
    """The store's statements pass Neo4j's own parser too (tests/cypher/lint.mjs), with their parameters."""
    import re

    from tests.support.cypher_lint import lint
    from watershed.api.service.authz import grants

    statements = [v for k, v in vars(grants).items() if k.isupper() and isinstance(v, str) and "MATCH" in v]
    assert len(statements) >= 20
    answers = lint([{"query": q, "params": sorted(set(re.findall(r"\$(\w+)", q)))} for q in statements])
    assert [a["errors"] for a in answers] == [[]] * len(statements), answers


def test_a_view_is_not_granted_on(store):
    from watershed.graph.catalog import Catalog, CatalogTable

    view = CatalogTable(
        name="ods.profile_v",
        columns=[{"name": "user_id", "type": "bigint"}],
        view_sql="SELECT user_id FROM ods.user_profile",
    )
    store.graph.upsert_catalog(Catalog(default_database="ods", tables={"ods.profile_v": view}))
    store.add_role(ROOT, "analyst")
    with pytest.raises(AuthzError, match=r"ods\.profile_v: a view"):
        store.grant(ROOT, g(table="ods.profile_v"))
