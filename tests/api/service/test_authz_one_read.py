"""A check with nothing kept reads the graph once (issue 41: the gateway's fresh check): the
catalog entries of the query's tables with the current tags of the tables and their columns, the
user's grants and the admins come in one batched read (authz.reads), then the audit entry is
written; a view's definition costs one more read per level. The batched read answers what the
single reads answered, on FalkorDB and Neo4j."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from tests.support.api_service import load_sample_warehouse
from watershed.api.service.accounts.rights import Me
from watershed.api.service.accounts.store import AccountStore
from watershed.api.service.audit import entries
from watershed.api.service.authz import AuthzService
from watershed.api.service.authz.grants import ADMINS
from watershed.api.service.authz.reads import ADMINS_PART, GRANTS_PART, TABLES_PART, read_for_check
from watershed.graph.authz import Grant
from watershed.graph.catalog import Catalog, CatalogColumn, CatalogTable
from watershed.propagation.graph_store import GraphTagStore, encode_tags
from watershed.propagation.policy import default_policy
from watershed.propagation.rules import PROPAGATED, SEED, TagValue

POLICY = default_policy()
ROOT = Me(name="root", role="admin")
SQL = "SELECT user_id, email, phone FROM ods.user_profile WHERE dt = '2024-01-31'"
#: a view over the profile: its definition names the table, read once the view's entry is
VIEW = CatalogTable(
    name="ods.profile_view",
    columns=[CatalogColumn(name="user_id"), CatalogColumn(name="email")],
    view_sql="SELECT user_id, email FROM ods.user_profile",
)
#: what one check may send to the graph, counted per call
SENT = ("read", "change_stamp", "execute", "write_all", "record", "queue_record")


@pytest.fixture
def graph(backend_store):
    load_sample_warehouse(backend_store)
    backend_store.upsert_catalog(Catalog(tables={VIEW.name: VIEW}))
    GraphTagStore(backend_store, POLICY).set_tag("ods.user_profile.email", "pii", ["L3"], by="steward")
    AccountStore(backend_store).add("root", "admin", None, actor="test")  # who may grant
    grants = AuthzService(backend_store, POLICY).grants
    grants.add_role(ROOT, "analyst")
    grants.assign(ROOT, "analyst", "user", "ann")
    grants.grant(ROOT, Grant(id="", role="analyst", actions=["select"], database="ods"))
    return backend_store


def counting(graph, monkeypatch) -> Counter:
    sent: Counter = Counter()
    for name in SENT:
        method = getattr(graph, name)

        def call(*args, _name=name, _method=method, **kwargs):
            sent[_name] += 1
            return _method(*args, **kwargs)

        monkeypatch.setattr(graph, name, call)
    return sent


def test_a_fresh_check_is_one_graph_read_and_its_audit_entry(graph, monkeypatch):
    service = AuthzService(graph, POLICY)  # nothing kept: every check reads afresh
    sent = counting(graph, monkeypatch)
    for _ in range(2):
        rewrite = service.rewrite("ann", SQL)
        assert rewrite.decision.allowed
        assert [o.name for o in rewrite.outputs if o.masked] == ["email"]
    assert sent == Counter({"read": 2, "queue_record": 2})
    # a denial names who may grant: read in the same read
    sent.clear()
    denied = service.check("bob", SQL)
    assert not denied.allowed and denied.missing[0].suggestion.request_from == ["root"]
    assert sent == Counter({"read": 1, "queue_record": 1})
    # a view's definition names its tables: one more read for them
    sent.clear()
    rewrite = service.rewrite("ann", "SELECT user_id, email FROM ods.profile_view")
    assert [o.name for o in rewrite.outputs if o.masked] == ["email"]
    assert sent == Counter({"read": 2, "queue_record": 1})
    monkeypatch.undo()
    logged = entries(graph, action="authz.decision", limit=10)
    assert [e.after["allowed"] for e in logged] == [True, False, True, True]


def test_on_neo4j_the_fresh_check_sends_two_statements(neo4j_store):
    from tests.support.neo4j_counting import CountingDriver

    load_sample_warehouse(neo4j_store)
    grants = AuthzService(neo4j_store, POLICY).grants
    grants.add_role(ROOT, "analyst")
    grants.assign(ROOT, "analyst", "user", "ann")
    grants.grant(ROOT, Grant(id="", role="analyst", actions=["select"], database="ods"))
    service = AuthzService(neo4j_store, POLICY)
    counting_driver = CountingDriver(neo4j_store.driver)
    neo4j_store.driver = counting_driver
    try:
        assert service.check("ann", SQL).allowed
    finally:
        neo4j_store.driver = counting_driver.driver
    # the batched read and the audit entry, each one auto-commit statement (one round trip)
    assert counting_driver.calls == ["run", "run"]


def test_the_batched_read_answers_what_the_single_reads_answer(graph):
    tags = GraphTagStore(graph, POLICY)
    derived = {
        "pii": TagValue("pii", frozenset({"L2"}), PROPAGATED),
        "app": TagValue("app", frozenset({"douyin"}), PROPAGATED),
    }
    # derived tags as a run leaves them; seeds, manual tags and blocks over them
    for node in ("ods.user_profile.phone", "ods.user_profile.user_id", "ods.user_profile"):
        graph.execute("MATCH (n {id: $id}) SET n.tags = $tags", {"id": node, "tags": encode_tags(derived)})
    tags.set_tag("ods.user_profile.phone", "pii", ["L3"], by="steward")
    tags.set_tag("ods.user_profile.phone", "pii", ["L4"], by="rule", origin=SEED)
    tags.set_tag("ods.user_profile.user_id", "pii_type", ["phone"], by="rule", origin=SEED)
    tags.block("ods.user_profile.user_id", "app", by="steward")
    tags.set_tag("ods.user_profile", "app", ["toutiao"], by="steward")
    admin = AuthzService(graph, POLICY)
    admin.grants.grant(ROOT, Grant(id="", role="analyst", actions=["unmask"], tag="pii<=L2"))

    tables = ["ods.user_profile", VIEW.name, "ods.no_such_table"]
    read = read_for_check(graph, tables, "ann", with_admins=True)
    entries_ = graph.catalog_entries(tables)
    assert {t: r.entry if r else None for t, r in read.tables.items()} == {
        "ods.user_profile": entries_["ods.user_profile"],
        VIEW.name: entries_[VIEW.name],
        "ods.no_such_table": None,
    }
    profile = read.tables["ods.user_profile"]
    nodes = ["ods.user_profile", *(f"ods.user_profile.{c}" for c in profile.entry.all_columns)]
    assert profile.nodes == frozenset(nodes)
    assert profile.tags == tags.current_tags(nodes)
    assert profile.tags["ods.user_profile.phone"]["pii"].values == {"L3"}  # manual over the seed
    assert "app" not in profile.tags["ods.user_profile.user_id"]  # blocked
    assert read.grants == admin.grants.grants_of("ann") and len(read.grants) == 2
    assert read.admins == graph.read(ADMINS)
    # nothing asked, nothing read
    assert read_for_check(graph, []).tables == {}


def test_the_parts_are_neo4j_5_cypher():
    from tests.support.cypher_lint import lint

    statements = [TABLES_PART, GRANTS_PART, ADMINS_PART, f"{TABLES_PART} UNION ALL {GRANTS_PART}"]
    answers = lint([{"query": q, "params": sorted(set(re.findall(r"\$(\w+)", q)))} for q in statements])
    assert [a["errors"] for a in answers] == [[]] * len(statements), answers
