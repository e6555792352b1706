"""A harvest's errors say which task, statement, line and column, and what is wrong there, in
words: the records had sqlglot's internals ("Required keyword: 'this' missing for <class
...Where>"); its own words stay in `detail`, out of the sentence the Runs page shows."""

from __future__ import annotations

from watershed.graph.catalog import Catalog
from watershed.ingest.harvest import run_harvest

CATALOG = Catalog.from_dict({"tables": {"ods.src": {"columns": ["uid", "email"]}}})
TASKS = {
    # the demo generator's broken tasks (ingest/generator.py BROKEN)
    "bad_where": "INSERT OVERWRITE TABLE dwd.bad SELECT uid, FROM ods.src WHERE;",
    "bad_paren": "INSERT OVERWRITE TABLE dwd.ok SELECT uid FROM ods.src;\n\nINSERT OVERWRITE TABLE dwd.bad\nSELECT (uid FROM ods.src;",
    "bad_compare": "INSERT OVERWRITE TABLE dwd.bad SELECT uid FROM ods.src WHERE email = ;",
}


def test_the_harvest_errors_say_task_statement_line_and_column_in_words(api, spark, tmp_path):
    folder = tmp_path / "tasks"
    folder.mkdir()
    for name, sql in TASKS.items():
        (folder / f"{name}.sql").write_text(sql)
    report = run_harvest(
        spark,
        store=api.graph,
        tasks=str(folder),
        catalog=CATALOG,
        out_dir=api.settings.data_dir / "harvest",
        progress=lambda _: None,
    )
    assert report.tasks_with_errors == 3
    with api.client("viewer") as viewer:
        answer = viewer.get(f"/harvest/runs/{report.run_id}/errors")
        assert answer.status_code == 200, answer.text
        said = {e["task_id"]: e for e in answer.json()["items"]}
    assert said["bad_where"]["text"] == (
        "Task bad_where, statement 1, line 1, column 61: the WHERE clause has no condition (at 'WHERE')"
    )
    assert (
        said["bad_paren"]["text"]
        == "Task bad_paren, statement 2, line 4, column 16: expected ')' (at 'FROM')"
    )
    assert said["bad_compare"]["text"] == (
        "Task bad_compare, statement 1, line 1, column 68: '=' has nothing on its right-hand side (at '=')"
    )
    for error in said.values():
        assert "<class" not in error["text"] and "Required keyword" not in error["text"]
    assert said["bad_where"]["detail"].startswith("Required keyword: 'this' missing for")
