"""The rows the harvest's executors send the driver: each result serialised once, decoded as
extracted; the catalog the executors get, packed, reads as the catalog it came from."""

from __future__ import annotations

import gc
import json

import pytest
from pydantic import ValidationError

from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask, TaskLineage
from watershed.ingest.extract import extract_lineage
from watershed.ingest.generator import generate_warehouse
from watershed.ingest.harvest import _extract_partition, _worker_catalog, pack_model, unpack_model
from watershed.ingest.settings import IngestSettings
from watershed.ingest.sources import read_task_source

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("rows")
    generate_warehouse(root, tasks=12, seed=5, broken=1)
    tasks = [item.task for item in read_task_source(root / "tasks", [])]
    return Catalog.load(root / "catalog.json"), tasks


@pytest.mark.parametrize("send_task", [True, False])
def test_rows_decode_to_what_extraction_gives(spark, corpus, send_task):
    catalog, tasks = corpus
    settings = IngestSettings()
    broadcast = spark.sparkContext.broadcast(catalog.packed())
    # a file source's tasks come as tasks, a table's as records
    records = [task if index % 2 else task.model_dump() for index, task in enumerate(tasks)]
    records.append({"task_id": "bad", "sql": 42})
    rows = list(_extract_partition(iter(records), broadcast, settings.model_dump(), send_task))
    broadcast.unpersist()

    *lineages, problem = rows
    assert problem[0] == "problem" and problem[1] == "bad" and "sql" in problem[2]
    assert len(lineages) == len(tasks)
    for task, (kind, task_id, task_packed, lineage_packed, errors_json) in zip(tasks, lineages, strict=True):
        assert (kind, task_id) == ("lineage", task.task_id)
        lineage = unpack_model(TaskLineage, lineage_packed)
        assert lineage == extract_lineage(task, catalog, settings)
        # the errors apart, as the lineage holds them ("" for none)
        assert errors_json == (json.dumps([e.model_dump() for e in lineage.errors]) if lineage.errors else "")
        if send_task:
            assert unpack_model(SqlTask, task_packed) == task
        else:
            assert task_packed == b""
    assert any(row[4] for row in lineages)


def test_an_executor_freezes_what_outlives_its_partition(spark, corpus):
    """In a Spark task the partition ends with its survivors frozen, so PySpark's full collection
    after every task skips the parsed catalog; called outside Spark, the caller's heap is left alone."""
    catalog, tasks = corpus
    settings_data = IngestSettings().model_dump()
    broadcast = spark.sparkContext.broadcast(catalog.packed())

    def partition(rows):
        import gc as worker_gc

        worker_gc.unfreeze()  # a reused worker froze after an earlier job's partition
        before = worker_gc.get_freeze_count()
        produced = sum(1 for _ in _extract_partition(rows, broadcast, settings_data, False))
        yield before, worker_gc.get_freeze_count(), produced

    [(before, after, produced)] = spark.sparkContext.parallelize(tasks, 1).mapPartitions(partition).collect()
    assert (before, produced) == (0, len(tasks))
    assert after > 0

    frozen = gc.get_freeze_count()
    assert len(list(_extract_partition(iter(tasks), broadcast, settings_data, False))) == len(tasks)
    assert gc.get_freeze_count() == frozen
    broadcast.unpersist()


def test_an_executor_settles_its_heap_between_tasks_within_a_partition(spark, corpus):
    """The catalog tables a long partition parses are frozen as it goes, not only at its end:
    Python's own full collections would otherwise walk them again and again."""
    catalog, tasks = corpus
    settings_data = IngestSettings().model_dump()
    broadcast = spark.sparkContext.broadcast(catalog.packed())

    def partition(rows):
        import gc as worker_gc

        from watershed.ingest import harvest as worker_harvest

        worker_gc.unfreeze()
        every = worker_harvest.SETTLE_EVERY_TASKS
        worker_harvest.SETTLE_EVERY_TASKS = 4
        try:
            counts = [
                worker_gc.get_freeze_count()
                for _ in worker_harvest._extract_partition(rows, broadcast, settings_data, False)
            ]
        finally:
            worker_harvest.SETTLE_EVERY_TASKS = every
        yield counts

    [counts] = spark.sparkContext.parallelize(tasks, 1).mapPartitions(partition).collect()
    assert len(counts) == len(tasks) == 12
    # nothing frozen before the fourth task; frozen before it, again before the eighth and the twelfth
    assert counts[:3] == [0, 0, 0]
    assert 0 < counts[3] <= counts[7] <= counts[11]
    assert len(set(counts)) >= 3
    broadcast.unpersist()


def test_a_worker_builds_each_catalog_once(corpus):
    catalog, _tasks = corpus
    data = catalog.packed()
    first = _worker_catalog(data)
    assert _worker_catalog(data) is first
    # another harvest's catalog (a new broadcast value) is built anew, even when equal
    again = _worker_catalog(catalog.packed())
    assert again is not first and again.tables.keys() == first.tables.keys()
    assert not _worker_catalog(None).tables


def test_a_packed_catalog_reads_as_the_catalog_with_few_tables_parsed(corpus):
    catalog, _tasks = corpus
    names = sorted(catalog.tables)
    packed = Catalog.unpacked(catalog.packed(), parsed_tables=2)
    assert packed.default_database == catalog.default_database
    assert sorted(packed.tables) == names and len(packed.tables) == len(names)
    for name in names + names[::-1]:
        assert name in packed.tables
        assert packed.get(name) == catalog.get(name)
        assert len(packed.tables._parsed) <= 2
    # the most recently used stays parsed: asked again, it is the same object
    assert packed.get(names[0]) is packed.get(names[0])
    assert packed.get("nosuch.table") is None and "nosuch.table" not in packed.tables
    with pytest.raises(ValueError, match="parsed_tables must be 1 or more, not 0"):
        Catalog.unpacked(catalog.packed(), parsed_tables=0)


def test_a_packed_catalog_reads_every_field_back_with_one_frozen_object_per_column():
    catalog = Catalog.from_dict(
        {
            "tables": {
                "ods.a": {
                    "columns": {"uid": "bigint", "app": "string"},
                    "partitioned_by": [{"name": "dt", "type": "string"}],
                    "format": "orc",
                    "location": "/wh/ods/a",
                    "owner": "etl",
                    "layer": "ods",
                    "ttl_days": 30,
                },
                "ods.b": {"columns": {"uid": "bigint", "app": "int"}, "partitioned_by": ["dt"]},
                "dw.v": {"columns": ["uid"], "view_sql": "select uid from ods.a", "view_dialect": "hive"},
                "dw.loose": {"columns": ["x", "y"], "columns_ordered": False},
            }
        }
    )
    packed = Catalog.unpacked(catalog.packed())
    for name, table in catalog.tables.items():
        assert packed.get(name) == table
        assert packed.get(name).model_dump_json() == table.model_dump_json()
        assert packed.get(name).all_columns == table.all_columns
    a, b = packed.get("ods.a"), packed.get("ods.b")
    # the same name and type is one object; another type is another
    assert a.columns[0] is b.columns[0] and a.partitioned_by[0] is b.partitioned_by[0]
    assert a.columns[1] is not b.columns[1] and b.columns[1].type == "int"
    # shared, so frozen: a change is a copy, the other tables keep theirs
    with pytest.raises(ValidationError, match="frozen"):
        a.columns[0].name = "renamed"
    assert a.columns[0].model_copy(update={"name": "renamed"}).name == "renamed"
    assert b.columns[0].name == "uid"


def test_every_lineage_case_reads_back_as_extracted_once_packed():
    """Packing leaves out the fields that hold their defaults: every field the extractor fills, on
    every lineage case the project has (tests/ingest/cases), must read back as it was."""
    from tests.support.lineage_cases import catalog_for, load_cases

    settings = IngestSettings()
    checked = packed_bytes = json_bytes = 0
    for param in load_cases():
        case, raw_catalog = param.values
        task = SqlTask(
            task_id=case["name"],
            sql=case["sql"],
            dialect=case.get("dialect", "hive"),
            vars=case.get("vars") or {},
        )
        lineage = extract_lineage(task, catalog_for(raw_catalog), settings)
        packed = pack_model(lineage)
        assert unpack_model(TaskLineage, packed) == lineage, case["name"]
        assert unpack_model(SqlTask, pack_model(task)) == task
        checked += 1
        packed_bytes += len(packed)
        json_bytes += len(lineage.model_dump_json())
    assert checked > 300  # the case files were found
    assert packed_bytes < json_bytes / 2
