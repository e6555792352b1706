"""`watershed lineage` and `watershed demo` end to end, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from watershed.api.cli import app

SAMPLES = Path(__file__).resolve().parents[2] / "ingest" / "samples" / "warehouse"
runner = CliRunner()


def _lineage(*args: str):
    return runner.invoke(app, ["lineage", *args], catch_exceptions=False)


def test_hive_script_with_use_temp_view_multi_insert_json_key_and_window():
    result = _lineage(
        str(SAMPLES / "01_ods_to_dwd_events.sql"),
        "--catalog",
        str(SAMPLES / "catalog.json"),
        "--var",
        "date=2024-01-31",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    lineage = json.loads(result.output)
    reads = {r["table"]: r for r in lineage["reads"]}
    # USE ${src_db} resolved the unqualified tables; the temp view is not a table.
    assert set(reads) == {"ods.app_event_log", "ods.user_profile"}
    assert set(lineage["writes"]) == {"dwd.user_event_di", "dwd.user_contact_df"}
    assert reads["ods.app_event_log"]["partition_window_days"] == 1
    assert "app IN ('douyin', 'toutiao')" in [p["text"] for p in reads["ods.app_event_log"]["predicates"]]
    columns = {c["target"]: c["sources"] for c in lineage["columns"]}
    assert columns["dwd.user_event_di.page"] == [
        {
            "column": "ods.app_event_log.payload",
            "key": "$.page.name",
            "kind": "direct",
            "functions": ["get_json_object"],
            "description": None,
        }
    ]
    assert columns["dwd.user_contact_df.phone_hash"] == [
        {
            "column": "ods.user_profile.phone",
            "key": None,
            "kind": "expression",
            "functions": ["sha2"],
            "description": None,
        }
    ]
    assert columns["dwd.user_contact_df.dt"] == []
    weak = {(w["column"], w["role"], w["target_table"]) for w in lineage["weak_references"]}
    # The second branch's filter influences only the table that branch writes.
    assert ("ods.app_event_log.event_type", "filter", "dwd.user_contact_df") in weak
    assert ("ods.app_event_log.event_type", "filter", "dwd.user_event_di") not in weak
    assert ("ods.user_profile.user_id", "join", "dwd.user_event_di") in weak


def test_table_format_shows_windows_edges_and_weak_references():
    result = _lineage(
        str(SAMPLES / "02_dwd_to_dws_stats.sql"),
        "--catalog",
        str(SAMPLES / "catalog.json"),
        "--var",
        "date=2024-01-31",
    )
    assert result.exit_code == 0, result.output
    assert "tables read" in result.output and "column lineage" in result.output
    assert "count_distinct" in result.output
    assert "weak references" in result.output


def test_broken_statement_is_reported_and_the_rest_still_yields_lineage(tmp_path):
    script = tmp_path / "broken.sql"
    script.write_text(
        "INSERT INTO t1 SELECT a FROM s1;\nSELECT FROM WHERE;\nINSERT INTO t2 SELECT b FROM s2;\n"
    )
    result = _lineage(str(script), "--format", "json")
    assert result.exit_code == 1
    lineage = json.loads(result.output)
    assert set(lineage["writes"]) == {"default.t1", "default.t2"}
    assert [(e["statement_index"], e["line"]) for e in lineage["errors"]] == [(1, 2)]


def test_bad_inputs_are_named(tmp_path):
    missing = _lineage(str(tmp_path / "nope.sql"))
    assert missing.exit_code == 1 and "nope.sql" in missing.output
    script = tmp_path / "ok.sql"
    script.write_text("SELECT 1")
    bad_var = _lineage(str(script), "--var", "novalue")
    assert bad_var.exit_code == 2 and "novalue" in bad_var.output
    catalog = tmp_path / "catalog.json"
    catalog.write_text("{not json")
    bad_catalog = _lineage(str(script), "--catalog", str(catalog))
    assert bad_catalog.exit_code == 1 and "catalog.json" in bad_catalog.output


def test_demo_lineage_only_prints_sample_lineage():
    result = runner.invoke(app, ["demo", "--lineage-only"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "sample warehouse lineage" in result.output


def test_identifiers_that_look_like_console_markup_print_literally(tmp_path):
    """Names such as `[/]` or `[red]` are user data: printing them must neither crash nor drop them."""
    script = tmp_path / "markup.sql"
    script.write_text("INSERT INTO db.`[red]out` SELECT `[/]` AS `[bold]x` FROM db.src WHERE `[dim]k` = 1")
    result = _lineage(str(script))
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "db.[red]out.[bold]x" in text and "db.src.[/]" in text and "db.src.[dim]k" in text


def test_a_binary_script_or_a_catalog_directory_is_one_error_naming_it(tmp_path):
    """Issue 11 item 20: these gave raw tracebacks."""
    binary = tmp_path / "binary.sql"
    binary.write_bytes(b"SELECT 1;\n\x00\xff\xfe\x01 compiled, not SQL")
    result = _lineage(str(binary))
    assert result.exit_code == 1 and "binary.sql" in result.output and "UTF-8" in result.output
    assert len(result.output.strip().splitlines()) == 1
    script = tmp_path / "ok.sql"
    script.write_text("SELECT 1")
    catalog_dir = tmp_path / "catalogs"
    catalog_dir.mkdir()
    result = _lineage(str(script), "--catalog", str(catalog_dir))
    assert result.exit_code == 1 and "catalogs" in result.output and "directory" in result.output
    assert len(result.output.strip().splitlines()) == 1
    piped = runner.invoke(app, ["lineage", "-"], input=b"SELECT \xff FROM t", catch_exceptions=False)
    assert piped.exit_code == 1 and "standard input" in piped.output and "UTF-8" in piped.output


def test_lineage_is_a_group_whose_default_command_analyses_a_script(tmp_path):
    script = tmp_path / "t.sql"
    script.write_text("INSERT OVERWRITE TABLE d.out SELECT a FROM d.src")
    default = _lineage(str(script), "--format", "json")
    named = _lineage("analyse", str(script), "--format", "json")
    assert default.exit_code == named.exit_code == 0, default.output + named.output
    assert json.loads(default.output) == json.loads(named.output)
    assert json.loads(default.output)["writes"] == ["d.out"]
    listed = _lineage("--help")
    assert listed.exit_code == 0 and "analyse" in listed.output
