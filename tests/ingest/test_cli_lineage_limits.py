"""`watershed lineage` on input that is too deep or too large, and on a statement it cannot fully
analyse (issue 35 items 7, 11, 19): one line naming the input and exit 1, never a traceback or
a column silently called a constant. Through the real CLI, as tests/ingest/test_cli_lineage.py.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from watershed.api.cli import app

runner = CliRunner()


def lineage(*args: str):
    return runner.invoke(app, ["lineage", *args], catch_exceptions=False)


def one_error_line(result) -> str:
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output and "RecursionError" not in result.output
    return lines[0]


def test_a_catalog_nested_too_deeply_is_one_line_naming_it(tmp_path):
    """50,000 nested brackets in the catalog printed json's RecursionError traceback."""
    script = tmp_path / "q.sql"
    script.write_text("INSERT INTO o SELECT a FROM t")
    catalog = tmp_path / "deep.json"
    catalog.write_text('{"tables": ' + "[" * 50_000 + "]" * 50_000 + "}")
    result = lineage(str(script), "--catalog", str(catalog))
    assert result.exit_code == 1
    line = one_error_line(result)
    assert "deep.json" in line and "nests too deeply" in line


def test_a_statement_beyond_the_limits_is_one_line_naming_the_limit(tmp_path):
    deep = tmp_path / "deep.sql"
    deep.write_text("SELECT 1;\nSELECT " + "(" * 50_000 + "a" + ")" * 50_000 + " FROM t;\n")
    result = lineage(str(deep))
    assert result.exit_code == 1
    line = one_error_line(result)
    assert "deep.sql" in line and "statement 1 (line 2)" in line
    assert "more than 100 deep" in line and "analysis_max_depth" in line

    many = tmp_path / "many.sql"
    many.write_text("SELECT " + "+".join(["1"] * 30_000) + " FROM t")
    result = lineage(str(many), "--format", "json")
    assert result.exit_code == 1
    line = one_error_line(result)
    assert "many.sql" in line and "limit of 50000 (setting analysis_max_tokens)" in line


def test_an_unknown_column_is_shown_unresolved_and_exits_1(tmp_path):
    """It exited 0 and showed the unknown column as `(constant)`."""
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"tables": {"ods.t": {"columns": ["a"]}}}))
    script = tmp_path / "unknown.sql"
    script.write_text("INSERT INTO dw.o SELECT nosuch AS x, a FROM ods.t")
    result = lineage(str(script), "--catalog", str(catalog))
    assert result.exit_code == 1
    rows = {" ".join(line.split("│")[1].split()): line for line in result.output.splitlines() if "│" in line}
    assert "(unresolved)" in rows["dw.o.x"] and "(constant)" not in result.output
    assert "ods.t.a" in rows["dw.o.a"]
    assert "unknown column nosuch" in result.output

    as_json = lineage(str(script), "--catalog", str(catalog), "--format", "json")
    assert as_json.exit_code == 1
    assert json.loads(as_json.output)["unresolved"] == ["statement 0: unknown column nosuch (not in ods.t)"]

    # a constant of a fully analysed statement is still a constant, and exits 0
    constant = tmp_path / "constant.sql"
    constant.write_text("INSERT INTO dw.o SELECT 1 AS x, a FROM ods.t")
    result = lineage(str(constant), "--catalog", str(catalog))
    assert result.exit_code == 0, result.output
    assert "(constant)" in result.output and "(unresolved)" not in result.output
