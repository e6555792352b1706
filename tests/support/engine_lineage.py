"""The in-process lineage of the engine tests (tests/propagation/test_engine.py): a few tasks with a
self-overwrite and a 3-table cycle, and a memory tag store holding it with its manual tags."""

from __future__ import annotations

from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.propagation.memory_store import MemoryTagStore
from watershed.propagation.policy import default_policy

POLICY = default_policy()

TASKS = {
    "t_dwd": """
        INSERT OVERWRITE TABLE dwd.user SELECT uid, email, upper(email) AS email_u, md5(phone) AS phone_h,
               app FROM ods.user WHERE app = 'douyin'""",
    "t_dws": "INSERT OVERWRITE TABLE dws.user_stat SELECT app, count(DISTINCT email) AS n, max(email) AS any_email FROM dwd.user GROUP BY app",
    "t_ads": "INSERT OVERWRITE TABLE ads.report SELECT a.app, a.any_email, b.region FROM dws.user_stat a JOIN ods.region b ON a.app = b.app",
    # self-overwrite and a 3-table cycle
    "t_self": "INSERT OVERWRITE TABLE dwd.user SELECT uid, email, email_u, phone_h, app FROM dwd.user",
    "t_c1": "INSERT OVERWRITE TABLE cyc.a SELECT x FROM cyc.c",
    "t_c2": "INSERT OVERWRITE TABLE cyc.b SELECT x FROM cyc.a",
    "t_c3": "INSERT OVERWRITE TABLE cyc.c SELECT x FROM cyc.b UNION ALL SELECT email AS x FROM ods.user",
}


def build(tasks=TASKS) -> MemoryTagStore:
    store = MemoryTagStore()
    for task_id, sql in tasks.items():
        lineage = extract_lineage(SqlTask(task_id=task_id, sql=sql))
        assert not lineage.errors, lineage.errors
        store.add_lineage(lineage, POLICY)
    store.set_own("ods.user.email", "pii", ["L3"])
    store.set_own("ods.user.email", "pii_type", ["email"])
    store.set_own("ods.user.phone", "pii", ["L4"])
    store.set_own("ods.user", "app", ["douyin", "toutiao"])
    return store
