"""A record the graph cannot store, or a task beyond the analysis limits, is that record's or
task's error, never the harvest's (issue 35 items 5 and 7).

Real PySpark (the session fixture, local mode) into a real FalkorDB, as tests/ingest/test_harvest*.py.
"""

from __future__ import annotations

import json

from watershed.graph.catalog import Catalog
from watershed.ingest.harvest import run_harvest
from watershed.ingest.limits import AnalysisLimits, analysis_limits

CATALOG = Catalog.from_dict({"tables": {"ods.src": {"columns": ["a", "b"]}}})
INSERT = "INSERT OVERWRITE TABLE dw.{} SELECT a, b FROM ods.src"


def harvest(spark, store, **kwargs):
    return run_harvest(spark, store=store, catalog=CATALOG, progress=lambda _: None, **kwargs)


def loaded_tasks(store) -> list[str]:
    return [row[0] for row in store.read("MATCH (k:Task) RETURN k.id ORDER BY k.id")]


def errors_of(report) -> list[dict]:
    with open(f"{report.out_dir}/errors.jsonl") as handle:
        return [json.loads(line) for line in handle]


def test_records_holding_nul_or_a_lone_surrogate_are_their_own_errors(spark, graph_store, tmp_path):
    """A NUL in one task id failed the whole harvest with FalkorDB's CYPHER error, loading nothing."""
    export = tmp_path / "tasks.jsonl"
    records = [
        ("good1", "", INSERT.format("good1")),
        ("nul\\u0000id", "", INSERT.format("nul")),
        ("lone", "", INSERT.format("lone") + " -- \\ud800"),
        ("owned", ', "owner": "x\\u0000y"', INSERT.format("owned")),
        ("varied", ', "vars": {"d": "\\udfff"}', INSERT.format("varied")),
        ("good2", "", INSERT.format("good2")),
    ]
    # the escapes as an export spells them, decoded by the reader into NUL and lone surrogates
    lines = [f'{{"task_id": "{task}"{extra}, "sql": "{sql}"}}' for task, extra, sql in records]
    export.write_text("\n".join(lines) + "\n")
    report = harvest(spark, graph_store, tasks=str(export), out_dir=tmp_path / "out")

    assert report.status == "ok"
    assert (report.tasks, report.loaded) == (2, 2)
    assert loaded_tasks(graph_store) == ["good1", "good2"]
    with open(f"{report.out_dir}/run.json") as handle:
        assert json.load(handle)["status"] == "ok"
    errors = {e["source"]: e for e in errors_of(report)}
    assert set(errors) == {f"{export}:{line}" for line in (2, 3, 4, 5)}
    # each names the field and what it holds
    assert errors[f"{export}:2"]["task_id"] == "nul\x00id"
    assert errors[f"{export}:2"]["message"].startswith("task_id: holds NUL (U+0000)")
    assert errors[f"{export}:3"]["message"].startswith("sql: holds a lone surrogate (U+D800)")
    assert errors[f"{export}:4"]["message"].startswith("owner: holds NUL")
    assert errors[f"{export}:5"]["message"].startswith("vars: variable 'd' holds a lone surrogate")


def test_a_sql_file_holding_nul_is_that_files_error(spark, graph_store, tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "good.sql").write_text(INSERT.format("good") + ";\n")
    (tasks / "binary.sql").write_text(INSERT.format("binary") + " WHERE b = 'x\x00';\n")
    report = harvest(spark, graph_store, tasks=str(tasks), out_dir=tmp_path / "out")
    assert report.status == "ok" and loaded_tasks(graph_store) == ["good"]
    [error] = errors_of(report)
    assert error["source"] == str(tasks / "binary.sql") and error["task_id"] == "binary"
    assert error["message"].startswith("sql: holds NUL")


def test_a_task_table_row_holding_nul_is_that_rows_error(spark, graph_store, tmp_path):
    """The executors check a table's rows: the same error, from the other side of Spark."""
    rows = [("t1", INSERT.format("t1"), "alice"), ("t2", INSERT.format("t2"), "bob\x00")]
    spark.createDataFrame(rows, ["task_id", "sql", "owner"]).createOrReplaceTempView("nul_tasks")
    report = harvest(spark, graph_store, tasks_table="nul_tasks", out_dir=tmp_path / "out")
    assert report.status == "ok" and loaded_tasks(graph_store) == ["t1"]
    [error] = errors_of(report)
    assert error["task_id"] == "t2" and error["message"].startswith("owner: holds NUL")


def test_a_task_beyond_the_analysis_limits_is_that_tasks_error(spark, graph_store, tmp_path):
    """A statement nested 50,000 brackets deep came back as a RecursionError inside sqlglot."""
    deep = "INSERT OVERWRITE TABLE dw.deep SELECT " + "(" * 50_000 + "a" + ")" * 50_000 + " FROM ods.src"
    long = "INSERT OVERWRITE TABLE dw.long SELECT " + " || ".join(["a"] * 40) + " FROM ods.src"
    export = tmp_path / "tasks.jsonl"
    export.write_text(
        "".join(
            json.dumps(record) + "\n"
            for record in (
                {"task_id": "good", "sql": INSERT.format("good")},
                {"task_id": "deep", "sql": deep},
                {"task_id": "long", "sql": long},
            )
        )
    )
    # the driver's limits are the executors' (they do not read their own settings)
    with analysis_limits(AnalysisLimits(analysis_max_tokens=60)):
        report = harvest(spark, graph_store, tasks=str(export), out_dir=tmp_path / "out")
    assert report.status == "ok" and report.tasks == 3 and report.tasks_with_errors == 2
    messages = {e["task_id"]: e["message"] for e in errors_of(report)}
    assert set(messages) == {"deep", "long"}
    assert "more than 100 deep" in messages["deep"] and "analysis_max_depth" in messages["deep"]
    assert "limit of 60" in messages["long"] and "analysis_max_tokens" in messages["long"]
    # the good task's lineage is in; the others are loaded without edges, as a failed extraction is
    edges = graph_store.read("MATCH (s:Column)-[r:FLOWS_TO]->(t:Column) RETURN DISTINCT r.task")
    assert edges == [["good"]]
