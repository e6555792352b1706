"""An incremental TTL run (the default) advises again only the tables whose columns' inputs changed
since the last complete run, and what the graph then holds is exactly what a full run stores.

The graph: the hand-made warehouse of test_advisor (known windows, keep, unused, capped), a table
only lineage knows, and a generated warehouse with ORC data for two tables (savings measured on
files). The changes after the first run: a task reloaded with another window, a task deleted, a
new task reading a column nobody read, a table's TTL and outside readers changed in the catalog,
a column added, and a file written into a sampled table's partition. On FalkorDB and on Neo4j.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.propagation_bench import load_generated
from tests.support.ttl_warehouse import CATALOG, TASKS
from watershed.graph import ids
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.ingest.generator import generate_warehouse
from watershed.ttl_advisor import batches
from watershed.ttl_advisor.batches import store_advice
from watershed.ttl_advisor.graph_uses import BATCH_TABLES
from watershed.ttl_advisor.settings import AdvisorSettings

LINEAGE_ONLY = {
    "t_raw": "INSERT OVERWRITE TABLE dw.r1 SELECT a, b FROM ext.raw WHERE dt >= date_sub('${date}', 4)",
}
STORED = (
    "MATCH (c:Column) RETURN c.id, c.ttl_status, c.ttl_days_recommended, c.ttl_evidence, "
    "c.ttl_savings_bytes, c.ttl_days_cut, c.ttl_read_outside_by, c.ttl_run"
)
# the graph is loaded a second before the first run: without the margin for late commits, a run
# advises what changed since, not the whole load again (no test commits late)
SETTINGS = AdvisorSettings(ttl_margin_days=3, ttl_batch_tables=3, ttl_clock_margin_seconds=0)


def stored(store) -> dict[str, tuple]:
    """Every Column's stored advice by id, its run id last."""
    return {row[0]: tuple(row[1:]) for row in store.read(STORED)}


def answers(properties: dict[str, tuple]) -> dict[str, tuple]:
    """The advice without the run id that stored it."""
    return {column: p[:-1] for column, p in properties.items()}


class CountingStore:
    """The graph, keeping the table ids each batch read asked for and every row read."""

    def __init__(self, graph) -> None:
        self.graph = graph
        self.batch_tables: list[str] = []
        self.rows = 0

    def __getattr__(self, name):
        return getattr(self.graph, name)

    def read(self, query, params=None):
        if query == BATCH_TABLES:
            self.batch_tables += params["ids"]
        rows = self.graph.read(query, params)
        self.rows += len(rows)
        return rows


class DiesAfterBatches:
    """The graph, until its `allowed`-th write of advice: then the process 'dies' (an exception)."""

    def __init__(self, graph, allowed: int) -> None:
        self.graph = graph
        self.allowed = allowed

    def __getattr__(self, name):
        return getattr(self.graph, name)

    def write_all(self, statements):
        if (statements and statements[0][0] == batches.SAVE_STATE) or self.allowed == 0:
            raise KeyboardInterrupt("killed")
        self.allowed -= 1
        return self.graph.write_all(statements)


def task(task_id: str, sql: str) -> SqlTask:
    return SqlTask(task_id=task_id, sql=sql, vars={"date": "2024-03-31"})


def load(store, catalog: Catalog, tasks: dict[str, str]) -> None:
    store.upsert_tasks(
        [(t, extract_lineage(t, catalog)) for t in (task(i, s) for i, s in tasks.items())], catalog
    )


@pytest.fixture
def warehouse(backend_store, tmp_path):
    """The loaded graph and the generated warehouse's directory and catalog."""
    directory = tmp_path / "warehouse"
    generate_warehouse(directory, tasks=30, seed=5, data_tables=2, data_partitions=6)
    _, generated = load_generated(backend_store, directory)
    load(backend_store, Catalog.from_dict(CATALOG), {**TASKS, **LINEAGE_ONLY})
    return backend_store, directory, generated


def saved_table(generated: Catalog, before: dict[str, tuple]) -> tuple[str, Path]:
    """A generated table with ORC partitions some of whose columns' advice frees bytes: its id and
    its newest partition's directory."""
    for table_id, entry in sorted(generated.tables.items()):
        saving = any(p[3] for c, p in before.items() if ids.parent(c) == table_id)
        if entry.location and entry.partitioned_by and saving:
            root = Path(entry.location.removeprefix("file://"))
            return table_id, sorted(p for p in root.iterdir() if p.is_dir())[-1]
    raise AssertionError("no generated table's advice frees bytes")


def change(store, generated: Catalog, before: dict[str, tuple]) -> set[str]:
    """A night's small change; the tables whose columns' inputs it changed."""
    catalog = Catalog.from_dict(CATALOG)
    # another window (20 -> 40 days) for ods.events.b_ge, and ods.logs.msg's only use goes away
    load(store, catalog, {"t_ge": TASKS["t_ge"].replace("20)", "40)")})
    store.delete_tasks(["t_unbounded"])
    # a new task reads ods.profile.unused_col over 9 days
    load(
        store,
        catalog,
        {
            "t_new": "INSERT OVERWRITE TABLE dw.p9 SELECT unused_col FROM ods.profile WHERE dt >= date_sub('${date}', 8)"
        },
    )
    # the catalog: ext.raw gets a TTL and an outside reader, ods.profile a new column
    edited = Catalog.from_dict(
        {
            "tables": {
                "ext.raw": {
                    "columns": ["a", "b"],
                    "partitioned_by": ["dt"],
                    "ttl_days": 6,
                    "external_readers": ["bi"],
                },
                "ods.profile": {
                    **CATALOG["tables"]["ods.profile"],
                    "columns": [*CATALOG["tables"]["ods.profile"]["columns"], "added"],
                },
            }
        }
    )
    store.upsert_catalog(edited)
    # a new day's file in a sampled table: its savings grow
    table_id, newest = saved_table(generated, before)
    new_day = newest.with_name(newest.name[:-2] + "99")
    shutil.copytree(newest, new_day)
    return {"ods.events", "ods.logs", "ods.profile", "ext.raw", table_id}


def test_an_incremental_run_after_a_small_change_stores_what_a_full_run_stores(warehouse):
    store, _directory, generated = warehouse
    first = store_advice(store, "night-1", SETTINGS)
    assert first.mode == "full" and first.counts.columns > 0
    before = stored(store)

    changed = change(store, generated, before)
    tables = len(store.read("MATCH (t:Table) RETURN t.id"))
    counting = CountingStore(store)
    night = store_advice(counting, "night-2", SETTINGS)
    incremental = stored(store)

    assert night.mode == "incremental"
    # only the changed tables were read and advised (the tasks' own tables dw.* are marked too:
    # a reloaded task's WRITES change their lineage, not their columns' uses; none of them more)
    assert changed <= set(counting.batch_tables) and len(counting.batch_tables) <= len(changed) + 3
    assert night.tables == len(counting.batch_tables) < tables / 4
    assert counting.rows < 400
    # every other column kept night-1's advice untouched, its run id included
    redone = {c for c, p in incremental.items() if p[-1] == "night-2"}
    assert {ids.parent(c) for c in redone} <= set(counting.batch_tables)
    assert all(incremental[c] == before[c] for c in before if c not in redone)

    full = store_advice(store, "night-2-full", SETTINGS, full=True)
    assert full.mode == "full" and full.tables == tables
    assert answers(incremental) == answers(stored(store))
    # the change changed the advice: the incremental run did work a carried-forward run would miss
    moved = {c for c in incremental if answers(before).get(c) != answers(incremental)[c]}
    assert {"ods.events.b_ge", "ods.logs.msg", "ods.profile.unused_col", "ext.raw.a"} <= moved
    assert "ods.profile.added" in incremental and incremental["ods.profile.added"][0] == "unused"
    saved = saved_table(generated, before)[0]
    assert any(ids.parent(c) == saved and before[c][3] != incremental[c][3] for c in moved)


def test_a_run_with_nothing_changed_advises_nothing_and_other_settings_advise_everything(warehouse):
    store, _directory, _generated = warehouse
    store_advice(store, "night-1", SETTINGS)
    before = stored(store)

    quiet = store_advice(store, "night-2", SETTINGS)
    assert (quiet.mode, quiet.tables, quiet.counts.columns) == ("incremental", 0, 0)
    assert stored(store) == before

    wider = AdvisorSettings(ttl_margin_days=5, ttl_batch_tables=3, ttl_clock_margin_seconds=0)
    again = store_advice(store, "night-3", wider)
    assert again.mode == "full" and {p[-1] for p in stored(store).values() if p[0]} == {"night-3"}
    off = AdvisorSettings(ttl_margin_days=5, ttl_incremental=False)
    assert store_advice(store, "night-4", off).mode == "full"


def test_a_run_killed_midway_keeps_the_last_complete_run_and_the_next_run_converges(warehouse):
    store, _directory, generated = warehouse
    store_advice(store, "night-1", SETTINGS)
    state = store.read(batches.STATE)
    before = stored(store)
    change(store, generated, before)

    with pytest.raises(KeyboardInterrupt):
        store_advice(DiesAfterBatches(store, allowed=1), "night-2", SETTINGS)
    killed = stored(store)
    # the record still names night-1, and each column holds one run's whole advice
    assert store.read(batches.STATE) == state
    assert {p[-1] for p in killed.values() if p[0]} == {"night-1", "night-2"}
    assert all(killed[c] == before[c] for c in before if killed[c][-1] == "night-1")

    # the process also dies after its last batch, before its record: still night-1's
    with pytest.raises(KeyboardInterrupt):
        store_advice(DiesAfterBatches(store, allowed=1000), "night-2", SETTINGS)
    assert store.read(batches.STATE) == state

    resumed = store_advice(store, "night-3", SETTINGS)
    assert resumed.mode == "incremental"
    converged = answers(stored(store))
    store_advice(store, "full", SETTINGS, full=True)
    assert converged == answers(stored(store))
