"""Statement-level lineage of issue 13 in a real graph (FalkorDB): files as `path:` nodes, a dropped
staging table folded away, an UPDATE's and a MERGE's columns — loaded with `upsert_tasks` and read
back with `lineage`, as the service does."""

from __future__ import annotations

from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage

CATALOG = Catalog.from_dict(
    {
        "tables": {
            "ods.u": {"columns": ["uid", "email"], "partitioned_by": ["dt"]},
            "dw.t": {"columns": ["uid", "email"]},
            "dw.s": {"columns": ["uid", "email"]},
        }
    }
)
# Hive: load files, stage, publish, drop the stage, export the result to a directory.
PIPELINE = """
LOAD DATA INPATH '/landing/u/2024-01-31' INTO TABLE ods.u PARTITION (dt='2024-01-31');
CREATE TABLE tmp.stage AS SELECT uid, lower(email) AS email FROM ods.u WHERE dt = '2024-01-31';
INSERT OVERWRITE TABLE dw.t SELECT uid, email FROM tmp.stage;
DROP TABLE tmp.stage;
INSERT OVERWRITE DIRECTORY '/export/t' SELECT uid, email FROM dw.t;
"""
MERGE = """
MERGE INTO dw.s USING dw.t ON s.uid = t.uid
WHEN MATCHED THEN UPDATE SET email = t.email
WHEN NOT MATCHED THEN INSERT *
"""


def _load(store, tasks: dict[str, tuple[str, str]]) -> None:
    items = []
    for task_id, (sql, dialect) in tasks.items():
        task = SqlTask(task_id=task_id, sql=sql, dialect=dialect)
        lineage = extract_lineage(task, CATALOG)
        assert not lineage.errors, lineage.errors
        items.append((task, lineage))
    store.upsert_tasks(items, CATALOG)


def test_files_and_folded_staging_table_in_the_graph(graph_store) -> None:
    _load(graph_store, {"pipeline": (PIPELINE, "hive"), "merge": (MERGE, "spark")})
    up = graph_store.lineage("path:fs./export/t.email", "upstream", depth=10)
    assert {(e.source, e.target) for e in up.edges} == {
        ("dw.t.email", "path:fs./export/t.email"),
        ("ods.u.email", "dw.t.email"),
        ("path:fs./landing/u/2024-01-31.email", "ods.u.email"),
    }
    # the staging table left no node: the task does not outlive it
    assert graph_store.nodes(["tmp.stage", "tmp.stage.email"]) == []
    down = graph_store.lineage("dw.t.email", "downstream", depth=1)
    assert {e.target for e in down.edges} == {"path:fs./export/t.email", "dw.s.email"}
    kinds = {
        e.target: e.properties["kind"] for e in graph_store.lineage("dw.t.email", "upstream", depth=1).edges
    }
    assert kinds == {"dw.t.email": "expression"}  # lower() in the dropped stage
