"""Discovery's flags through the API: a steward samples a root and a table derived from it; the
derived copy of a sensitive column no tag reached is listed as a leak with its path, to viewers
too, filtered by kind, table and column."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from bench.pii_values import column_values
from tests.discovery.warehouse import write_parquet
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage

TASK = "INSERT OVERWRITE TABLE dws.flag_copy SELECT c17 AS mobile, town FROM ods.flag_src"


@pytest.fixture(scope="module")
def flagged(api, tmp_path_factory):
    root = tmp_path_factory.mktemp("flags-warehouse")
    r = random.Random(9)
    data = pa.table(
        {
            "c17": pa.array(column_values("cn_mobile", 40, r), pa.string()),
            "town": pa.array(column_values("city", 40, r), pa.string()),
        }
    )
    write_parquet(root / "ods", data, files=1)
    write_parquet(root / "dws", data.rename_columns(["mobile", "town"]), files=1)
    catalog = Catalog.from_dict(
        {
            "tables": {
                "ods.flag_src": {"columns": ["c17", "town"], "location": str(root / "ods")},
                "dws.flag_copy": {"columns": ["mobile", "town"], "location": str(root / "dws")},
            }
        }
    )
    api.graph.upsert_catalog(catalog)
    task = SqlTask(task_id="t_flag_copy", sql=TASK)
    api.graph.upsert_tasks([(task, extract_lineage(task, catalog))], catalog)
    return root


def test_a_leak_is_listed_with_its_path(api, flagged):
    with api.client("steward") as steward:
        run = steward.post("/discovery/runs", json={"tables": ["ods.flag_src", "dws.flag_copy"]})
        assert run.status_code == 200, run.text
        assert run.json()["flagged"] == 1
    with api.client("viewer") as viewer:
        listed = viewer.get("/discovery/flags", params={"table": "dws.flag_copy"})
        assert listed.status_code == 200, listed.text
        (flag,) = listed.json()["items"]
        assert (flag["column"], flag["kind"], flag["root"], flag["root_tagged"]) == (
            "dws.flag_copy.mobile",
            "leak",
            "ods.flag_src.c17",
            False,
        )
        assert [(s["source"], s["target"], s["task"]) for s in flag["path"]] == [
            ("ods.flag_src.c17", "dws.flag_copy.mobile", "t_flag_copy")
        ]
        by_column = viewer.get("/discovery/flags", params={"column": "dws.flag_copy.mobile"}).json()
        assert [f["kind"] for f in by_column["items"]] == ["leak"]
        none = viewer.get("/discovery/flags", params={"kind": "over_tag", "table": "dws.flag_copy"}).json()
        assert none["items"] == []
        # the column page asks for one column's proposal
        one = viewer.get("/discovery/proposals", params={"column": "ods.flag_src.c17"}).json()
        assert [p["column"] for p in one["items"]] == ["ods.flag_src.c17"] and one["next_cursor"] is None
        assert (
            viewer.get("/discovery/proposals", params={"column": "ods.flag_src.town"}).json()["items"] == []
        )
        closed = viewer.get(
            "/discovery/proposals", params={"column": "ods.flag_src.c17", "status": "rejected"}
        )
        assert closed.json()["items"] == []
        assert viewer.get("/discovery/flags", params={"kind": "maybe"}).status_code == 422
        assert viewer.get("/discovery/flags", params={"column": "dws.flag_copy"}).status_code == 422
