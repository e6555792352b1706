"""Issue 35 items 13-18 beyond the lineage cases (tests/ingest/cases/hostile_sql.yaml): the generic
dialect's name everywhere a dialect is named, the parse rewrites leaving strings alone, and the query
gateway reading through a recursive CTE."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import sqlglot

from watershed.graph.catalog import Catalog
from watershed.ingest.dialects import dialect_generator, dialect_tools
from watershed.ingest.extract import check_dialect
from watershed.ingest.parse_rewrites import rewrite_for_parse
from watershed.ingest.points import QueryError, parse_query, query_points

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["ansi", "ANSI", " Ansi ", ""])
def test_the_generic_dialect_is_a_known_dialect(name: str) -> None:
    check_dialect(name)
    _dialect, tokenizer, parser = dialect_tools(name.strip().lower())
    text = "SELECT a FROM ods.s"
    (statement,) = parser.parse(tokenizer.tokenize(text), text)
    assert dialect_generator(name.strip().lower()).generate(statement) == text


def test_ansi_is_a_name_sqlglot_takes_too() -> None:
    # the name reaches sqlglot directly in several places (`read=`, `dialect=`)
    statement = sqlglot.parse_one("SELECT a FROM ods.s", read="ansi")
    assert statement.sql(dialect="ansi") == "SELECT a FROM ods.s"


def test_the_gateway_parses_ansi_queries() -> None:
    statement = parse_query("SELECT a FROM ods.s", dialect="ansi")
    points = query_points(
        statement, Catalog.from_dict({"tables": {"ods.s": {"columns": ["a"]}}}), dialect="ansi"
    )
    assert points.tables == ["ods.s"]
    with pytest.raises(QueryError, match="unknown dialect 'nosuch'"):
        parse_query("SELECT 1", dialect="nosuch")


def test_cli_lineage_takes_the_ansi_dialect(tmp_path: Path) -> None:
    script = tmp_path / "job.sql"
    script.write_text("INSERT INTO dw.t SELECT a FROM ods.s;\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "watershed.api.cli",
            "lineage",
            str(script),
            "--dialect",
            "ansi",
            "--format",
            "json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lineage = json.loads(done.stdout)
    assert lineage["writes"] == ["dw.t"]
    assert lineage["columns"][0]["sources"][0]["column"] == "ods.s.a"


def test_tsql_compound_assignment_rewrite_leaves_strings_alone() -> None:
    text = "UPDATE t SET a += 'x += y', b = 'c -= 1', c *= (d + 1) WHERE e = 'f'"
    assert rewrite_for_parse(text, "tsql") == (
        "UPDATE t SET a = a + ('x += y'), b = 'c -= 1', c = c * ((d + 1)) WHERE e = 'f'"
    )
    assert rewrite_for_parse("UPDATE t SET a = 1", "tsql") is None


def test_athena_backquote_rewrite_leaves_strings_alone() -> None:
    text = "SELECT '`a`' AS s, `b`, `c``d` FROM `db`.`t` WHERE \"e\" = '`'"
    assert rewrite_for_parse(text, "athena") == (
        'SELECT \'`a`\' AS s, "b", "c`d" FROM "db"."t" WHERE "e" = \'`\''
    )


def test_teradata_rewrite_drops_titles_and_names_items() -> None:
    text = "SELECT a (TITLE 'x (TITLE ''y'')'), b (NAMED c), '(TITLE ''z'')' FROM t"
    assert rewrite_for_parse(text, "teradata") == "SELECT a , b AS c, '(TITLE ''z'')' FROM t"


def test_rewrites_belong_to_their_dialect() -> None:
    assert rewrite_for_parse("UPDATE t SET a += 1", "spark") is None
    assert rewrite_for_parse("SELECT `a` FROM t", "hive") is None


def test_the_gateway_reads_through_a_recursive_cte() -> None:
    # Its self-reference was a table `default.sub`, unknown to the catalog: the query was refused.
    sql = (
        "WITH RECURSIVE sub AS (SELECT id, manager_id, name FROM hr.emp WHERE manager_id IS NULL "
        "UNION ALL SELECT e.id, e.manager_id, e.name FROM hr.emp e JOIN sub s ON e.manager_id = s.id) "
        "SELECT id, name FROM sub"
    )
    catalog = Catalog.from_dict({"tables": {"hr.emp": {"columns": ["id", "manager_id", "name"]}}})
    points = query_points(parse_query(sql, dialect="spark"), catalog, dialect="spark")
    assert points.tables == ["hr.emp"]
    assert points.unknown_tables == []
    # the values come from the anchor's and the step's columns; the gateway's strict mode adds
    # what decides which rows the step adds (its join on the CTE's own id)
    assert [[s.column for s in c.sources if s.kind == "direct"] for c in points.columns] == [
        ["hr.emp.id"],
        ["hr.emp.name"],
    ]
    assert all(
        any("decides:join" in s.functions and s.column == "hr.emp.id" for s in c.sources)
        for c in points.columns
    )
