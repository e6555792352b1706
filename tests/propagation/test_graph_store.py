"""The graph-backed TagStore reaches the same fixpoint as the in-process reference, on FalkorDB and on
a live Neo4j (`backend_store`, tests/support/neo4j.py)."""

from __future__ import annotations

import pytest

from tests.support.engine_lineage import POLICY, TASKS, build
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.propagation.engine import (
    StaleTokenError,
    compute_batch,
    local_batches,
    propagate_full,
    propagate_incremental,
    start_full,
)
from watershed.propagation.graph_store import GraphTagStore, UnknownNodeError, decode_tags, encode_tags
from watershed.propagation.rules import SEED


def load(backend_store, tasks=TASKS) -> GraphTagStore:
    items = []
    for task_id, sql in tasks.items():
        task = SqlTask(task_id=task_id, sql=sql)
        items.append((task, extract_lineage(task)))
    backend_store.upsert_tasks(items)
    store = GraphTagStore(backend_store, POLICY)
    store.set_tag("ods.user.email", "pii", ["L3"], by="test", origin=SEED)
    store.set_tag("ods.user.email", "pii_type", ["email"], by="test", origin=SEED)
    store.set_tag("ods.user.phone", "pii", ["L4"], by="test", origin=SEED)
    store.set_tag("ods.user", "app", ["douyin", "toutiao"], by="test", origin=SEED)
    return store


def full(store, token=1, batch_size=500):
    store.raise_fence(token)
    return propagate_full(
        store,
        local_batches(store, POLICY, f"run-{token}", token),
        run_id=f"run-{token}",
        token=token,
        batch_size=batch_size,
    )


def test_same_fixpoint_as_the_reference(backend_store):
    store = load(backend_store)
    full(store, batch_size=3)
    reference = build()
    propagate_full(reference, local_batches(reference, POLICY, "r", 1), run_id="r", token=1)
    found = store.tags_of(reference.tags)
    assert found == reference.tags
    assert store.tagged_nodes() == set(reference.tags)


def test_tags_are_mirrored_as_tagged_edges(backend_store):
    store = load(backend_store)
    full(store)
    rows = backend_store.read(
        "MATCH (c:Column {id: 'dwd.user.phone_h'})-[g:TAGGED]->(t:Tag) RETURN t.id, g.origin, g.`from`, g.rule, g.hops"
    )
    # t_self also overwrites dwd.user from itself; that self-edge adds nothing to the provenance
    assert rows == [["pii=L1", "propagated", ["ods.user.phone"], ["downgrade:md5->L1"], 1]]


def test_a_stale_token_cannot_write(backend_store):
    store = load(backend_store)
    full(store, token=5)
    with pytest.raises(StaleTokenError):
        store.write_tags({"dwd.user.email": {}}, "old-run", 4, "old-run#0")
    assert "pii" in store.tags_of(["dwd.user.email"])["dwd.user.email"]


def test_incremental_retraction_after_a_task_changes(backend_store):
    store = load(backend_store)
    full(store, token=1)
    since = store.now()
    changed = {"t_dws": "INSERT OVERWRITE TABLE dws.user_stat SELECT app, uid AS any_email FROM dwd.user"}
    task = SqlTask(task_id="t_dws", sql=changed["t_dws"])
    backend_store.upsert_tasks([(task, extract_lineage(task))])
    nodes, _created = store.changed_since(since)
    assert "dws.user_stat.any_email" in nodes and "dwd.user.email" not in nodes
    store.raise_fence(2)
    propagate_incremental(store, nodes, local_batches(store, POLICY, "run-2", 2), run_id="run-2", token=2)
    tags = store.tags_of(["dws.user_stat.any_email", "ads.report.any_email", "dwd.user.email"])
    assert "pii" not in tags.get("dws.user_stat.any_email", {})
    assert "pii" not in tags.get("ads.report.any_email", {})
    assert tags["dwd.user.email"]["pii"].values == {"L3"}


def test_steward_commands_name_unknown_nodes(backend_store):
    store = load(backend_store)
    with pytest.raises(UnknownNodeError, match=r"ods\.nope\.col: no such column"):
        store.set_tag("ods.nope.col", "pii", ["L3"], by="me")
    store.block("dwd.user.email", "pii", by="alice")
    own = store.own_tags("dwd.user.email")
    assert [(o["type"], o["key"], o["by"]) for o in own] == [("BLOCKS", "pii", "alice")]
    assert store.unblock("dwd.user.email", "pii") and not store.unblock("dwd.user.email", "pii")


def test_rule_seeds_follow_the_policy(backend_store):
    store = load(backend_store)
    assert store.sync_rule_seeds() > 0
    assert store.sync_rule_seeds() == 0  # idempotent
    own = store.own_tags("ods.user.phone")
    assert {(o["origin"], o["key"], o["value"], o["rule"]) for o in own} >= {
        ("seed", "pii_type", "phone", "*phone*")
    }
    # a computed column gets its tags from its SQL, not from its name
    assert store.own_tags("dwd.user.email") == []
    full(store)
    # md5 of a phone (an enumerable type, seeded by rule) keeps L3: derived from the SQL
    pii = store.tags_of(["dwd.user.phone_h"])["dwd.user.phone_h"]["pii"]
    assert pii.values == {"L3"} and pii.origin == "propagated"
    assert [p.rule for p in pii.provenance] == ["keep:md5 of enumerable phone"]


def test_rule_seeds_of_some_columns_equal_those_of_a_full_sync(backend_store, monkeypatch):
    """The scoped sync looks lineage up a batch of ids at a time; the full one a batch of tables at a time."""
    import watershed.propagation.graph_store as module

    store = load(backend_store)
    columns = sorted(row[0] for row in backend_store.read("MATCH (n:Column) RETURN n.id"))
    monkeypatch.setattr(module, "DERIVED_LOOKUP_BATCH", 2)  # several lookups on this small graph
    assert store.sync_rule_seeds(columns) > 0
    scoped = {c: store.own_tags(c) for c in columns}
    assert store.own_tags("dwd.user.email") == []  # computed by SQL: never seeded by name
    assert store.sync_rule_seeds() == 0  # the full sync finds nothing to change
    assert {c: store.own_tags(c) for c in columns} == scoped


def test_tag_json_round_trip():
    reference = build()
    propagate_full(reference, local_batches(reference, POLICY, "r", 1), run_id="r", token=1)
    for tags in reference.tags.values():
        assert decode_tags(encode_tags(tags)) == tags


def test_a_repeated_batch_still_reports_what_its_layer_changed(backend_store):
    store = load(backend_store)
    store.raise_fence(1)
    start = start_full(store, "run-1", 1)
    first = compute_batch(store, POLICY, start, "run-1", 1, layer=0)
    again = compute_batch(store, POLICY, start, "run-1", 1, layer=0)
    assert first and set(first) <= set(again)
