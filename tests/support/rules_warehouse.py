"""The hand-made warehouse of one test per propagation rule (tests/propagation/test_celery_rules.py):
its tasks, loaded into a graph, and a propagation run over it through the Celery workers."""

from __future__ import annotations

from watershed.api.service.celery_app import app_for
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.propagation.coordinator import celery_runner, propagate
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
