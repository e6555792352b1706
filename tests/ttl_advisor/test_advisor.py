"""TTL advice on a hand-made warehouse whose windows are known."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from tests.support.ttl_warehouse import CATALOG, TASKS
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.ttl_advisor.advisor import advise, top_by_savings
from watershed.ttl_advisor.settings import AdvisorSettings
from watershed.ttl_advisor.sizes import OrcSizeEstimator
from watershed.ttl_advisor.uses import index_lineage


@pytest.fixture(scope="module")
def recommendations():
    catalog = Catalog.from_dict(CATALOG)
    lineages = [
        extract_lineage(SqlTask(task_id=task_id, sql=sql, vars={"date": "2024-03-31"}), catalog)
        for task_id, sql in TASKS.items()
    ]
    assert all(not lineage.errors for lineage in lineages)
    index = index_lineage(lineages)
    recs = advise(index, catalog, settings=AdvisorSettings(ttl_margin_days=3))
    return {r.column: r for r in recs}


@pytest.mark.parametrize(
    ("column", "window"),
    [
        ("ods.events.a_eq", 1),
        ("ods.events.b_ge", 21),
        ("ods.events.c_gt", 7),
        ("ods.events.d_diff", 14),
        ("ods.events.e_between", 30),
        ("ods.events.f_in", 45),
        ("ods.events.g_hour", 1),
        ("ods.events.h_old", 90),
    ],
)
def test_window_of_each_predicate_form_plus_margin(recommendations, column, window):
    rec = recommendations[column]
    assert rec.status == "ttl"
    assert rec.max_window_days == window
    assert rec.ttl_days == window + 3
    assert rec.margin_days == 3
    assert rec.shorter_than_table


def test_widest_use_wins_and_every_use_is_evidence(recommendations):
    rec = recommendations["ods.events.h_old"]
    assert [(u.task_id, u.window_days) for u in rec.evidence] == [("t_old_b", 90), ("t_old_a", 1)]
    assert rec.evidence[0].predicates == ["dt >= '2024-01-02'"]
    assert rec.evidence[0].roles == ["value:direct"]
    assert rec.evidence[0].targets == ["dw.o9"]


def test_capped_by_the_table_ttl(recommendations):
    rec = recommendations["ods.profile.email"]
    assert rec.status == "ttl" and rec.capped
    assert rec.max_window_days == 60 and rec.ttl_days == 30 and rec.table_ttl_days == 30
    assert not rec.shorter_than_table


def test_weak_reference_is_a_use(recommendations):
    rec = recommendations["ods.profile.phone"]
    assert rec.status == "ttl" and rec.ttl_days == 2 + 3
    assert rec.evidence[0].roles == ["filter"]


def test_unbounded_read_keeps_the_column_with_the_task(recommendations):
    rec = recommendations["ods.logs.msg"]
    assert rec.status == "keep" and rec.keep_for == ["t_unbounded"] and rec.ttl_days is None


def test_unparseable_partition_predicate_counts_as_unbounded_and_is_listed(recommendations):
    rec = recommendations["ods.logs.level"]
    assert rec.status == "keep" and rec.keep_for == ["t_unparsed"]
    assert rec.evidence[0].unparsed_predicates == ["dt LIKE '2024%'"]


def test_unused_column_is_flagged(recommendations):
    rec = recommendations["ods.profile.unused_col"]
    assert rec.status == "unused" and rec.evidence == [] and rec.last_seen_use is None
    # partition columns themselves get no advice
    assert "ods.profile.dt" not in recommendations


def test_savings_from_sampled_orc_files(tmp_path):
    location = tmp_path / "events"
    wide = pa.table({"uid": pa.array(range(1000), pa.int64()), "payload": pa.array(["x" * 200] * 1000)})
    for day in range(1, 11):
        partition = location / f"dt=2024-03-{day:02d}"
        partition.mkdir(parents=True)
        orc.write_table(wide, str(partition / "part-0.orc"))
    catalog = Catalog.from_dict(
        {
            "tables": {
                "ods.wide": {
                    "columns": ["uid", "payload"],
                    "partitioned_by": ["dt"],
                    "ttl_days": 10,
                    "location": str(location),
                }
            }
        }
    )
    lineage = extract_lineage(
        SqlTask(task_id="t", sql="INSERT INTO dw.x SELECT payload, uid FROM ods.wide WHERE dt = '${date}'"),
        catalog,
    )
    estimator = OrcSizeEstimator(catalog)
    recs = advise(
        index_lineage([lineage]), catalog, settings=AdvisorSettings(ttl_margin_days=2), estimate=estimator
    )
    by_column = {r.column: r for r in recs}
    payload, uid = by_column["ods.wide.payload"], by_column["ods.wide.uid"]
    assert payload.ttl_days == 3 and payload.savings.partitions_beyond_ttl == 7
    assert payload.savings.column_share > uid.savings.column_share
    assert payload.savings.bytes > uid.savings.bytes > 0
    assert top_by_savings(recs, 1)[0].column == "ods.wide.payload"


def test_unknown_size_is_none():
    catalog = Catalog.from_dict(CATALOG)
    lineage = extract_lineage(SqlTask(task_id="t", sql=TASKS["t_eq"], vars={"date": "2024-03-31"}), catalog)
    recs = advise(index_lineage([lineage]), catalog, estimate=OrcSizeEstimator(catalog))
    assert all(r.savings is None for r in recs)
