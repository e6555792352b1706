"""A table the catalog marks as read outside the warehouse (`external_readers`: a BI tool reads
an ADS table; no task in the lineage shows it) is never advised `unused`: its columns are kept,
saying who reads them (they were "unused"). On FalkorDB and on Neo4j: the catalog's field goes
through the Table node to the advice and back out of the stored advice."""

from __future__ import annotations

from watershed.api.service import ttl_advice
from watershed.graph.catalog import Catalog
from watershed.ttl_advisor.batches import store_advice
from watershed.ttl_advisor.settings import AdvisorSettings

CATALOG = Catalog.from_dict(
    {
        "tables": {
            "ads.dashboard": {"columns": ["uid", "amount"], "ttl_days": 30, "external_readers": ["superset"]},
            "ads.orphan": {"columns": ["uid"], "ttl_days": 30},
        }
    }
)


def test_a_table_read_outside_the_warehouse_is_kept_not_unused(backend_store):
    assert CATALOG.get("ads.dashboard").external_readers == ["superset"]
    backend_store.upsert_catalog(CATALOG)
    assert backend_store.catalog_entries(["ads.dashboard"])["ads.dashboard"].external_readers == ["superset"]
    assert backend_store.catalog_entries(["ads.orphan"])["ads.orphan"].external_readers == []

    store_advice(backend_store, "ttl-outside", AdvisorSettings())

    advice = {a.column: a for a in ttl_advice.stored(backend_store, limit=50).items}
    for column in ("ads.dashboard.uid", "ads.dashboard.amount"):
        assert advice[column].status == "keep"
        assert advice[column].read_outside_by == ["superset"]
        assert advice[column].days_cut == 0
    assert advice["ads.orphan.uid"].status == "unused" and advice["ads.orphan.uid"].read_outside_by == []
    assert [a.column for a in ttl_advice.stored(backend_store, status="unused", limit=50).items] == [
        "ads.orphan.uid"
    ]


def test_the_catalog_unmarking_a_table_lets_its_columns_be_unused_again(backend_store):
    backend_store.upsert_catalog(CATALOG)
    store_advice(backend_store, "ttl-1", AdvisorSettings())
    unmarked = Catalog.from_dict(
        {"tables": {"ads.dashboard": {"columns": ["uid", "amount"], "ttl_days": 30}}}
    )
    backend_store.upsert_catalog(unmarked)
    store_advice(backend_store, "ttl-2", AdvisorSettings())
    advice = {a.column: a for a in ttl_advice.stored(backend_store, table="ads.dashboard", limit=50).items}
    assert {a.status for a in advice.values()} == {"unused"}
    assert all(a.read_outside_by == [] for a in advice.values())
