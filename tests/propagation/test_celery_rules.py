"""One test per propagation rule, through real Celery workers against FalkorDB, on a hand-made warehouse."""

from __future__ import annotations

import pytest

from watershed.api.service.celery_app import app_for
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.propagation.coordinator import celery_runner, propagate
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy
from watershed.propagation.run_state import RunState
from watershed.propagation.settings import PropagationSettings

POLICY = default_policy()

TASKS = {
    "t_users": """
        INSERT OVERWRITE TABLE dwd.users
        SELECT uid, ssn AS tax_id, upper(email) AS mail_u, md5(phone) AS contact_h, app FROM ods.users""",
    "t_self": "INSERT OVERWRITE TABLE dwd.users SELECT uid, tax_id, mail_u, contact_h, app FROM dwd.users",
    "t_count": "INSERT OVERWRITE TABLE dws.stats SELECT app, count(DISTINCT tax_id) AS n_distinct, max(tax_id) AS any_id FROM dwd.users GROUP BY app",
    "t_eq": "INSERT OVERWRITE TABLE dwd.douyin SELECT uid, app FROM ods.users WHERE app = 'douyin'",
    "t_in": "INSERT OVERWRITE TABLE dwd.dy_tt SELECT uid, app FROM ods.users WHERE app IN ('douyin', 'toutiao')",
    "t_map": "INSERT OVERWRITE TABLE dwd.by_id SELECT uid, app FROM ods.users WHERE app_id = 1128",
    "t_xigua": "INSERT OVERWRITE TABLE dwd.xigua SELECT uid, app FROM ods.users WHERE app = 'xigua'",
    "t_union": """
        INSERT OVERWRITE TABLE dws.all_apps
        SELECT uid, app FROM dwd.douyin UNION ALL SELECT uid, app FROM dwd.xigua""",
    "t_join": """
        INSERT OVERWRITE TABLE dws.joined
        SELECT a.uid, a.app AS app_a, b.app AS app_b FROM dwd.douyin a JOIN dwd.xigua b ON a.uid = b.uid""",
    "t_weak": "INSERT OVERWRITE TABLE dws.weak SELECT u.uid FROM ods.users u WHERE u.ssn IS NOT NULL",
    "t_c1": "INSERT OVERWRITE TABLE cyc.a SELECT x FROM cyc.c",
    "t_c2": "INSERT OVERWRITE TABLE cyc.b SELECT x FROM cyc.a",
    "t_c3": "INSERT OVERWRITE TABLE cyc.c SELECT x FROM cyc.b UNION ALL SELECT email AS x FROM ods.users",
}


def load(graph_store, tasks=TASKS) -> None:
    items = []
    for task_id, sql in tasks.items():
        task = SqlTask(task_id=task_id, sql=sql)
        lineage = extract_lineage(task)
        assert not lineage.errors, lineage.errors
        items.append((task, lineage))
    graph_store.upsert_tasks(items)


def run(graph_store, celery_redis, *, full=False, batch_size=2):
    settings = PropagationSettings(
        falkordb_port=graph_store.client.connection.connection_pool.connection_kwargs["port"],
        graph_name=graph_store.graph_name,
        celery_broker=f"redis://127.0.0.1:{celery_redis.port}/0",
        propagation_stall_seconds=30,
    )
    state = RunState.from_url(settings.broker_url(), settings.graph_name)
    return propagate(
        graph_store,
        POLICY,
        state,
        celery_runner(settings, POLICY, app=app_for(settings)),
        full=full,
        settings=settings,
        batch_size=batch_size,
    )


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
    assert values(warehouse, "dwd.users.tax_id", "pii_type") == {"ssn"}  # only the blocked key


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
