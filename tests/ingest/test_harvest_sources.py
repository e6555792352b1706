"""Several harvest corpora in one graph: each harvest loads its tasks as its source and prunes only
those (issue 38, "Sources"). Real PySpark (local mode) into a real FalkorDB."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.api.service.nightly.settings import NightlySettings
from watershed.api.service.nightly.steps import harvest_result
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.ingest.harvest import HarvestError, default_source, run_harvest, source_name
from watershed.ingest.harvest import main as harvest_main

runner = CliRunner()


def write_tasks(directory: Path, ids, source_table="ods.src") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for path in directory.glob("*.sql"):
        path.unlink()
    for task_id in ids:
        (directory / f"{task_id}.sql").write_text(
            f"INSERT OVERWRITE TABLE dw.{task_id} SELECT a, b FROM {source_table} WHERE dt = '2024-01-31';\n"
        )
    return directory


def harvest(spark, store, tasks, out, **kwargs):
    return run_harvest(spark, tasks=str(tasks), store=store, out_dir=out, progress=lambda _: None, **kwargs)


def task_sources(store) -> dict[str, str | None]:
    return {row[0]: row[1] for row in store.read("MATCH (k:Task) RETURN k.id, k.source")}


def test_two_corpora_live_side_by_side_and_each_prunes_only_its_own(spark, graph_store, tmp_path):
    a = write_tasks(tmp_path / "a", ["a1", "a2", "a3", "a4"])
    b = write_tasks(tmp_path / "b", ["b1", "b2", "b3"])
    first = harvest(spark, graph_store, a, tmp_path / "out")
    assert first.source == f"files:{a.resolve()}" and first.loaded == 4

    # The second corpus used to be refused: pruning it would have deleted 4 of 7 tasks (57%).
    second = harvest(spark, graph_store, b, tmp_path / "out")
    assert (second.status, second.prune, second.deleted, second.loaded) == ("ok", "nothing", 0, 3)
    sources = task_sources(graph_store)
    assert sources == {
        **{t: f"files:{a.resolve()}" for t in ("a1", "a2", "a3", "a4")},
        **{t: f"files:{b.resolve()}" for t in ("b1", "b2", "b3")},
    }
    seen = graph_store.read("MATCH (k:Task) RETURN k.id, k.seen_at")
    assert all(at and at.endswith("+00:00") for _, at in seen)

    # Re-harvesting each after a task left it prunes only that corpus's task.
    write_tasks(a, ["a2", "a3", "a4"])
    again_a = harvest(spark, graph_store, a, tmp_path / "out")
    assert (again_a.status, again_a.deleted, again_a.unchanged, again_a.prune_first) == ("ok", 1, 3, ["a1"])
    write_tasks(b, ["b1", "b2"])
    again_b = harvest(spark, graph_store, b, tmp_path / "out")
    assert (again_b.status, again_b.deleted, again_b.prune_first) == ("ok", 1, ["b3"])
    assert sorted(task_sources(graph_store)) == ["a2", "a3", "a4", "b1", "b2"]
    record = json.loads((Path(again_b.out_dir) / "run.json").read_text())
    assert record["source"] == f"files:{b.resolve()}" and record["taken_over"] == {"count": 0, "first": []}


def test_a_task_two_corpora_define_belongs_to_the_later_load(spark, graph_store, tmp_path):
    a = write_tasks(tmp_path / "a", ["a1", "a2", "shared"])
    b = write_tasks(tmp_path / "b", ["b1", "shared"])
    harvest(spark, graph_store, a, tmp_path / "out", source="corpus-a")
    taken = harvest(spark, graph_store, b, tmp_path / "out", source="corpus-b")
    assert (taken.taken_over, taken.taken_over_first, taken.unchanged) == (1, ["shared"], 1)
    # the nightly's harvest step reports it from the run record
    night = harvest_result(
        "2024-01-31", NightlySettings(data_dir=tmp_path / "data"), run_dir=Path(taken.out_dir)
    )
    assert {k: night.counts[k] for k in ("source", "taken_over", "adopted")} == {
        "source": "corpus-b",
        "taken_over": 1,
        "adopted": 0,
    }
    assert task_sources(graph_store)["shared"] == "corpus-b"
    assert json.loads((Path(taken.out_dir) / "run.json").read_text())["taken_over"] == {
        "count": 1,
        "first": ["shared"],
    }
    # A drops it: it is B's now, so A's prune leaves it alone
    write_tasks(a, ["a1", "a2"])
    dropped = harvest(spark, graph_store, a, tmp_path / "out", source="corpus-a")
    assert (dropped.prune, dropped.deleted) == ("nothing", 0)
    assert task_sources(graph_store)["shared"] == "corpus-b"


def test_the_guard_counts_the_sources_own_tasks(spark, graph_store, tmp_path):
    big = write_tasks(tmp_path / "big", [f"big{i}" for i in range(10)])
    small = write_tasks(tmp_path / "small", ["s1", "s2", "s3"])
    harvest(spark, graph_store, big, tmp_path / "out")
    harvest(spark, graph_store, small, tmp_path / "out")
    # two of the small corpus's three tasks gone: 67% of its own, though 2 of 13 in the graph
    write_tasks(small, ["s1"])
    shrunk = harvest(spark, graph_store, small, tmp_path / "out")
    assert (shrunk.status, shrunk.prune_would_remove, shrunk.deleted) == ("prune-refused", 2, 0)
    assert f"of the 3 tasks of source files:{small.resolve()}" in shrunk.prune_message
    assert graph_store.stats().tasks == 13


def legacy_graph(store, ids):
    """Tasks loaded before sources existed: no source, no seen time."""
    tasks = [
        SqlTask(
            task_id=t,
            sql=f"INSERT OVERWRITE TABLE dw.{t} SELECT a, b FROM ods.src WHERE dt = '2024-01-31';\n",
        )
        for t in ids
    ]
    store.upsert_tasks([(t, extract_lineage(t)) for t in tasks])
    store.write_all([("MATCH (k:Task) REMOVE k.seen_at", {})])


def test_tasks_from_before_sources_are_adopted_by_their_corpus_only(spark, graph_store, tmp_path):
    legacy_graph(graph_store, ["old1", "old2", "old3", "gone1"])
    # A new corpus sharing no task with them leaves them alone (and is not refused).
    other = write_tasks(tmp_path / "other", ["n1"])
    new = harvest(spark, graph_store, other, tmp_path / "out")
    assert (new.status, new.adopted, new.deleted) == ("ok", 0, 0)
    assert {t: s for t, s in task_sources(graph_store).items() if s is None} == dict.fromkeys(
        ["old1", "old2", "old3", "gone1"]
    )

    # Their own corpus, re-harvested without gone1: it adopts what is left and prunes it, so an
    # old graph converges as it did before sources (the guard counts the adopted: 1 of 4).
    corpus = write_tasks(tmp_path / "corpus", ["old1", "old2", "old3"])
    adopting = harvest(spark, graph_store, corpus, tmp_path / "out")
    assert (adopting.status, adopting.adopted, adopting.deleted, adopting.prune_first) == (
        "ok",
        1,
        1,
        ["gone1"],
    )
    assert (adopting.loaded, adopting.unchanged) == (0, 3)
    assert task_sources(graph_store) == {
        **dict.fromkeys(["old1", "old2", "old3"], f"files:{corpus.resolve()}"),
        "n1": f"files:{other.resolve()}",
    }


def test_an_adopting_harvest_whose_prune_is_refused_still_owns_what_it_adopted(spark, graph_store, tmp_path):
    legacy_graph(graph_store, ["keep", "gone1", "gone2"])
    corpus = write_tasks(tmp_path / "corpus", ["keep"])
    refused = harvest(spark, graph_store, corpus, tmp_path / "out")
    assert (refused.status, refused.adopted, refused.prune_would_remove) == ("prune-refused", 2, 2)
    assert set(task_sources(graph_store).values()) == {f"files:{corpus.resolve()}"}
    # the next run of the same corpus counts them as its own, and --prune-force removes them
    forced = harvest(spark, graph_store, corpus, tmp_path / "out", prune_force=True)
    assert (forced.status, forced.deleted, forced.adopted) == ("ok", 2, 0)
    assert list(task_sources(graph_store)) == ["keep"]


def test_source_names_are_derived_the_same_way_and_checked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks").mkdir()
    assert (
        default_source("tasks", None)
        == default_source(tmp_path / "tasks", None)
        == f"files:{tmp_path / 'tasks'}"
    )
    assert default_source(None, " DB.Tasks ") == "table:db.tasks"
    assert source_name(" nightly ", "tasks") == "nightly"
    for bad, message in (
        ("  ", "must not be blank"),
        ("x" * 600, "longer than 512"),
        ("two\nlines", "'\\n', which does not print"),
        ("openlineage:spark", "names OpenLineage producers"),
    ):
        with pytest.raises(HarvestError, match=re.escape(message)) as raised:
            source_name(bad, "tasks")
        assert str(raised.value).startswith("--source ")


def test_both_entry_points_name_a_bad_source_before_spark_starts(tmp_path, capsys):
    corpus = write_tasks(tmp_path / "corpus", ["t1"])
    out = tmp_path / "out"
    result = runner.invoke(app, ["harvest", "--tasks", str(corpus), "--source", "a\tb", "--out", str(out)])
    assert result.exit_code == 1
    assert "--source 'a\\tb'" in " ".join(result.output.split())
    status = harvest_main(["--tasks", str(corpus), "--source", "", "--out", str(out), "--graph", "none"])
    assert status == 1 and "--source '': a source name must not be blank" in capsys.readouterr().err
    assert not out.exists()
