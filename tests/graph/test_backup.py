"""`watershed services backup|restore`: a backup restored into a server gives back the same graph."""

from __future__ import annotations

from typer.testing import CliRunner

from tests.graph.fingerprint import graph_fingerprint
from watershed.api.cli import app
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage

runner = CliRunner()

SQL = {
    "t1": "INSERT OVERWRITE TABLE dw.orders SELECT id, upper(email) AS email, amount FROM ods.orders WHERE dt = '${date}'",
    "t2": "INSERT OVERWRITE TABLE ads.totals SELECT email, sum(amount) AS total FROM dw.orders GROUP BY email",
}


def _store():
    from watershed.graph.falkordb_store import FalkorDBStore

    store = FalkorDBStore.from_settings()
    store.ensure_schema()
    return store


def test_a_restored_backup_is_the_graph_that_was_backed_up(service_env, tmp_path):
    assert runner.invoke(app, ["services", "up"], catch_exceptions=False).exit_code == 0
    store = _store()
    tasks = [SqlTask(task_id=i, sql=sql) for i, sql in SQL.items()]
    store.upsert_tasks([(task, extract_lineage(task)) for task in tasks])
    backed_up = graph_fingerprint(store)
    stamp = store.change_stamp("accounts")

    result = runner.invoke(app, ["services", "backup", str(tmp_path / "backup")])
    assert result.exit_code == 0, result.output
    assert "watershed" in result.output

    store.delete_tasks(["t2"])  # changes after the backup are undone by the restore
    store.write_all([("CREATE (:Table {id: 'db.later'})", {})])
    assert graph_fingerprint(store) != backed_up
    store.close()

    result = runner.invoke(app, ["services", "restore", str(tmp_path / "backup")])
    assert result.exit_code == 0, result.output
    assert graph_fingerprint(_store()) == backed_up
    # what an API process kept under the stamps described the graph before the restore
    assert _store().change_stamp("accounts") != stamp
    # The restored graph is the server's from now on: it survives a stop and a start.
    runner.invoke(app, ["services", "down"])
    assert runner.invoke(app, ["services", "up"], catch_exceptions=False).exit_code == 0
    assert graph_fingerprint(_store()) == backed_up
    assert list((service_env / "falkordb").glob("before-restore-*/appendonlydir"))  # the old files, kept


def test_restoring_what_is_not_a_backup_is_one_line(service_env, tmp_path):
    (tmp_path / "empty").mkdir()
    result = runner.invoke(app, ["services", "restore", str(tmp_path / "empty")])
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1 and "is not a backup" in result.output
