"""The harvest driver's memory bounded by settings, not by the warehouse (issue 41), with the same graph.

bench/harvest_memory_bench.py measures the driver's peak at two sizes; these tests check what it
holds, untimed: the catalog's columns are shared objects, a catalog file is read without its
whole JSON as dicts, the catalog goes to the graph `harvest_catalog_tables` tables at a time and
the store's memory of the graph's columns stays under `harvest_known_columns`, and a harvest
with every bound tiny gives the graph a default one gives.
"""

from __future__ import annotations

import json
import re
import tracemalloc

import pytest

from tests.graph.fingerprint import TIMESTAMP_PROPERTIES, graph_lines
from watershed.graph.catalog import Catalog, CatalogError
from watershed.graph.falkordb_store import FalkorDBStore
from watershed.ingest.generator import generate_warehouse
from watershed.ingest.harvest import run_harvest
from watershed.ingest.settings import IngestSettings


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    root = tmp_path_factory.mktemp("warehouse")
    generate_warehouse(root, tasks=300, seed=5, broken=2)
    return root


def test_catalog_columns_are_one_object_per_distinct_column(warehouse):
    catalog = Catalog.load(warehouse / "catalog.json")
    columns = [c for table in catalog.tables.values() for c in (*table.columns, *table.partitioned_by)]
    distinct = {(c.name, c.type, c.description) for c in columns}
    assert len(columns) > 5 * len(distinct)
    # old code: an object per column of every table
    assert len({id(c) for c in columns}) == len(distinct)


def test_loading_a_catalog_holds_less_than_its_json_as_dicts(warehouse):
    text = (warehouse / "catalog.json").read_text()
    tracemalloc.start()
    try:
        data = json.loads(text)
        as_dicts = tracemalloc.get_traced_memory()[0]
        del data
        tracemalloc.reset_peak()
        began = tracemalloc.get_traced_memory()[0]
        catalog = Catalog.load(warehouse / "catalog.json")
        peak = tracemalloc.get_traced_memory()[1] - began
    finally:
        tracemalloc.stop()
    assert catalog.tables
    # old code: the file's dicts, then an object per column on top of them (2.8 times the dicts
    # alone at 100,000 columns); read table by table with shared columns it is the file's text
    # and the catalog (half the dicts)
    assert peak < as_dicts


@pytest.mark.parametrize(
    "text",
    [
        '{"tables": {"a": ["x"], "db.b": {"columns": {"y": "int"}}}, "default_database": "dw"}',
        '{"default_database": "dw", "tables": {"db.t": ["x"], "db.t": ["y", "z"]}}',
        ' \n{ "tables" : { } , "other": [1, {"n": null}] }\n',
        '{"tables": {"spark_catalog.db.t": [{"name": "X", "type": "int", "description": "é"}]}}',
        "{}",
    ],
)
def test_a_catalog_file_reads_as_its_parsed_json(tmp_path, text):
    path = tmp_path / "catalog.json"
    path.write_text(text)
    assert Catalog.load(path).model_dump() == Catalog.from_dict(json.loads(text)).model_dump()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"tables": {"a": ["x"]}', "not valid JSON (line 1, column 24"),
        ('{"tables": ["db.t"]}', "'tables' must be an object"),
        ("[]", "a catalog must be a JSON object"),
        ('{"tables": {"t": ["x"]}}', "is not qualified as db.table"),
        ('{"tables": {"db.t": ["x"]}} {}', "not valid JSON (line 1, column 29: Extra data)"),
    ],
)
def test_a_bad_catalog_file_names_its_problem(tmp_path, text, message):
    path = tmp_path / "catalog.json"
    path.write_text(text)
    with pytest.raises(CatalogError, match=re.escape(message)):
        Catalog.load(path)


class RecordingStore(FalkorDBStore):
    """A real FalkorDB store that records how many tables each catalog write sends and how many
    column ids the store remembers when each batch of tasks arrives."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.catalog_writes: list[int] = []
        self.known_at_loads: list[int] = []

    def upsert_catalog(self, catalog):
        self.catalog_writes.append(len(catalog.tables))
        return super().upsert_catalog(catalog)

    def upsert_tasks(self, items, catalog=None, **kwargs):
        self.known_at_loads.append(len(self.known_columns()))
        return super().upsert_tasks(items, catalog, **kwargs)


def test_a_harvest_with_tiny_bounds_holds_little_and_loads_the_same_graph(
    spark, falkordb_server, graph_store, warehouse, tmp_path
):
    catalog = Catalog.load(warehouse / "catalog.json")

    def harvest(store, settings):
        return run_harvest(
            spark,
            tasks=str(warehouse / "tasks"),
            catalog=catalog,
            store=store,
            out_dir=tmp_path / "out",
            batch_size=25,
            progress=lambda _line: None,
            settings=settings,
        )

    reference = harvest(graph_store, IngestSettings())
    bounded_store = RecordingStore(
        falkordb_server.host, falkordb_server.port, graph=f"{graph_store.graph.name}_b"
    )
    bounded_store.ensure_schema()
    try:
        bounded = harvest(
            bounded_store,
            IngestSettings(harvest_catalog_tables=40, harvest_known_columns=100, harvest_partition_tasks=20),
        )
        assert (bounded.tasks, bounded.loaded, bounded.tasks_with_errors) == (
            reference.tasks,
            reference.loaded,
            reference.tasks_with_errors,
        )
        # `uses_changed_at` is a wall-clock mark too (the time a table's uses changed): which
        # tables have one must agree, not when
        marked = "MATCH (t:Table) WHERE t.uses_changed_at IS NOT NULL RETURN t.id ORDER BY t.id"
        assert bounded_store.read(marked) == graph_store.read(marked)
        clocks = TIMESTAMP_PROPERTIES | {"uses_changed_at"}
        assert graph_lines(bounded_store, clocks) == graph_lines(graph_store, clocks)
        # old code: one write of every table, and every column of the catalog remembered
        assert len(catalog.tables) > 40 * 5
        assert max(bounded_store.catalog_writes) == 40
        assert sum(bounded_store.catalog_writes) == len(catalog.tables)
        assert len(bounded_store.known_at_loads) == -(-reference.tasks // 25)
        # the store forgets past the bound after each write, so no batch of tasks meets more
        assert max(bounded_store.known_at_loads) <= 100
    finally:
        bounded_store.clear()
        bounded_store.close()
