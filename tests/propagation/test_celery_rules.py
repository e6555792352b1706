"""One test per propagation rule, through real Celery workers against FalkorDB, on a hand-made warehouse."""

from __future__ import annotations

import pytest

from tests.support.rules_warehouse import POLICY, load, run
from watershed.propagation.graph_store import GraphTagStore


@pytest.fixture
def warehouse(graph_store, celery_redis, workers):
    """The hand-made warehouse, seeded (policy name rules for ssn/email/phone, stewards' app values) and propagated.

    Derived columns have names the policy's rules (`*ssn*`, `*email*`, `*phone*`) do not match, so
    their tags can only come from propagation.
    """
    load(graph_store)
    tags = GraphTagStore(graph_store, POLICY)
    tags.set_tag("ods.users", "app", ["douyin", "toutiao", "xigua"], by="steward")
    tags.set_tag("ods.users.app", "app", ["douyin", "toutiao", "xigua"], by="steward")
    record = run(graph_store, celery_redis)
    assert record.status == "done" and record.mode == "full" and not record.stopped_at_cap
    return tags


def values(tags: GraphTagStore, node: str, key: str) -> set[str] | None:
    tag = tags.tags_of([node]).get(node, {}).get(key)
    return None if tag is None else set(tag.values)


def test_direct_copy_inherits(warehouse):
    assert values(warehouse, "dwd.users.tax_id", "pii") == {"L4"}
    assert values(warehouse, "dwd.users.tax_id", "pii_type") == {"ssn"}


def test_value_preserving_expression_keeps(warehouse):
    assert values(warehouse, "dwd.users.mail_u", "pii") == {"L3"}  # upper(email)
    assert values(warehouse, "dws.stats.any_id", "pii") == {"L4"}  # max(tax_id)


def test_count_drops(warehouse):
    assert values(warehouse, "dws.stats.n_distinct", "pii") is None


def test_plain_hash_of_an_enumerable_type_keeps_its_level(warehouse):
    # md5 of a phone number is reversed by hashing every number: it stays L3 (was L1)
    assert values(warehouse, "dwd.users.contact_h", "pii") == {"L3"}


@pytest.mark.parametrize(
    ("table", "expected"),
    [("dwd.douyin", {"douyin"}), ("dwd.dy_tt", {"douyin", "toutiao"}), ("dwd.by_id", {"douyin"})],
    ids=["equals", "in-list", "value-map"],
)
def test_filter_narrows_business_values(warehouse, table, expected):
    assert values(warehouse, table, "app") == expected
    assert values(warehouse, f"{table}.app", "app") == expected


def test_union_merges(warehouse):
    assert values(warehouse, "dws.all_apps", "app") == {"douyin", "xigua"}
    assert values(warehouse, "dws.all_apps.app", "app") == {"douyin", "xigua"}


def test_join_merges(warehouse):
    assert values(warehouse, "dws.joined", "app") == {"douyin", "xigua"}
    assert values(warehouse, "dws.joined.app_a", "app") == {"douyin"}


def test_weak_reference_carries_nothing(warehouse):
    assert values(warehouse, "dws.weak.uid", "pii") is None
    assert values(warehouse, "dws.weak", "pii") is None


def test_self_overwrite_and_cycle_terminate(warehouse):
    for node in ("cyc.a.x", "cyc.b.x", "cyc.c.x"):
        assert values(warehouse, node, "pii") == {"L3"}
    assert values(warehouse, "dwd.users.tax_id", "pii") == {"L4"}


def test_block_stops_a_tag(warehouse, graph_store, celery_redis):
    warehouse.block("dwd.users.tax_id", "pii", by="steward")
    record = run(graph_store, celery_redis)
    assert record.mode == "incremental"
    assert values(warehouse, "dwd.users.tax_id", "pii") is None
    assert values(warehouse, "dws.stats.any_id", "pii") is None  # nothing flows past the block
    # a block of the family stops its type key too, here and downstream
    assert values(warehouse, "dwd.users.tax_id", "pii_type") is None
    assert values(warehouse, "dws.stats.any_id", "pii_type") is None
    assert values(warehouse, "ods.users.ssn", "pii_type") == {"ssn"}  # upstream of the block


def test_blocking_a_type_key_leaves_the_family_level(warehouse, graph_store, celery_redis):
    warehouse.block("dwd.users.tax_id", "pii_type", by="steward")
    run(graph_store, celery_redis)
    assert values(warehouse, "dwd.users.tax_id", "pii_type") is None
    assert values(warehouse, "dws.stats.any_id", "pii_type") is None
    assert values(warehouse, "dwd.users.tax_id", "pii") == {"L4"}


def test_manual_tag_overrides(warehouse, graph_store, celery_redis):
    warehouse.set_tag("dwd.users.tax_id", "pii", ["L2"], by="steward")
    run(graph_store, celery_redis)
    assert values(warehouse, "dwd.users.tax_id", "pii") == {"L2"}
    assert values(warehouse, "dws.stats.any_id", "pii") == {"L2"}


def test_retraction_after_a_task_changes(warehouse, graph_store, celery_redis):
    changed = "INSERT OVERWRITE TABLE dwd.users SELECT uid, uid AS tax_id, upper(email) AS mail_u, md5(phone) AS contact_h, app FROM ods.users"
    load(graph_store, {"t_users": changed})
    record = run(graph_store, celery_redis)
    assert record.mode == "incremental" and record.cone < 40
    assert values(warehouse, "dwd.users.tax_id", "pii") is None
    assert values(warehouse, "dws.stats.any_id", "pii") is None
    assert values(warehouse, "dwd.users.mail_u", "pii") == {"L3"}


def test_retraction_after_a_seed_is_removed(warehouse, graph_store, celery_redis):
    warehouse.set_tag("ods.users.uid", "pii", ["L2"], by="steward")
    run(graph_store, celery_redis)
    assert values(warehouse, "dws.all_apps.uid", "pii") == {"L2"}
    assert warehouse.unset_tag("ods.users.uid", "pii")
    run(graph_store, celery_redis)
    for node in ("ods.users.uid", "dwd.users.uid", "dws.all_apps.uid", "dws.joined.uid"):
        assert values(warehouse, node, "pii") is None


def test_rerun_without_changes_touches_nothing(warehouse, graph_store, celery_redis):
    record = run(graph_store, celery_redis)
    assert record.mode == "incremental" and record.cone == 0 and not record.layers
