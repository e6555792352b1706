"""Nothing lost on bad harvest input: pruning that refuses, duplicate ids, failed runs (issue 11 items 4, 6, 19, 21).

Real PySpark (the session fixture, local mode) into a real FalkorDB; the CLI
in process (its Spark is the session's) and the spark-submit entry point.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.graph.catalog import Catalog
from watershed.ingest.harvest import main as harvest_main
from watershed.ingest.harvest import run_harvest

runner = CliRunner()


def write_tasks(directory, ids, source="ods.src"):
    directory.mkdir(parents=True, exist_ok=True)
    for task_id in ids:
        (directory / f"{task_id}.sql").write_text(
            f"INSERT OVERWRITE TABLE dw.{task_id} SELECT a, b FROM {source} WHERE dt = '2024-01-31';\n"
        )
    return directory


def harvest(spark, store, tasks, out, **kwargs):
    # the directories of a test are versions of one corpus: one source, whatever the path
    kwargs.setdefault("source", "corpus")
    return run_harvest(spark, tasks=str(tasks), store=store, out_dir=out, progress=lambda _: None, **kwargs)


def snapshot(store):
    """Every task with its version and every column edge with its task: what a harvest must not lose."""
    tasks = store.read("MATCH (k:Task) RETURN k.id, k.version, k.sql_hash ORDER BY k.id")
    edges = store.read(
        "MATCH (s:Column)-[r:FLOWS_TO]->(t:Column) RETURN s.id, t.id, r.task ORDER BY s.id, t.id, r.task"
    )
    return tasks, edges


def run_record(report):
    with open(f"{report.out_dir}/run.json") as handle:
        return json.load(handle)


def error_lines(report):
    with open(f"{report.out_dir}/errors.jsonl") as handle:
        return [json.loads(line) for line in handle]


def test_an_empty_or_shrunken_corpus_does_not_prune_the_graph(spark, graph_store, tmp_path):
    """Item 4: an existing but empty --tasks directory used to delete every task of the graph."""
    ids = [f"t{i}" for i in range(6)]
    full = write_tasks(tmp_path / "full", ids)
    assert harvest(spark, graph_store, full, tmp_path / "out").loaded == 6
    before = snapshot(graph_store)
    assert len(before[0]) == 6 and len(before[1]) == 12

    (tmp_path / "empty").mkdir()
    empty = harvest(spark, graph_store, tmp_path / "empty", tmp_path / "out")
    assert snapshot(graph_store) == before
    assert (empty.status, empty.prune, empty.deleted) == ("prune-refused", "refused", 0)
    assert empty.prune_would_remove == 6 and empty.prune_first == ids
    assert "no task" in empty.prune_message and "t0" in empty.prune_message
    record = run_record(empty)
    assert record["status"] == "prune-refused"
    assert record["prune"]["would_remove"] == 6 and record["prune"]["first"] == ids

    # Two of six left: pruning four (67%) is more than the default limit of 50%.
    small = write_tasks(tmp_path / "small", ids[:2])
    shrunk = harvest(spark, graph_store, small, tmp_path / "out")
    assert shrunk.status == "prune-refused" and shrunk.prune_first == ids[2:]
    assert snapshot(graph_store) == before
    # A file whose task id cannot be read could be any of the missing tasks: pruning is skipped.
    (small / "binary.sql").write_bytes(b"\xff\xfe-- task: t3\n")
    skipped = harvest(spark, graph_store, small, tmp_path / "out", prune_max_fraction=1.0)
    assert (skipped.status, skipped.prune, skipped.deleted) == ("ok", "skipped", 0)
    assert snapshot(graph_store) == before
    assert [e["source"] for e in error_lines(skipped)] == [str(small / "binary.sql")]
    (small / "binary.sql").unlink()
    # A higher limit, or --prune-force, lets it through.
    allowed = harvest(spark, graph_store, small, tmp_path / "out", prune_max_fraction=0.7)
    assert allowed.status == "ok" and allowed.deleted == 4
    assert [row[0] for row in snapshot(graph_store)[0]] == ids[:2]
    forced = harvest(spark, graph_store, tmp_path / "empty", tmp_path / "out", prune_force=True)
    assert forced.status == "ok" and forced.deleted == 2 and snapshot(graph_store) == ([], [])


def test_both_entry_points_refuse_to_prune_with_exit_1_and_keep_the_load(
    spark, graph_store, falkordb_server, tmp_path, monkeypatch, capsys
):
    """Item 4 through `watershed harvest` and `spark-submit ingest/harvest.py` (its argparse main)."""
    monkeypatch.setenv("WATERSHED_FALKORDB_HOST", falkordb_server.host)
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(falkordb_server.port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    shuffle = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        ids = ["keep_a", "keep_b", "keep_c"]
        corpus = write_tasks(tmp_path / "corpus", ids)
        out = tmp_path / "out"
        first = runner.invoke(
            app,
            ["harvest", "--tasks", str(corpus), "--source", "corpus", "--out", str(out)],
            catch_exceptions=False,
        )
        assert first.exit_code == 0, first.output
        before = snapshot(graph_store)

        # One task left and a new one: the new one loads, the two missing ones (67%) stay.
        smaller = write_tasks(tmp_path / "smaller", ["keep_a", "new_d"])
        refused = runner.invoke(
            app,
            ["harvest", "--tasks", str(smaller), "--source", "corpus", "--out", str(out)],
            catch_exceptions=False,
        )
        assert refused.exit_code == 1, refused.output
        text = " ".join(refused.output.split())
        assert "prune refused" in text and "keep_b, keep_c" in text and "--prune-force" in text
        tasks_now = [row[0] for row in snapshot(graph_store)[0]]
        assert tasks_now == ["keep_a", "keep_b", "keep_c", "new_d"]
        assert all(edge in snapshot(graph_store)[1] for edge in before[1])

        capsys.readouterr()
        (tmp_path / "empty").mkdir()
        status = harvest_main(["--tasks", str(tmp_path / "empty"), "--source", "corpus", "--out", str(out)])
        captured = capsys.readouterr()
        assert status == 1 and "prune refused" in captured.err and "keep_a" in captured.err
        assert json.loads(captured.out.splitlines()[-1])["prune"]["would_remove"] == 4
        assert [row[0] for row in snapshot(graph_store)[0]] == tasks_now

        forced = harvest_main(
            ["--tasks", str(smaller), "--source", "corpus", "--out", str(out), "--prune-force"]
        )
        assert forced == 0
        assert [row[0] for row in snapshot(graph_store)[0]] == ["keep_a", "new_d"]
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", shuffle)


def _export(path, *records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_duplicate_task_ids_load_neither_and_every_reharvest_is_the_same(spark, graph_store, tmp_path):
    """Item 6 (and 19: a record with `vars` as a list is reported with file:line, the rest harvested)."""
    catalog = Catalog.from_dict(
        {"tables": {"ods.src": {"columns": ["a", "b", "c"]}, "ods.other": {"columns": ["a", "b"]}}}
    )
    export = tmp_path / "tasks.jsonl"
    insert = "INSERT OVERWRITE TABLE dw.{} SELECT {} FROM ods.src"
    _export(
        export,
        {"task_id": "dup", "sql": insert.format("dup", "a")},
        {"task_id": "single", "sql": insert.format("single", "a, b")},
        {"task_id": "listed", "sql": insert.format("listed", "a")},
    )
    out = tmp_path / "out"
    assert harvest(spark, graph_store, export, out, catalog=catalog).loaded == 3
    original = snapshot(graph_store)

    _export(
        export,
        {"task_id": "dup", "sql": insert.format("dup", "b")},  # line 1
        {"task_id": "single", "sql": insert.format("single", "a, b")},  # line 2
        {"task_id": "dup", "sql": insert.format("dup", "c")},  # line 3
        {"task_id": "listed", "sql": insert.format("listed", "c"), "vars": ["date=2024-01-31"]},  # line 4
        {"task_id": "fresh", "sql": "INSERT OVERWRITE TABLE dw.fresh SELECT a FROM ods.other"},  # line 5
        {"task_id": "twice", "sql": "SELECT 1"},  # line 6: identical copies are duplicates too
        {"task_id": "twice", "sql": "SELECT 1"},  # line 7
    )
    runs = [harvest(spark, graph_store, export, out, catalog=catalog) for _ in range(2)]
    graphs = []
    for report in runs:
        assert report.status == "ok" and report.deleted == 0
        assert report.tasks == 2  # single, fresh: neither duplicate reached extraction
        assert [(d.task_id, d.locations) for d in report.duplicates] == [
            ("dup", (f"{export}:1", f"{export}:3")),
            ("twice", (f"{export}:6", f"{export}:7")),
        ]
        graphs.append(snapshot(graph_store))
    assert runs[0].loaded == 1 and runs[1].loaded == 0  # fresh, once

    # Neither copy of `dup` was loaded and none was pruned: the graph keeps the version it had, and
    # so does `listed`, whose new record is bad.
    tasks, edges = graphs[0]
    assert graphs[1] == graphs[0]
    assert [row for row in tasks if row[0] != "fresh"] == original[0]
    assert [e for e in edges if e[2] != "fresh"] == original[1]

    errors = [error_lines(report) for report in runs]
    assert errors[0] == errors[1]
    by_task = {(e["task_id"], e["source"]): e["message"] for e in errors[0]}
    assert f"{export}:1" in by_task["dup", f"{export}:1; {export}:3"]
    assert f"{export}:3" in by_task["dup", f"{export}:1; {export}:3"]
    assert "vars" in by_task["listed", f"{export}:4"]
    assert run_record(runs[1])["duplicate_task_ids"] == 2


def test_duplicate_ids_in_a_task_table_are_found_by_spark_before_extraction(spark, graph_store, tmp_path):
    rows = [
        ("d", "INSERT OVERWRITE TABLE dw.d SELECT a FROM ods.x", "{}"),
        ("e", "INSERT OVERWRITE TABLE dw.e SELECT a FROM ods.x", "{}"),
        (" d", "INSERT OVERWRITE TABLE dw.d SELECT b FROM ods.x", "{}"),
        ("f", "INSERT OVERWRITE TABLE dw.f SELECT a FROM ods.x", '["not", "an", "object"]'),
    ]
    spark.createDataFrame(rows, ["task_id", "sql", "vars"]).createOrReplaceTempView("duplicate_tasks")
    report = run_harvest(
        spark, tasks_table="duplicate_tasks", store=graph_store, out_dir=tmp_path, progress=lambda _: None
    )
    assert [(d.task_id, d.count, d.locations) for d in report.duplicates] == [
        ("d", 2, ("table duplicate_tasks",))
    ]
    assert report.tasks == 1 and report.loaded == 1
    assert [row[0] for row in snapshot(graph_store)[0]] == ["e"]
    problems = [(p.location, p.task_id) for p in report.source_problems]
    assert (
        problems == [("table duplicate_tasks, task f", "f")] and "vars" in report.source_problems[0].message
    )
    assert {e["task_id"] for e in error_lines(report)} == {"d", "f"}


def test_a_harvest_that_cannot_read_its_input_leaves_no_run_directory(spark, tmp_path):
    """Item 21: a failed harvest left an empty run directory."""
    out = tmp_path / "out"
    (tmp_path / "tasks.txt").write_text("SELECT 1\n")
    (tmp_path / "garbage.jsonl").write_bytes(b"\x1f\x8b\x08 gzip, not JSONL\n")
    for source in ("tasks.txt", "garbage.jsonl"):
        with pytest.raises(ValueError, match=source):
            run_harvest(spark, tasks=str(tmp_path / source), out_dir=out, progress=lambda _: None)
    assert not out.exists() or list(out.iterdir()) == []


def test_a_run_that_fails_midway_leaves_a_run_record_saying_so(spark, tmp_path):
    """Item 21: once a run has its directory, a failure is recorded in its run.json."""
    from watershed.graph.falkordb_store import FalkorDBStore
    from watershed.graph.server import ServerSpec, free_port, start, stop

    spec = ServerSpec("falkordb", "127.0.0.1", free_port(), tmp_path / "var", with_falkordb=True)
    start(spec)
    store = FalkorDBStore(spec.host, spec.port, graph="doomed")
    stop(spec)  # the graph server goes away before the harvest loads anything
    tasks = write_tasks(tmp_path / "tasks", ["gone"])
    catalog = Catalog.from_dict({"tables": {"ods.src": {"columns": ["a", "b"]}}})
    with pytest.raises(Exception) as raised:
        harvest(spark, store, tasks, tmp_path / "out", catalog=catalog)
    (run,) = (tmp_path / "out").iterdir()
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "failed" and type(raised.value).__name__ in record["error"]
    assert any(str(run / "run.json") in note for note in raised.value.__notes__)
