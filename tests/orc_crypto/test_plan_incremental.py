"""An incremental protection plan (the nightly chain's) plans again only the tables whose columns'
tags, record or files changed since the last complete plan, carries the others' plans forward, and
answers exactly what a full plan answers (issue 41). On a real FalkorDB graph and real ORC files;
tags change through propagation's own tag write, records through records.py's."""

from __future__ import annotations

import shutil
import time

import pytest

from tests.support.plan_table import TABLE, apply, policy, set_table, tags
from watershed.graph.protection import ColumnKey, ProtectionRule, TableProtection
from watershed.orc_crypto.protect import records
from watershed.orc_crypto.protect.checks import ProtectionError
from watershed.orc_crypto.protect.plan import PLAN_STATE, SOME_TABLES, plan_protection
from watershed.propagation.queries import write_tags

# the plan tests' fixtures `provider` and `warehouse` are tests/orc_crypto/conftest.py's

PII = ColumnKey(key="pii", mask="nullify")


class CountingStore:
    """The graph store, keeping the ids each catalog read asks for."""

    def __init__(self, store) -> None:
        self.store = store
        self.catalog_ids: list[str] = []

    def __getattr__(self, name):
        return getattr(self.store, name)

    def read(self, query, params=None):
        if query == SOME_TABLES:
            self.catalog_ids += params["ids"]
        return self.store.read(query, params)


def propagate(store, column: str, tags_text: str) -> None:
    """A column's tags as a propagation run writes them (its fenced tag statement)."""
    store.write_all(
        [
            ("MERGE (f:PropagationFence {id: 'plan-test'}) SET f.token = 1", {}),
            (
                write_tags("Column"),
                {
                    "fence": "plan-test",
                    "token": 1,
                    "rows": [[column, tags_text, []]],
                    "run": "p1",
                    "stamp": "s1",
                },
            ),
        ]
    )


def incremental(store, protection=None):
    # FalkorDB runs one query at a time: no write commits after a plan read the clock. Change marks
    # and a plan's start are the same millisecond clock, and a mark in the very millisecond a plan
    # starts counts as a change for the next plan too (`>=`, on the safe side): the test's writes
    # must be a millisecond older than the plan, or the next plan reads their tables again.
    time.sleep(0.002)
    return plan_protection(store, protection or policy(), incremental=True, clock_margin_seconds=0)


def tables_of(plan) -> list[dict]:
    return [table.model_dump() for table in plan.tables]


@pytest.fixture
def graph(graph_store, warehouse, provider, tmp_path):
    """dw.users applied, then its email tagged; around it tables tagged below every rule, one
    without location, one not ORC, and a recorded table that left the catalog."""
    apply(graph_store, plan_protection(graph_store, policy()), provider)
    set_table(graph_store, TABLE, str(warehouse), {"email": tags("L2")})
    set_table(graph_store, "dw.nowhere", None, {"ssn": tags("L4")})
    set_table(graph_store, "dw.parquet", "/tmp", {"ssn": tags("L4")}, fmt="parquet")
    for i in range(6):
        set_table(graph_store, f"ods.plain_{i}", str(tmp_path / f"plain_{i}"), {"a": None, "b": tags("L1")})
    records.save_table(graph_store, TableProtection(table="zz.gone", columns={"c": PII}, at="t", run="r0"))
    return graph_store


def test_an_incremental_plan_after_changes_plans_the_changed_tables_and_answers_as_a_full_plan(
    graph, warehouse
):
    first = incremental(graph)
    assert tables_of(first) == tables_of(plan_protection(graph, policy()))
    assert [t.table for t in first.tables] == ["dw.nowhere", "dw.parquet", TABLE, "zz.gone"]

    # nothing changed: nothing is read again, the same plan
    quiet = CountingStore(graph)
    assert tables_of(incremental(quiet)) == tables_of(first) and quiet.catalog_ids == []

    # a propagation tags ods.plain_2.b L4, a new file lands in dw.users, zz.gone's record changes
    propagate(graph, "ods.plain_2.b", tags("L4"))
    newest = sorted(p for p in warehouse.iterdir() if p.is_dir())[-1]
    shutil.copy(newest / "part-0.orc", newest / "part-1.orc")
    records.save_table(graph, TableProtection(table="zz.gone", columns={"d": PII}, at="t", run="r2"))

    counting = CountingStore(graph)
    after = incremental(counting)
    assert sorted(counting.catalog_ids) == sorted(["ods.plain_2", TABLE, "zz.gone"])
    assert tables_of(after) == tables_of(plan_protection(graph, policy()))
    by_table = {t.table: t for t in after.tables}
    assert "ods.plain_2" in by_table
    assert len(by_table[TABLE].files) == len(first.tables[2].files) + 1
    assert by_table["dw.nowhere"] == first.tables[0]  # carried forward

    # the tag goes again (propagation clears it): the table's plan goes with it
    propagate(graph, "ods.plain_2.b", tags("L1"))
    counting = CountingStore(graph)
    cleared = incremental(counting)
    assert counting.catalog_ids == ["ods.plain_2"]
    assert tables_of(cleared) == tables_of(plan_protection(graph, policy()))
    assert "ods.plain_2" not in {t.table for t in cleared.tables}


def test_another_policy_plans_every_table_and_a_plan_cut_short_keeps_no_newer_record(graph):
    incremental(graph)
    state = graph.read(PLAN_STATE)
    # L2 protected like L4 from now on
    other = policy(rules=[ProtectionRule(tag="pii", levels=["L4", "L3", "L2"], key="pii", mask="nullify")])
    counting = CountingStore(graph)
    full = incremental(counting, other)
    assert len(counting.catalog_ids) == 10  # 9 in the catalog and zz.gone
    assert tables_of(full) == tables_of(plan_protection(graph, other))
    assert graph.read(PLAN_STATE) != state

    class Dies(CountingStore):
        def write_all(self, statements):
            if "PlanState" in statements[0][0] and "SET" in statements[0][0]:
                raise KeyboardInterrupt("killed")
            return self.store.write_all(statements)

    propagate(graph, "ods.plain_4.b", tags("L3"))
    before = graph.read(PLAN_STATE)
    with pytest.raises(KeyboardInterrupt):
        incremental(Dies(graph), other)
    assert graph.read(PLAN_STATE) == before
    assert tables_of(incremental(graph, other)) == tables_of(plan_protection(graph, other))


def test_an_incremental_plan_is_of_the_whole_graph(graph):
    with pytest.raises(ProtectionError, match="an incremental plan is of the whole graph"):
        plan_protection(graph, policy(), tables=[TABLE], incremental=True)
