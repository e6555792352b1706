"""The whole-graph plan read a batch of tables at a time (issue 16): the same plan as reading the
whole catalog at once, at every batch size, on a real FalkorDB graph and real ORC files."""

from __future__ import annotations

import pytest

from bench.plan_memory_bench import whole_catalog_plan as planner_before_batches
from tests.support.plan_table import TABLE, apply, policy, set_table, tags
from watershed.graph.protection import ColumnKey, TableProtection
from watershed.graph.store import GraphStore
from watershed.orc_crypto.protect import records
from watershed.orc_crypto.protect.checks import ProtectionError
from watershed.orc_crypto.protect.plan import (
    SOME_TABLES,
    plan_protection,
)

# the plan tests' fixtures `provider` and `warehouse` are tests/orc_crypto/conftest.py's

PII = ColumnKey(key="pii", mask="nullify")


def whole_catalog_plan(store, protection) -> list[dict]:
    """The plan's tables as the planner made them before batches (the bench's copy of it): the
    reference to equal."""
    return [table.model_dump() for table in planner_before_batches(store, protection).tables]


class CountingStore:
    """The graph store, counting the reads of each statement and the ids each catalog read asks for."""

    def __init__(self, store) -> None:
        self.store = store
        self.reads: dict[str, int] = {}
        self.catalog_ids: list[list[str]] = []

    def read(self, query, params=None):
        self.reads[query] = self.reads.get(query, 0) + 1
        if query == SOME_TABLES:
            self.catalog_ids.append(list(params["ids"]))
        return self.store.read(query, params)

    def table_ids(self) -> list[str]:
        return GraphStore.table_ids(self)  # through `read`, counted


@pytest.fixture
def graph(graph_store, warehouse, provider, tmp_path):
    """dw.users applied, then its email tagged (files to rewrite, with a record); around it tables
    of every kind: tagged without files, without location, not ORC, untagged, without columns but
    with a record, and a recorded table that left the catalog."""
    apply(graph_store, plan_protection(graph_store, policy()), provider)
    set_table(graph_store, TABLE, str(warehouse), {"email": tags("L2")})
    set_table(graph_store, "dw.aaa_first", str(tmp_path / "none"), {"phone": tags("L3", origin="seed")})
    set_table(graph_store, "dw.nowhere", None, {"ssn": tags("L4")})
    set_table(graph_store, "dw.parquet", "/tmp", {"ssn": tags("L4")}, fmt="parquet")
    for i in range(4):
        set_table(graph_store, f"ods.plain_{i}", str(tmp_path / "none"), {"a": None, "b": tags("L1")})
    graph_store.write_all([("MERGE (t:Table {id: 'dw.bare'}) SET t.location = null, t.format = 'orc'", {})])
    for name in ("dw.bare", "zz.gone"):
        records.save_table(graph_store, TableProtection(table=name, columns={"c": PII}, at="t", run="r0"))
    return graph_store


def test_every_batch_size_plans_as_the_whole_catalog_did(graph):
    reference = whole_catalog_plan(graph, policy())
    assert [t["table"] for t in reference] == [
        "dw.aaa_first",
        "dw.bare",
        "dw.nowhere",
        "dw.parquet",
        TABLE,
        "zz.gone",
    ]
    by_table = {t["table"]: t for t in reference}
    assert by_table["zz.gone"]["problems"] == ["zz.gone has no location: its files cannot be planned"]
    assert by_table["dw.bare"]["columns"] == [] and by_table["dw.bare"]["ddl"]  # unset the options
    assert len(by_table[TABLE]["files"]) == 2  # the recorded ssn kept, email added
    tables = 10  # 9 in the catalog and zz.gone
    for size in (1, 2, 5, 500):
        counting = CountingStore(graph)
        plan = plan_protection(counting, policy(), batch_size=size)
        assert [t.model_dump() for t in plan.tables] == reference, size
        batches = -(-tables // size)
        assert [len(ids) for ids in counting.catalog_ids] == [size] * (batches - 1) + [
            tables - size * (batches - 1)
        ]
        assert counting.reads[records.TABLE_PROTECTIONS] == batches
        assert records.TABLE_PROTECTION not in counting.reads  # no query per table


def test_the_whole_plan_but_its_time_is_the_same_at_every_batch_size(graph):
    plans = [plan_protection(graph, policy(), batch_size=size) for size in (1, 3, 1000)]
    dumps = [p.model_dump(exclude={"created_at"}) for p in plans]
    assert dumps[0] == dumps[1] == dumps[2] and dumps[0]["tables"]


def test_chosen_tables_plan_alike_in_batches_and_unknown_ones_are_named(graph):
    chosen = ["ods.plain_1", TABLE, "zz.gone", "dw.bare"]
    with pytest.raises(ProtectionError, match=r"unknown table zz\.gone"):
        plan_protection(graph, policy(), tables=chosen, batch_size=1)
    chosen.remove("zz.gone")
    one, apart = (plan_protection(graph, policy(), tables=chosen, batch_size=n) for n in (100, 1))
    assert one.model_dump(exclude={"created_at"}) == apart.model_dump(exclude={"created_at"})
    assert [t.table for t in one.tables] == sorted(chosen)  # listed tables are reported even idle


@pytest.mark.parametrize("size", [0, -3, 2.5, "500", True, None])
def test_a_bad_batch_size_is_an_error_naming_it(graph_store, size):
    with pytest.raises(ProtectionError, match=rf"batch_size must be a whole number .* not {size!r}"):
        plan_protection(graph_store, policy(), batch_size=size)


def test_the_batched_record_reader_answers_as_one_table_at_a_time(graph):
    names = [TABLE, "dw.bare", "zz.gone", "ods.plain_0", "db.never"]
    found = records.table_protections(graph, names)
    assert sorted(found) == sorted(n for n in names if records.table_protection(graph, n) is not None)
    assert found == {n: records.table_protection(graph, n) for n in found}
    assert records.table_protections(graph, []) == {}
