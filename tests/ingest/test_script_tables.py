"""Tables a script drops or renames after writing them (ingest/script_tables.py).

The family cases in lineage_cases/script_renames_and_drops.yaml use public SQL; these check the
composition rules on hand-made scripts: kinds and functions through a dropped table, chains of
dropped tables, weak references, and a table read before the script rewrote it.
"""

from __future__ import annotations

from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask, TaskLineage
from watershed.ingest.extract import extract_lineage

CATALOG = Catalog.from_dict(
    {
        "tables": {
            "ods.src": {"columns": ["id", "name", "js"], "partitioned_by": ["dt"]},
            "ods.dim": {"columns": ["id", "label"]},
        }
    }
)


def _run(sql: str) -> TaskLineage:
    result = extract_lineage(SqlTask(task_id="t", sql=sql, dialect="hive"), CATALOG)
    assert not result.errors, result.errors
    return result


def _columns(result: TaskLineage) -> dict[str, set[tuple[str, str, tuple[str, ...]]]]:
    return {c.target: {(s.id, s.kind, tuple(s.functions)) for s in c.sources} for c in result.columns}


def test_dropped_table_composes_kinds_functions_and_weak_references() -> None:
    result = _run(
        """
        CREATE TABLE stage AS SELECT id, upper(name) AS n FROM ods.src WHERE dt = '2024-01-01';
        INSERT OVERWRITE TABLE dw.t SELECT s.id, concat(s.n, d.label) AS n2
        FROM stage s JOIN ods.dim d ON s.id = d.id;
        DROP TABLE stage;
        """
    )
    assert set(result.writes) == {"dw.t"}
    assert {r.table for r in result.reads} == {"ods.src", "ods.dim"}
    assert _columns(result) == {
        "dw.t.id": {("ods.src.id", "direct", ())},
        "dw.t.n2": {
            ("ods.src.name", "expression", ("upper", "concat")),
            ("ods.dim.label", "expression", ("concat",)),
        },
    }
    weak = {(w.column, w.role, w.target_table) for w in result.weak_references}
    assert weak == {
        ("ods.src.dt", "filter", "dw.t"),
        ("ods.src.id", "join", "dw.t"),
        ("ods.dim.id", "join", "dw.t"),
    }
    assert {(e.source, e.target) for e in result.table_edges} == {("ods.src", "dw.t"), ("ods.dim", "dw.t")}
    # the statements themselves say the same: no statement writes or reads the dropped table
    assert all("default.stage" not in s.writes for s in result.statements)
    assert all(r.table != "default.stage" for s in result.statements for r in s.reads)


def test_chain_of_dropped_tables_takes_the_strongest_kind_and_nested_keys() -> None:
    result = _run(
        """
        CREATE TABLE s1 AS SELECT id, get_json_object(js, '$.a') AS a FROM ods.src;
        CREATE TABLE s2 AS SELECT id, max(a) AS m FROM s1 GROUP BY id;
        INSERT INTO dw.out SELECT id, m FROM s2;
        DROP TABLE s1;
        DROP TABLE s2;
        """
    )
    assert set(result.writes) == {"dw.out"}
    assert _columns(result) == {
        "dw.out.id": {("ods.src.id", "direct", ())},
        "dw.out.m": {("ods.src.js#$.a", "aggregate", ("get_json_object", "max"))},
    }
    weak = {(w.column, w.role, w.target_table) for w in result.weak_references}
    assert weak == {("ods.src.id", "group", "dw.out")}
    assert {(e.source, e.target) for e in result.table_edges} == {("ods.src", "dw.out")}


def test_read_before_the_script_rewrote_the_table_stays_a_read() -> None:
    result = _run(
        """
        INSERT INTO dw.snapshot SELECT id FROM stage;
        INSERT OVERWRITE TABLE stage SELECT id FROM ods.src;
        INSERT INTO dw.out SELECT id FROM stage;
        DROP TABLE stage;
        """
    )
    assert set(result.writes) == {"dw.snapshot", "dw.out"}
    assert {(e.source, e.target) for e in result.table_edges} == {
        ("default.stage", "dw.snapshot"),
        ("ods.src", "dw.out"),
    }


def test_rename_then_drop_of_the_new_name_folds_the_whole_object() -> None:
    result = _run(
        """
        CREATE TABLE tmp AS SELECT id, name FROM ods.src;
        ALTER TABLE tmp RENAME TO stage;
        INSERT INTO dw.out SELECT name FROM stage;
        DROP TABLE stage;
        """
    )
    assert set(result.writes) == {"dw.out"}
    assert _columns(result) == {"dw.out.name": {("ods.src.name", "direct", ())}}


def test_unknown_column_of_a_dropped_table_is_reported() -> None:
    result = extract_lineage(
        SqlTask(
            task_id="t",
            sql="CREATE TABLE stage AS SELECT * FROM ods.unknown; INSERT INTO dw.out SELECT a FROM stage; DROP TABLE stage",
            dialect="hive",
        ),
        CATALOG,
    )
    assert set(result.writes) == {"dw.out"}
    assert any("dropped table default.stage" in u for u in result.unresolved), result.unresolved
