"""A check does each piece of work once: a read's join decisions, which stand on every output of
the read, are one source object per path in the points and are derived once per path when
masking (issue 41: the gateway's per-query cost; TPC-DS query 64 lists 2,406 such sources); a
query text is parsed and analysed once while the graph's data stamp stays (FalkorDB).
"""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources

import pytest

from watershed.api.service.accounts.rights import Me
from watershed.api.service.authz import AuthzService, masking
from watershed.api.service.authz.decide import parse_grants
from watershed.graph.authz import Grant
from watershed.graph.catalog import Catalog, CatalogColumn
from watershed.ingest.points import query_points
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy
from watershed.propagation.rules import PROPAGATED, TagValue

POLICY = default_policy()
ADMIN = Me(name="root", role="admin")
SAMPLES = resources.files("watershed.ingest") / "samples" / "warehouse"
CATALOG = Catalog.from_dict(json.loads((SAMPLES / "catalog.json").read_text()), source="catalog.json")
#: the log's rows looked up by a protected value: every output of the log is decided by it
LOOKUP = (
    "SELECT e.event_id, e.region, e.duration_ms FROM ods.app_event_log e "
    "JOIN ods.user_profile p ON p.email = e.payload"
)
TAGS = {
    node: {k: TagValue(k, frozenset(v), PROPAGATED) for k, v in t.items()}
    for node, t in {
        "ods.user_profile.email": {"pii": ["L3"], "pii_type": ["email"]},
        "ods.user_profile.ssn": {"pii": ["L4"], "pii_type": ["ssn"]},
    }.items()
}


def test_a_reads_join_decisions_are_one_source_per_path_for_all_its_outputs():
    points = query_points(LOOKUP, CATALOG)
    decided = [[s for s in column.sources if "decides:join" in s.functions] for column in points.columns]
    assert all(decided)
    first = decided[0]
    for others in decided[1:]:
        assert [(s.column, s.functions) for s in others] == [(s.column, s.functions) for s in first]
        # the same objects, validated once: not a copy per output
        assert all(a is b for a, b in zip(others, first, strict=True))


def test_masking_derives_each_join_path_once_and_masks_as_before(monkeypatch):
    derived: Counter = Counter()
    derive = masking.derive

    def counting(incoming, policy, **kwargs):
        if len(incoming) == 1:
            edge = incoming[0]
            derived[(edge.source, edge.kind, edge.functions)] += 1
        return derive(incoming, policy, **kwargs)

    monkeypatch.setattr(masking, "derive", counting)
    points = query_points(LOOKUP, CATALOG)
    outputs = masking.output_masks(points, parse_grants([], POLICY), TAGS, POLICY)
    # the lookup by email decides each output: masked, as a lookup keyed by a protected value is
    assert [(o.name, o.masked, o.tags.get("pii")) for o in outputs] == [
        ("event_id", True, ["L3"]),
        ("region", True, ["L3"]),
        ("duration_ms", True, ["L3"]),
    ]
    # the join's value path (the email as matched) is derived once for the three outputs
    assert derived[("ods.user_profile.email", "expression", ())] == 1
    # an unmask grant on the email unmasks them all
    unmask = Grant(id="g1", role="r", actions=["unmask"], table="ods.user_profile", columns=["email"])
    assert not any(
        o.masked for o in masking.output_masks(points, parse_grants([unmask], POLICY), TAGS, POLICY)
    )


@pytest.fixture
def sample_graph(graph_store):
    from tests.api.conftest import load_sample_warehouse

    load_sample_warehouse(graph_store)
    GraphTagStore(graph_store, POLICY).set_tag("ods.user_profile.email", "pii", ["L3"], by="steward")
    grants = AuthzService(graph_store, POLICY).grants
    grants.add_role(ADMIN, "analyst")
    grants.assign(ADMIN, "analyst", "user", "ann")
    grants.grant(ADMIN, Grant(id="", role="analyst", actions=["select"], database="ods"))
    return graph_store


def test_a_query_text_is_analysed_once_while_the_data_stamp_stays(sample_graph, monkeypatch):
    from watershed.api.service.authz import service as service_module

    parsed: Counter = Counter()
    parse_query = service_module.parse_query

    def counting(sql, **kwargs):
        parsed[sql] += 1
        return parse_query(sql, **kwargs)

    monkeypatch.setattr(service_module, "parse_query", counting)
    sql = "SELECT user_id, email FROM ods.user_profile WHERE dt = '2024-01-31'"
    wider_sql = "SELECT user_id, nickname FROM ods.user_profile"
    service = AuthzService(sample_graph, POLICY, reuse_seconds=60)
    for _ in range(3):
        rewrite = service.rewrite("ann", sql)
        assert [o.name for o in rewrite.outputs if o.masked] == ["email"]
        denied = service.check("ann", wider_sql)
        assert not denied.allowed and "nickname" in (denied.error or "")
    assert parsed == Counter({sql: 1, wider_sql: 1})
    # a write moves the stamp: the text is analysed again, on the catalog entry as it is now
    entry = sample_graph.catalog_entries(["ods.user_profile"])["ods.user_profile"]
    wider = entry.model_copy(update={"columns": [*entry.columns, CatalogColumn(name="nickname")]})
    sample_graph.upsert_catalog(Catalog(tables={"ods.user_profile": wider}))
    assert service.check("ann", wider_sql).allowed
    assert parsed[wider_sql] == 2
    # without kept analyses (or kept reads), every check parses its text
    every = AuthzService(sample_graph, POLICY, reuse_seconds=60, keep_analyses=False)
    for _ in range(2):
        assert every.check("ann", sql).allowed
    assert parsed[sql] == 3
