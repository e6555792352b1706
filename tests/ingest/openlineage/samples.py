"""OpenLineage events the intake tests build on: a Spark-shaped run event and its variations."""

from __future__ import annotations

import copy
import uuid
from typing import Any

HIVE = "hive://metastore:9083"
SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
PRODUCER = "https://github.com/OpenLineage/OpenLineage/tree/1.54.0/integration/spark"


def field(name: str, field_: str, *transformations: tuple[str, str], masking: bool = False, description=None):
    """An inputField of `HIVE`'s table `name`; transformations as (type, subtype)."""
    return {
        "namespace": HIVE,
        "name": name,
        "field": field_,
        "transformations": [
            {"type": t, "subtype": s, "masking": masking and t == "DIRECT", "description": description}
            for t, s in transformations
        ],
    }


def run_event(
    job: str = "app.insert_dw_user_daily",
    *,
    event_type: str = "COMPLETE",
    time: str = "2024-01-31T02:00:00+00:00",
    run_id: str | None = None,
    sql: str | None = None,
    columns: dict[str, list[dict]] | None = None,
    dataset: list[dict] | None = None,
    inputs: tuple[str, ...] = ("ods.user_log",),
    output: str = "dw.user_daily",
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "eventType": event_type,
        "eventTime": time,
        "producer": PRODUCER,
        "schemaURL": SCHEMA_URL,
        "run": {
            "runId": run_id or str(uuid.uuid4()),
            "facets": {
                "processing_engine": {
                    "version": "3.5.1",
                    "name": "spark",
                    "openlineageAdapterVersion": "1.54.0",
                },
                "nominalTime": {"nominalStartTime": "2024-01-31T00:00:00Z"},
                "spark_properties": {"properties": {"spark.master": "local"}},
            },
        },
        "job": {"namespace": "spark_app", "name": job, "facets": {}},
        "inputs": [{"namespace": HIVE, "name": name, "facets": {}} for name in inputs],
        "outputs": [{"namespace": HIVE, "name": output, "facets": {}}],
    }
    if sql is not None:
        event["job"]["facets"]["sql"] = {"query": sql}
    if columns is not None:
        event["outputs"][0]["facets"]["columnLineage"] = {
            "fields": {name: {"inputFields": fields} for name, fields in columns.items()},
            "dataset": dataset or [],
        }
    return event


#: a facet-only job: a hashed uid, a copied app, an aggregate, a filter, a join and a window column
FACET_COLUMNS = {
    "uid_hash": [
        field("ods.user_log", "uid", ("DIRECT", "TRANSFORMATION"), masking=True, description="sha2(uid, 256)")
    ],
    "app": [field("ods.user_log", "app", ("DIRECT", "IDENTITY"))],
    "events": [field("ods.user_log", "event", ("DIRECT", "AGGREGATION"))],
}
FACET_DATASET = [
    field("ods.user_log", "dt", ("INDIRECT", "FILTER")),
    field("ods.app_dim", "app_id", ("INDIRECT", "JOIN")),
    field("ods.user_log", "ts", ("INDIRECT", "WINDOW")),
    field("ods.user_log", "app", ("INDIRECT", "GROUP_BY")),
    field("ods.user_log", "event", ("INDIRECT", "CONDITIONAL")),
    field("ods.user_log", "ts", ("INDIRECT", "SORT")),
]


def facet_event(**kwargs) -> dict[str, Any]:
    kwargs.setdefault("columns", copy.deepcopy(FACET_COLUMNS))
    kwargs.setdefault("dataset", copy.deepcopy(FACET_DATASET))
    kwargs.setdefault("inputs", ("ods.user_log", "ods.app_dim"))
    return run_event(**kwargs)


#: a job's SQL whose lineage differs from the runtime column facet `facet_event` sends (reconcile)
USER_DAILY_SQL = (
    "INSERT OVERWRITE TABLE dw.user_daily SELECT sha2(uid, 256) AS uid_hash, app, count(event) AS events "
    "FROM ods.user_log WHERE dt = '${date}' GROUP BY uid, app"
)
