"""Conditions as lineage (issue 13, seed 004): the columns that decide a value — CASE/IF conditions,
window PARTITION BY/ORDER BY — are weak references by default, and value sources too with the
setting `conditions_as_lineage` (WATERSHED_CONDITIONS_AS_LINEAGE). Each SQL runs both ways.

SQL from reata/sqllineage's column tests (tests/sql/column/test_column_select_case_when.py, and
its window-function test), tables put in databases; expectations read from the SQL and
docs/lineage.md.
"""

from __future__ import annotations

import pytest

from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.ingest.settings import IngestSettings

ENV = "WATERSHED_CONDITIONS_AS_LINEAGE"

CASE_WHEN = """INSERT INTO dw.tab1
SELECT CASE WHEN col1 = 1 THEN 'V1' WHEN col1 = 2 THEN 'V2' END AS col2
FROM ods.tab2"""

CASE_WHEN_WITH_SUBQUERY = """INSERT INTO dw.tab1
SELECT CASE WHEN (SELECT avg(col1) FROM ods.tab3) > 0 AND col2 = 1 THEN (SELECT avg(col1) FROM ods.tab3) ELSE 0 END AS col1
FROM ods.tab4"""

WINDOW = """INSERT OVERWRITE TABLE dw.tab1
SELECT row_number() OVER (PARTITION BY col1 ORDER BY col2 DESC) AS rnum
FROM ods.tab2"""

# Hive's IF (LanguageManual UDF, conditional functions): the test is a condition, the two
# branches are values
HIVE_IF = """INSERT OVERWRITE TABLE dw.t
SELECT if(status = 'ok', amount, 0) AS paid FROM ods.orders"""


def _run(sql: str) -> tuple[dict[str, set[tuple[str, str, tuple[str, ...]]]], set[tuple[str, str]]]:
    # settings read now, under the test's environment (extract_lineage caches its defaults)
    result = extract_lineage(
        SqlTask(task_id="conditions", sql=sql, dialect="hive"), settings=IngestSettings()
    )
    assert result.errors == []
    columns = {c.target: {(s.id, s.kind, tuple(s.functions)) for s in c.sources} for c in result.columns}
    weak = {(w.column, w.role) for w in result.weak_references}
    return columns, weak


@pytest.fixture(params=[False, True], ids=["off", "on"])
def as_lineage(request, monkeypatch) -> bool:
    monkeypatch.setenv(ENV, "true" if request.param else "false")
    return request.param


def test_the_setting_reads_its_environment_variable(monkeypatch) -> None:
    assert IngestSettings().conditions_as_lineage is False
    monkeypatch.setenv(ENV, "true")
    assert IngestSettings().conditions_as_lineage is True


def test_case_when_conditions(as_lineage: bool) -> None:
    columns, weak = _run(CASE_WHEN)
    expected = {("ods.tab2.col1", "conditional-value", ("eq",))} if as_lineage else set()
    assert columns == {"dw.tab1.col2": expected}
    assert weak == {("ods.tab2.col1", "condition")}


def test_case_when_with_subqueries(as_lineage: bool) -> None:
    columns, weak = _run(CASE_WHEN_WITH_SUBQUERY)
    # the THEN value is an average of tab3.col1 either way; the condition adds tab4.col2 and
    # the compared average when conditions count
    sources = {(column, kind) for column, kind, _functions in columns["dw.tab1.col1"]}
    if as_lineage:
        assert sources == {("ods.tab3.col1", "aggregate"), ("ods.tab4.col2", "conditional-value")}
    else:
        assert sources == {("ods.tab3.col1", "aggregate")}
    assert weak == {("ods.tab3.col1", "condition"), ("ods.tab4.col2", "condition")}


def test_window_partition_and_order(as_lineage: bool) -> None:
    columns, weak = _run(WINDOW)
    if as_lineage:
        # the kind of the value they decide: a window function's output
        expected = {
            ("ods.tab2.col1", "window", ("row_number",)),
            ("ods.tab2.col2", "window", ("row_number",)),
        }
    else:
        expected = set()
    assert columns == {"dw.tab1.rnum": expected}
    assert weak == {("ods.tab2.col1", "group"), ("ods.tab2.col2", "order")}


def test_hive_if(as_lineage: bool) -> None:
    columns, weak = _run(HIVE_IF)
    expected = {("ods.orders.amount", "conditional-value", ())}
    if as_lineage:
        expected.add(("ods.orders.status", "conditional-value", ("eq",)))
    assert columns == {"dw.t.paid": expected}
    assert weak == {("ods.orders.status", "condition")}


def test_settings_given_to_extract_lineage_win_over_the_environment(monkeypatch) -> None:
    """A caller's IngestSettings (the harvest job's, read once on the driver) decides, not the
    environment of the process that happens to run the extraction."""
    monkeypatch.setenv(ENV, "false")
    result = extract_lineage(
        SqlTask(task_id="conditions", sql=CASE_WHEN, dialect="hive"),
        settings=IngestSettings(conditions_as_lineage=True),
    )
    sources = {(s.id, s.kind) for c in result.columns for s in c.sources}
    assert sources == {("ods.tab2.col1", "conditional-value")}
