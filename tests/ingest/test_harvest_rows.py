"""The rows the harvest's executors send the driver: each result serialised once, decoded as extracted."""

from __future__ import annotations

import pytest

from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask, TaskLineage
from watershed.ingest.extract import extract_lineage
from watershed.ingest.generator import generate_warehouse
from watershed.ingest.harvest import _extract_partition, _worker_catalog
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
    broadcast = spark.sparkContext.broadcast(catalog.model_dump(mode="json"))
    records = [task.model_dump() for task in tasks] + [{"task_id": "bad", "sql": 42}]
    rows = list(_extract_partition(iter(records), broadcast, settings.model_dump(), send_task))
    broadcast.unpersist()

    *lineages, problem = rows
    assert problem[0] == "problem" and problem[1] == "bad" and "sql" in problem[2]
    assert len(lineages) == len(tasks)
    for task, (kind, task_id, task_json, lineage_json) in zip(tasks, lineages, strict=True):
        assert (kind, task_id) == ("lineage", task.task_id)
        assert TaskLineage.model_validate_json(lineage_json) == extract_lineage(task, catalog, settings)
        if send_task:
            assert SqlTask.model_validate_json(task_json) == task
        else:
            assert task_json == ""
    assert any(TaskLineage.model_validate_json(row[3]).errors for row in lineages)


def test_a_worker_builds_each_catalog_once(corpus):
    catalog, _tasks = corpus
    data = catalog.model_dump(mode="json")
    first = _worker_catalog(data)
    assert _worker_catalog(data) is first
    # another harvest's catalog (a new broadcast value) is built anew, even when equal
    again = _worker_catalog(catalog.model_dump(mode="json"))
    assert again is not first and again.tables.keys() == first.tables.keys()
    assert not _worker_catalog(None).tables
