"""The configured run date (the nightly run's logical date) fills `${date}` in tasks that set none."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.ingest.harvest import main
from watershed.ingest.settings import IngestSettings

SQL = "INSERT OVERWRITE TABLE dw.t PARTITION (dt='${date}') SELECT a FROM ods.s WHERE dt = '${date}'"


def _dt_values(task: SqlTask, settings: IngestSettings) -> list[str]:
    lineage = extract_lineage(task, Catalog(), settings)
    assert lineage.errors == []
    return [value for read in lineage.reads for p in read.predicates for value in p.values]


def test_run_date_fills_a_task_without_date_vars():
    task = SqlTask(task_id="t", sql=SQL)
    assert _dt_values(task, IngestSettings()) == ["${date}"]
    assert _dt_values(task, IngestSettings(run_date="2024-01-31")) == ["2024-01-31"]


def test_a_tasks_own_date_and_a_scripts_set_win():
    settings = IngestSettings(run_date="2024-01-31")
    own = SqlTask(task_id="t", sql=SQL, vars={"date": "2020-01-01"})
    assert _dt_values(own, settings) == ["2020-01-01"]
    # bizdate is a run-date name too: the task has its own run date, so `date` stays unset
    other_name = SqlTask(task_id="t", sql=SQL, vars={"bizdate": "2020-01-01"})
    assert _dt_values(other_name, settings) == ["${date}"]
    scripted = SqlTask(task_id="t", sql="SET date=2019-05-05;\n" + SQL)
    assert _dt_values(scripted, settings) == ["2019-05-05"]
    # a script that SETs another run-date name keeps its own date: `date` is not injected
    own_set = SqlTask(task_id="t", sql="SET ds=2019-05-05;\n" + SQL)
    assert _dt_values(own_set, settings) == ["${date}"]
    lineage = extract_lineage(own_set, Catalog(), settings)
    assert extract_lineage(own_set, Catalog(), IngestSettings()).reads == lineage.reads


def test_a_bad_run_date_is_refused_naming_it(capsys):
    with pytest.raises(ValidationError, match="run_date"):
        IngestSettings(run_date="31/01/2024")
    with pytest.raises(SystemExit) as exit_info:
        main(["--tasks", "x", "--run-date", "yesterday"])
    assert exit_info.value.code == 2
    assert "'yesterday' is not a date of the form YYYY-MM-DD" in capsys.readouterr().err
