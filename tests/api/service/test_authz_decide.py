"""Decisions and masking decisions: a pure function of points, grants, tags and the policy.

Points come from `ingest.points.query_points` over the bundled sample catalog (no graph);
grants and tags are built here. The last tests run the whole service on a FalkorDB graph.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

from watershed.api.service.authz.decide import decide, parse_grants
from watershed.api.service.authz.masking import output_masks
from watershed.graph.authz import Cell, Grant, QueryPoints, RowCondition
from watershed.graph.catalog import Catalog
from watershed.ingest.points import query_points
from watershed.propagation.policy import default_policy
from watershed.propagation.rules import PROPAGATED, TagValue

POLICY = default_policy()
SAMPLES = resources.files("watershed.ingest") / "samples" / "warehouse"
CATALOG = Catalog.from_dict(json.loads((SAMPLES / "catalog.json").read_text()), source="catalog.json")
TAGS = {
    "ods.user_profile.email": {"pii": ["L3"], "pii_type": ["email"]},
    "ods.user_profile.ssn": {"pii": ["L4"], "pii_type": ["ssn"]},
    "ods.user_profile.city": {"pii": ["L2"]},
    "ods.app_event_log.app": {"app": ["douyin", "toutiao"]},
}


def points(sql: str) -> QueryPoints:
    return query_points(sql, CATALOG)


def grant(n: int, actions=("select",), **scope) -> Grant:
    return Grant(id=f"g{n}", role="r", actions=list(actions), **scope)


def check(sql: str, *grants: Grant, tags=TAGS):
    return decide("ann", points(sql), list(grants), tags, POLICY, admins_of=lambda db: [f"{db}_admin"])


def test_database_table_and_column_grants():
    sql = "SELECT user_id, email FROM ods.user_profile WHERE dt = '2024-01-31'"
    assert check(sql, grant(1, database="ods")).allowed
    assert check(sql, grant(1, table="ods.user_profile")).allowed
    assert check(sql, grant(1, table="ods.user_profile", columns=["user_id", "email"])).allowed
    denied = check(sql, grant(1, table="ods.user_profile", columns=["user_id"]), grant(2, database="dwd"))
    assert not denied.allowed
    [missing] = denied.missing
    assert missing.columns == ["ods.user_profile.email"]
    assert [c.text for c in missing.conditions] == ["dt = '2024-01-31'"]
    assert missing.suggestion.columns == ["email"]
    assert missing.suggestion.condition == "dt = '2024-01-31'"
    assert missing.suggestion.request_from == ["ods_admin"]
    assert "email" in missing.reason
    # insert alone, or unmask alone, is not select; all is
    assert not check(sql, grant(1, ["insert", "unmask"], database="ods")).allowed
    assert check(sql, grant(1, ["all"], database="ods")).allowed


def test_row_scoped_grants_need_implied_conditions():
    scoped = grant(1, table="ods.app_event_log", condition="app = 'douyin' AND dt >= '2024-01-01'")
    base = "SELECT user_id, event_type FROM ods.app_event_log WHERE "
    assert check(base + "app = 'douyin' AND dt = '2024-01-31'", scoped).allowed
    denied = check(base + "app IN ('douyin', 'toutiao') AND dt = '2024-01-31'", scoped)
    assert not denied.allowed and "not implied" in denied.missing[0].reason
    assert not check(base + "dt = '2024-01-31'", scoped).allowed
    # the join column counts as read: a join with the unscoped side needs it covered too
    joined = (
        "SELECT e.user_id FROM ods.app_event_log e JOIN ods.user_profile p ON e.user_id = p.user_id "
        "WHERE e.app = 'douyin' AND e.dt = '2024-01-31'"
    )
    decision = check(joined, scoped)
    assert [m.table for m in decision.missing] == ["ods.user_profile"]
    assert decision.missing[0].columns == ["ods.user_profile.user_id"]
    assert check(joined, scoped, grant(2, table="ods.user_profile", columns=["user_id"])).allowed


def test_tag_grants():
    sql = "SELECT user_id, city, email FROM ods.user_profile"
    low = grant(1, tag="pii<=L2")
    decision = check(sql, low)
    # untagged user_id and L2 city are covered, the L3 email is not
    assert [m.columns for m in decision.missing] == [["ods.user_profile.email"]]
    assert check(sql, low, grant(2, tag="pii_type=email")).allowed
    assert not check(sql, low, grant(2, tag="pii_type=email", database="dwd")).allowed
    assert not check(sql, grant(1, tag="pii<L2"), grant(2, tag="pii_type=email")).allowed
    apps = "SELECT app FROM ods.app_event_log"
    assert check(apps, grant(1, tag="app=douyin,toutiao")).allowed
    assert not check(apps, grant(1, tag="app=douyin")).allowed
    # an untagged column is not `app=` data
    assert not check("SELECT user_id FROM ods.app_event_log", grant(1, tag="app=douyin")).allowed


def test_cells_without_columns_writes_and_errors():
    count = "SELECT count(*) FROM ods.user_profile WHERE dt = '2024-01-31'"
    assert check(count, grant(1, table="ods.user_profile", columns=["city"])).allowed
    assert not check(count, grant(1, table="ods.user_profile", condition="dt = '2024-01-01'")).allowed
    assert not check(count).allowed
    insert = "INSERT OVERWRITE TABLE dwd.user_contact_df SELECT * FROM dwd.user_contact_df"
    read = grant(1, database="dwd")
    decision = check(insert, read)
    assert [(m.table, m.action) for m in decision.missing] == [("dwd.user_contact_df", "insert")]
    assert check(insert, read, grant(2, ["insert"], table="dwd.user_contact_df")).allowed
    assert not check(
        insert, read, grant(2, ["insert"], table="dwd.user_contact_df", columns=["user_id"])
    ).allowed
    unknown = check("SELECT a FROM ods.nope", grant(1, database="ods"))
    assert not unknown.allowed and unknown.error == "unknown table: ods.nope"
    unresolved = check("SELECT secret FROM ods.user_profile", grant(1, database="ods"))
    assert not unresolved.allowed and "secret" in unresolved.error


def test_missing_cells_are_bounded():
    cells = [
        Cell(
            table="ods.user_profile",
            columns=["ods.user_profile.email"],
            conditions=[RowCondition(column="dt", op="=", values=[str(i)], text=f"dt = '{i}'")],
        )
        for i in range(130)
    ]
    many = QueryPoints(
        query_hash="h", dialect="spark", kind="select", tables=["ods.user_profile"], cells=cells
    )
    decision = decide("ann", many, [], TAGS, POLICY, limit=100)
    assert len(decision.missing) == 100 and decision.more_missing == 30 and not decision.allowed


def tag_values(tags):
    return {
        node: {k: TagValue(k, frozenset(v), PROPAGATED) for k, v in t.items()} for node, t in tags.items()
    }


def masks(sql: str, *grants: Grant):
    found = points(sql)
    return output_masks(found, parse_grants(list(grants), POLICY), tag_values(TAGS), POLICY)


def test_masking_follows_the_function_effects():
    sql = (
        "SELECT user_id, upper(email) AS e, md5(email) AS h, count(phone) AS n, city, ssn, "
        "sha2(ssn, 256) AS k FROM ods.user_profile GROUP BY user_id, email, ssn, city"
    )
    by_name = {m.name: m for m in masks(sql)}
    assert not by_name["user_id"].masked
    assert by_name["e"].masked and by_name["e"].mask == "nullify" and by_name["e"].tags["pii"] == ["L3"]
    assert "ods.user_profile.email" in by_name["e"].why and "upper" in by_name["e"].why
    assert not by_name["h"].masked and by_name["h"].tags["pii"] == ["L1"]  # pseudonymised
    # an ssn is enumerable: its plain hash is reversed by hashing every candidate
    assert by_name["k"].masked and by_name["k"].tags["pii"] == ["L4"] and "sha2" in by_name["k"].why
    assert not by_name["n"].masked  # a count of phones carries no phone
    assert by_name["city"].masked and by_name["city"].mask == "sha256"
    assert by_name["ssn"].masked
    unmask = grant(1, ["unmask"], table="ods.user_profile", columns=["ssn"])
    by_name = {m.name: m for m in masks(sql, unmask)}
    assert not by_name["ssn"].masked and "g1" in by_name["ssn"].why
    assert by_name["e"].masked
    assert not any(m.masked for m in masks(sql, grant(1, ["all"], database="ods")))
    # a row-scoped unmask counts only when the query's rows imply it
    scoped = grant(1, ["unmask"], table="ods.user_profile", condition="dt = '2024-01-31'")
    assert {m.name: m.masked for m in masks("SELECT ssn FROM ods.user_profile", scoped)} == {"ssn": True}
    assert {
        m.name: m.masked for m in masks("SELECT ssn FROM ods.user_profile WHERE dt = '2024-01-31'", scoped)
    } == {"ssn": False}


@pytest.fixture
def sample_graph(graph_store):
    from tests.api.conftest import load_sample_warehouse
    from watershed.propagation.graph_store import GraphTagStore

    load_sample_warehouse(graph_store)
    tags = GraphTagStore(graph_store, POLICY)
    # effective tags as a propagation run writes them (fenced with its token)
    tags.raise_fence(1)
    tags.write_tags(tag_values(TAGS), "run-1", 1, "run-1#0")
    return graph_store


def test_service_end_to_end(sample_graph):
    from watershed.api.service.accounts.rights import ForbiddenError, Me
    from watershed.api.service.audit import entries
    from watershed.api.service.authz import AuthzService

    service = AuthzService(sample_graph, POLICY)
    admin = Me(name="root", role="admin")
    store = service.grants
    store.add_role(admin, "analyst")
    store.assign(admin, "analyst", "group", "analysts")
    store.add_to_group(admin, "analysts", "ann")
    store.grant(
        admin,
        Grant(
            id="",
            role="analyst",
            actions=["select"],
            table="ods.user_profile",
            condition="dt >= '2024-01-01'",
        ),
    )
    sql = "SELECT user_id, email, ssn FROM ods.user_profile WHERE dt = '2024-01-31' ORDER BY user_id"
    rewrite = service.rewrite("ann", sql)
    assert rewrite.decision.allowed
    assert [o.masked for o in rewrite.outputs] == [False, True, True]
    assert rewrite.sql is not None and "IF(FALSE" in rewrite.sql and sql in rewrite.sql
    denied = service.check("bob", sql)
    assert not denied.allowed and {m.table for m in denied.missing} == {"ods.user_profile"}
    broken = service.check("ann", "SELECT FROM WHERE")
    assert not broken.allowed and broken.error
    with pytest.raises(ForbiddenError):
        service.check("ann", sql, caller=Me(name="bob", role="viewer"))
    assert service.check("ann", sql, caller=Me(name="ann", role="viewer")).allowed
    logged = entries(sample_graph, action="authz.decision", limit=10)
    assert all(sql not in json.dumps(e.after) for e in logged)
    assert len(logged) == 4 and all(
        "2024-01-31" not in json.dumps(e.after) or e.after["missing"] for e in logged
    )
    assert (
        logged[-1].after["masked"] == ["email", "ssn"]
        and logged[-1].after["query_hash"] == rewrite.decision.query_hash
    )
