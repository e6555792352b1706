"""A harvest run is one use case (api/service/harvest_runs.py) for `watershed harvest`, the nightly
chain's harvest step and the runs router: every input checked before the graph is opened or Spark
starts, the same one-line errors, and the runs the graph records listed newest first."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.api.service import harvest_runs
from watershed.api.service.nightly import steps
from watershed.api.service.nightly.settings import NightlySettings
from watershed.graph.model import HarvestRun
from watershed.graph.server import free_port

DAY = "2024-01-31"


def test_a_blocked_out_dir_is_refused_before_the_graph_or_spark_by_the_cli_and_the_nightly(
    tmp_path, monkeypatch
):
    """No graph answers and the run directory's parent is a file: both faces name the directory,
    the nightly step with its date in front (it used to open the graph first and name that)."""
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path / "var"))
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "t1.sql").write_text("INSERT OVERWRITE TABLE dw.t1 SELECT a FROM ods.src;\n")
    settings = NightlySettings(nightly_tasks=tasks)
    out = steps.harvest_out(settings, DAY)
    out.parent.parent.mkdir(parents=True)
    out.parent.write_text("a file where the night's folder goes\n")

    cli = CliRunner().invoke(app, ["harvest", "--tasks", str(tasks), "--out", str(out)])
    with pytest.raises(steps.NightlyError) as nightly:
        steps.harvest(DAY, settings)

    assert cli.exit_code == 1, cli.output
    cli_line = cli.output.strip().removeprefix("error: ")
    assert cli_line == f"--out {out}: {out.parent} is not a directory"
    assert str(nightly.value) == f"harvest {DAY}: {cli_line}"


def test_an_unreadable_catalog_is_the_same_error_through_both_faces(tmp_path, monkeypatch):
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(free_port()))
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path / "var"))
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "t1.sql").write_text("INSERT OVERWRITE TABLE dw.t1 SELECT a FROM ods.src;\n")
    catalog = tmp_path / "catalog.json"
    catalog.write_text("{not json")

    cli = CliRunner().invoke(
        app, ["harvest", "--tasks", str(tasks), "--catalog", str(catalog), "--out", str(tmp_path / "out")]
    )
    with pytest.raises(steps.NightlyError) as nightly:
        steps.harvest(DAY, NightlySettings(nightly_tasks=tasks, nightly_catalog=catalog))

    assert cli.exit_code == 1, cli.output
    cli_line = cli.output.strip().removeprefix("error: ")
    assert str(catalog) in cli_line
    assert str(nightly.value) == f"harvest {DAY}: {cli_line}"


def _run(number: int, **counts) -> HarvestRun:
    return HarvestRun(
        id=f"harvest-20240131T0000{number:02d}-abcdef",
        started_at=f"2024-01-31T00:00:{number:02d}+00:00",
        inputs=[f"/tasks/{number}"],
        **counts,
    )


def test_the_recorded_runs_newest_first_a_page_at_a_time(graph_store):
    made = [_run(n, tasks=n, errors=n % 2, loaded=n, unchanged=1, seconds=0.5) for n in range(5)]
    for run in made:
        graph_store.record_run(run)

    seen, after = [], harvest_runs.FIRST
    for _ in range(len(made)):  # bounded: a cursor that went nowhere repeated its page forever
        page = harvest_runs.listing(graph_store, after=after, limit=2)
        seen += page.items
        if page.next_cursor is None:
            break
        after = seen[-1].id
    assert seen == made[::-1]
    assert harvest_runs.one(graph_store, made[3].id) == made[3]
    with pytest.raises(harvest_runs.HarvestRunNotFoundError, match="harvest run harvest-nope not found"):
        harvest_runs.one(graph_store, "harvest-nope")


def test_a_runs_error_records_a_page_at_a_time(graph_store, tmp_path):
    run = _run(1, tasks=3, errors=3)
    graph_store.record_run(run)
    with pytest.raises(harvest_runs.HarvestRunNotFoundError, match="harvested with another --out"):
        harvest_runs.problems(graph_store, tmp_path, run.id, limit=10)
    folder = tmp_path / "harvest" / run.id
    folder.mkdir(parents=True)
    records = [{"task_id": f"t{i}", "error": f"bad {i}"} for i in range(3)]
    (folder / "errors.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records) + "\n")

    first = harvest_runs.problems(graph_store, tmp_path, run.id, limit=2)
    assert [p.model_dump(exclude={"text"}) for p in first.items] == records[:2] and first.next_cursor
    rest = harvest_runs.problems(graph_store, tmp_path, run.id, start=2, limit=2)
    assert [p.model_dump(exclude={"text"}) for p in rest.items] == records[2:] and rest.next_cursor is None
