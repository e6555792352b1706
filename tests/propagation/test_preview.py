"""The preview of a tag change (propagation/preview.py, api/service/tag_preview.py) is exact: the same
change made for real and followed by a real incremental propagation run on FalkorDB changes the same
(node, key, value) set, for a set, a block (of a family: blocking pii takes pii_type too), an unset
and an unblock, on the sample warehouse and on the hand-made one with a lineage cycle. And it
writes nothing."""

from __future__ import annotations

import pytest

from tests.support import rules_warehouse
from tests.support.api_service import load_sample_warehouse
from watershed.api.service import tag_changes
from watershed.api.service.tag_preview import (
    NothingToTakeBackError,
    TagChange,
    TagPreview,
    preview_change,
)
from watershed.propagation.coordinator import local_runner, propagate
from watershed.propagation.graph_store import GraphTagStore, UnknownNodeError
from watershed.propagation.policy import UnknownTagError, default_policy
from watershed.propagation.run_state import RunState
from watershed.propagation.settings import PropagationSettings

POLICY = default_policy()

Triples = set[tuple[str, str, str]]


def _settings(graph_store, celery_redis) -> PropagationSettings:
    return PropagationSettings(
        falkordb_port=graph_store.client.connection.connection_pool.connection_kwargs["port"],
        graph_name=graph_store.graph_name,
        celery_broker=f"redis://127.0.0.1:{celery_redis.port}/0",
    )


def _run(graph_store, celery_redis, *, full: bool = False) -> None:
    settings = _settings(graph_store, celery_redis)
    state = RunState.from_url(settings.broker_url(), settings.graph_name)
    propagate(graph_store, POLICY, state, local_runner, full=full, settings=settings, batch_size=3)


def _snapshot(store: GraphTagStore) -> Triples:
    """Every (node, key, value) the graph's nodes hold as the last run left them."""
    tags = store.tags_of(store.tagged_nodes())
    return {
        (node, key, value)
        for node, found in tags.items()
        for key, tag in found.items()
        for value in tag.values
    }


def _previewed(found: TagPreview) -> Triples:
    return {
        (item.node, item.key, value)
        for group in found.groups
        for item in group.items
        for value in set(item.before) ^ set(item.after)
    }


def _make(store: GraphTagStore, change: TagChange) -> None:
    if change.action == "set":
        tag_changes.set_tags(store, change.node, {change.key: change.values}, by="steward")
    elif change.action == "unset":
        assert tag_changes.unset_tags(store, change.node, [change.key], actor="steward")
    elif change.action == "block":
        tag_changes.block(store, change.node, change.key, by="steward")
    else:
        assert tag_changes.unblock(store, change.node, change.key, actor="steward")


def _check_exact(graph_store, celery_redis, changes: list[TagChange]) -> None:
    store = GraphTagStore(graph_store, POLICY, batch_size=3)
    for change in changes:
        before = _snapshot(store)
        found = preview_change(store, change)
        assert _snapshot(store) == before, f"the preview of {change} wrote tags"
        _make(store, change)
        _run(graph_store, celery_redis)
        applied = before ^ _snapshot(store)
        assert applied, f"{change} changes nothing: a test that cannot tell"
        assert _previewed(found) == applied, change
        assert found.total == len({(n, k) for n, k, _ in applied})
        assert found.columns == len({n for n, _, _ in applied if n.count(".") == 2})


SAMPLE_CHANGES = [
    # a level on a column whose value is copied downstream (coalesce keeps it)
    TagChange(node="ods.user_profile.city", action="set", key="pii", values=["L4"]),
    # a family block: pii and pii_type both stop here and downstream
    TagChange(node="dwd.user_contact_df.email", action="block", key="pii"),
    TagChange(node="ods.user_profile.city", action="unset", key="pii"),
    TagChange(node="dwd.user_contact_df.email", action="unblock", key="pii"),
    # a business value on a table: table edges carry it on
    TagChange(node="ods.app_event_log", action="set", key="app", values=["douyin"]),
]

CYCLE_CHANGES = [
    # the email reaches the cycle cyc.a -> cyc.b -> cyc.c -> cyc.a: a block inside it must retract
    # what only went round the cycle
    TagChange(node="cyc.a.x", action="block", key="pii"),
    TagChange(node="ods.users.uid", action="set", key="pii", values=["L2"]),
    TagChange(node="cyc.a.x", action="unblock", key="pii"),
    TagChange(node="ods.users.uid", action="unset", key="pii"),
    TagChange(node="ods.users.ssn", action="block", key="pii_type"),
]


def test_the_preview_is_what_a_real_run_of_the_change_does_on_the_sample_warehouse(graph_store, celery_redis):
    load_sample_warehouse(graph_store)
    _run(graph_store, celery_redis, full=True)
    _check_exact(graph_store, celery_redis, SAMPLE_CHANGES)


def test_the_preview_is_exact_through_a_lineage_cycle(graph_store, celery_redis):
    rules_warehouse.load(graph_store)
    _run(graph_store, celery_redis, full=True)
    _check_exact(graph_store, celery_redis, CYCLE_CHANGES)


def test_a_family_block_previews_its_type_key_too(graph_store, celery_redis):
    load_sample_warehouse(graph_store)
    _run(graph_store, celery_redis, full=True)
    store = GraphTagStore(graph_store, POLICY)
    found = preview_change(store, TagChange(node="dwd.user_contact_df.email", action="block", key="pii"))
    keys = {(item.node, item.key) for group in found.groups for item in group.items}
    assert {
        ("dwd.user_contact_df.email", "pii"),
        ("dwd.user_contact_df.email", "pii_type"),
        ("ads.app_user_rank_7d.email", "pii"),
        ("ads.app_user_rank_7d.email", "pii_type"),
    } <= keys
    assert all(not item.after for group in found.groups for item in group.items)
    assert found.tables == len(found.groups) == len({node.rpartition(".")[0] for node, _ in keys})


def test_the_preview_is_bounded_and_refuses_what_the_change_would(graph_store, celery_redis):
    load_sample_warehouse(graph_store)
    _run(graph_store, celery_redis, full=True)
    store = GraphTagStore(graph_store, POLICY)
    change = TagChange(node="ods.user_profile.email", action="block", key="pii")
    whole = preview_change(store, change)
    assert whole.total >= 4 and not whole.truncated
    first = preview_change(store, change, limit=2)
    assert first.total == whole.total and first.truncated
    assert sum(len(group.items) for group in first.groups) == 2
    # the totals count what is not listed: a group's count, the tables
    assert first.tables == whole.tables and first.columns == whole.columns
    assert all(group.changes >= len(group.items) for group in first.groups)
    with pytest.raises(UnknownNodeError, match=r"ods\.nope\.x"):
        preview_change(store, TagChange(node="ods.nope.x", action="block", key="pii"))
    with pytest.raises(UnknownTagError, match="L9"):
        preview_change(store, TagChange(node="ods.user_profile.city", action="set", key="pii", values=["L9"]))
    with pytest.raises(NothingToTakeBackError, match="no steward's pii tag"):
        preview_change(store, TagChange(node="ods.user_profile.city", action="unset", key="pii"))
    with pytest.raises(NothingToTakeBackError, match="not blocked"):
        preview_change(store, TagChange(node="ods.user_profile.city", action="unblock", key="pii"))
