"""Reconcile: a job that sent SQL and a columnLineage facet keeps both; the use case lists the
edges only the SQL found and only the runtime found (both backends)."""

from __future__ import annotations

import pytest

from tests.ingest.openlineage.samples import USER_DAILY_SQL, facet_event
from watershed.api.service.lineage_intake import Intake
from watershed.api.service.lineage_reconcile import NothingToReconcileError, reconcile
from watershed.ingest.settings import IngestSettings

TASK = "spark_app.`app.insert_dw_user_daily`"
#: what the extractor reads of the job the sample facet describes: it groups by uid too, and the
#: runtime reports a join, a window, a condition and a sort the SQL does not have
SQL = USER_DAILY_SQL


def test_sql_and_runtime_edges_are_compared(backend_store):
    Intake(backend_store, IngestSettings()).take(facet_event(sql=SQL), "p")
    (task,) = reconcile(backend_store).tasks
    assert task.task == TASK
    assert [(e.source, e.kind) for e in task.sql_only] == [("ods.user_log.uid", "weak:group")]
    assert sorted((e.source, e.target, e.kind) for e in task.runtime_only) == [
        ("ods.app_dim.app_id", "dw.user_daily", "weak:join"),
        ("ods.user_log.event", "dw.user_daily", "weak:condition"),
        ("ods.user_log.ts", "dw.user_daily", "weak:order"),
        ("ods.user_log.ts", "dw.user_daily", "weak:window"),
    ]
    assert task.kind_differs == []
    # three column edges and the filter on dt and the group by app agree
    assert task.agreed == 5
    assert reconcile(backend_store, TASK) == reconcile(backend_store)


def test_a_task_without_both_is_named(backend_store):
    Intake(backend_store, IngestSettings()).take(facet_event(job="facet_only"), "p")
    with pytest.raises(NothingToReconcileError, match="no runtime lineage"):
        reconcile(backend_store, "spark_app.facet_only")
    with pytest.raises(NothingToReconcileError, match="not found"):
        reconcile(backend_store, "spark_app.nothing")
    assert reconcile(backend_store).tasks == []
