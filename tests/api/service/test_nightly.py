"""`watershed nightly`: the chain for one date equals the steps run by hand, a second run for the
same date changes nothing, and bad input is one clear line with nothing recorded."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.nightly_state import graph_state, plan_state
from tests.support.nightly_warehouse import PROTECTED, expected_protection, nightly_inputs, protection_records
from tests.support.processes import stop_group
from tests.support.protected_warehouse import (
    CLEAN,
    SOURCE,
    TABLES,
    TASKS,
    clean_rows,
    held,
    source_rows,
    sql_rows,
)
from watershed.api.cli import app
from watershed.api.service import coverage
from watershed.api.service.nightly import yesterday
from watershed.graph.falkordb_store import FalkorDBStore

pytestmark = [pytest.mark.spark, pytest.mark.services]

DAY = "2024-01-31"
_graphs = itertools.count()


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    from watershed.ingest.generator import generate_warehouse

    out = tmp_path_factory.mktemp("nightly-warehouse")
    generate_warehouse(out, tasks=40, seed=11)
    return out


@pytest.fixture
def nightly_env(falkordb_server, celery_redis, warehouse, tmp_path, monkeypatch):
    """Settings of a nightly run on a graph and data directory of its own; the store on that graph."""
    graph = f"nightly_{next(_graphs)}"
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path / "var"))
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(falkordb_server.port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph)
    monkeypatch.setenv("WATERSHED_CELERY_BROKER", f"redis://127.0.0.1:{celery_redis.port}/0")
    monkeypatch.setenv("WATERSHED_NIGHTLY_TASKS", str(warehouse / "tasks"))
    monkeypatch.setenv("WATERSHED_NIGHTLY_CATALOG", str(warehouse / "catalog.json"))
    store = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=graph)
    yield store
    store.clear()
    store.close()


def _nightly(*args: str):
    return CliRunner().invoke(app, ["nightly", "--date", DAY, "--local", *args])


def _by_hand(store, warehouse, spark, tmp_path) -> None:
    """The chain's commands, one by one, on `store`'s graph (the CLI's own settings point there)."""
    runner = CliRunner()
    harvested = runner.invoke(
        app,
        [
            "harvest",
            "--tasks",
            str(warehouse / "tasks"),
            "--catalog",
            str(warehouse / "catalog.json"),
            "--out",
            str(tmp_path / "by-hand"),
        ],
    )
    assert harvested.exit_code == 0, harvested.output
    propagated = runner.invoke(app, ["propagate", "--local"])
    assert propagated.exit_code == 0, propagated.output
    from watershed.ttl_advisor.tasks import advise_and_store

    advise_and_store("ttl-by-hand")
    planned = runner.invoke(app, ["protect", "plan", "--out", str(tmp_path / "plan.json")])
    assert planned.exit_code == 0, planned.output


def test_the_chain_equals_the_commands_by_hand_and_a_second_run_changes_nothing(
    nightly_env, warehouse, spark, tmp_path, monkeypatch, falkordb_server
):
    first = _nightly("-f", "json")
    assert first.exit_code == 0, first.output
    summary = json.loads(first.output[first.output.index("{") :])
    assert summary["status"] == "complete" and summary["missing"] == []
    steps = {s["step"]: s for s in summary["steps"]}
    assert steps["harvest"]["counts"]["tasks"] == 40 and steps["harvest"]["counts"]["loaded"] == 40
    assert steps["propagate"]["counts"]["tags_changed"] > 0
    assert steps["ttl"]["run_id"] == f"ttl-{DAY}" and steps["ttl"]["counts"]["columns"] > 0
    assert steps["protection_plan"]["status"] == "done"
    assert steps["protection_apply"]["status"] == "skipped"
    # nothing applied: every column the policy covers is still unprotected
    assert steps["coverage"]["counts"]["unprotected"] == steps["coverage"]["counts"]["covered"] > 0
    after_first = graph_state(nightly_env)
    assert after_first["tags"] and after_first["ttl"]
    data_dir = tmp_path / "var"
    nightly_plan = plan_state(data_dir / "nightly" / DAY / "protection-plan.json")

    # the same commands by hand on a second graph give the same lineage, tags, TTL and plan
    by_hand = FalkorDBStore(
        falkordb_server.host, falkordb_server.port, graph=f"{nightly_env.graph_name}_by_hand"
    )
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", by_hand.graph_name)
    try:
        _by_hand(by_hand, warehouse, spark, tmp_path)
        assert graph_state(by_hand) == after_first
        assert plan_state(tmp_path / "plan.json") == nightly_plan
    finally:
        by_hand.clear()
        by_hand.close()
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", nightly_env.graph_name)

    second = _nightly()
    assert second.exit_code == 0, second.output
    assert graph_state(nightly_env) == after_first
    ledger = json.loads((data_dir / "nightly" / DAY / "summary.json").read_text())
    again = {s["step"]: s for s in ledger["steps"]}
    assert again["harvest"]["counts"]["loaded"] == 0 and again["harvest"]["counts"]["unchanged"] == 40
    assert again["propagate"]["counts"]["tags_changed"] == 0
    assert again["coverage"]["counts"] == steps["coverage"]["counts"]
    assert coverage.snapshot_ids(nightly_env) == [DAY]  # the date's snapshot replaced, not doubled

    status = CliRunner().invoke(app, ["nightly", "--date", DAY, "--status"])
    assert status.exit_code == 0
    assert all(step in status.output for step in ("harvest", "propagate", "ttl", "protection_plan"))


def test_bad_input_is_one_line_and_records_nothing(nightly_env, tmp_path, monkeypatch):
    bad_date = CliRunner().invoke(app, ["nightly", "--date", "2024-02-30"])
    assert bad_date.exit_code == 2
    assert "'2024-02-30' is not a date of the form YYYY-MM-DD" in bad_date.output

    monkeypatch.delenv("WATERSHED_NIGHTLY_TASKS")
    no_source = _nightly()
    assert no_source.exit_code == 1
    assert "WATERSHED_NIGHTLY_TASKS" in no_source.output and "Traceback" not in no_source.output
    assert not (tmp_path / "var" / "nightly" / DAY / "harvest.json").exists()

    missing = _nightly("--tasks", str(tmp_path / "no-such-dir"))
    assert missing.exit_code == 1 and "no-such-dir" in missing.output

    nothing = CliRunner().invoke(app, ["nightly", "--date", "2024-03-01", "--status"])
    assert nothing.exit_code == 1 and "no nightly step has run for 2024-03-01" in nothing.output


def test_apply_without_a_kms_fails_naming_it_after_the_plan(nightly_env, warehouse, spark):
    result = _nightly("--apply-protection")
    assert result.exit_code == 1
    assert "protection apply" in result.output and "KMS" in result.output


def test_apply_protection_encrypts_the_warehouse_files_and_a_second_run_rewrites_nothing(
    nightly_env, spark, kms_server, tmp_path, monkeypatch
):
    """The whole chain on Spark-written ORC tables (Spark's catalog) with the test KMS: the
    policy's seeds make columns sensitive, the plan and apply encrypt them in every file."""
    inputs = nightly_inputs(spark, tmp_path / "night")
    try:
        monkeypatch.setenv("WATERSHED_NIGHTLY_TASKS", inputs.tasks)
        monkeypatch.setenv("WATERSHED_NIGHTLY_CATALOG", inputs.catalog)
        monkeypatch.setenv("WATERSHED_NIGHTLY_KMS", kms_server.provider_path)
        files = {table: inputs.files(table) for table in TABLES}
        planned = files[SOURCE] + files[CLEAN]
        assert all(len(files[t]) >= 2 for t in TABLES), files

        first = _nightly("--apply-protection", "-f", "json")
        assert first.exit_code == 0, first.output
        summary = json.loads(first.output[first.output.index("{") :])
        assert summary["status"] == "complete" and summary["missing"] == [], summary
        steps = {s["step"]: s for s in summary["steps"]}
        assert steps["harvest"]["counts"]["loaded"] == len(TASKS)
        assert steps["protection_plan"]["counts"]["files"] == len(planned)
        applied = steps["protection_apply"]
        assert applied["status"] == "done" and applied["run_id"] == f"protect-nightly-{DAY}", applied
        assert applied["counts"]["files_done"] == len(planned) > 0, applied
        assert applied["counts"]["files_failed"] == applied["counts"]["files_skipped"] == 0
        for table in TABLES:
            assert inputs.files(table) == files[table]  # swapped in place, nothing beside
            for path in files[table]:
                assert held(path) == dict.fromkeys(PROTECTED[table], ("pii", "nullify")), path
        # the DDL ran on the chain's Spark: the tables now ask for the same encryption
        for table in (SOURCE, CLEAN):
            properties = dict(spark.sql(f"SHOW TBLPROPERTIES {table}").collect())
            encrypt = [value for name, value in properties.items() if name.endswith("orc.encrypt")]
            assert encrypt and all(value == "pii:" + ",".join(PROTECTED[table]) for value in encrypt), (
                properties
            )
        # and Spark, with the key, reads the plaintext it wrote
        assert sql_rows(spark, SOURCE) == source_rows()
        assert sql_rows(spark, CLEAN) == clean_rows()
        # the graph's records: the same as the DAG's apply job leaves (tests/dags)
        protected = protection_records(nightly_env, inputs.root)
        assert protected == expected_protection(inputs, kms_server.provider_path)
        after_first = graph_state(nightly_env)
        written = {path: (os.stat(path).st_mtime_ns, Path(path).read_bytes()) for path in planned}

        # the same date again: nothing left to protect, no file rewritten, the graph as it was
        second = _nightly("--apply-protection", "-f", "json")
        assert second.exit_code == 0, second.output
        again = json.loads(second.output[second.output.index("{") :])
        assert again["status"] == "complete", again
        steps = {s["step"]: s for s in again["steps"]}
        assert steps["protection_plan"]["counts"]["files"] == 0
        assert steps["protection_apply"]["status"] == "skipped"
        assert "nothing to protect" in steps["protection_apply"]["message"]
        assert {p: (os.stat(p).st_mtime_ns, Path(p).read_bytes()) for p in planned} == written
        assert graph_state(nightly_env) == after_first
        assert protection_records(nightly_env, inputs.root) == protected
    finally:
        for table in TABLES:
            spark.sql(f"DROP TABLE IF EXISTS {table}")


def test_the_celery_beat_schedule_runs_the_chain_on_a_worker(nightly_env, celery_redis, tmp_path):
    """`watershed worker --beat` with an every-minute schedule: the chain runs for yesterday on its own."""
    env = {
        **os.environ,
        "WATERSHED_NIGHTLY_CRON": "* * * * *",
        # the worker's own Spark, and its batches on the same worker's second process
        "PYSPARK_PYTHON": sys.executable,
    }
    log = tmp_path / "beat-worker.log"
    worker = subprocess.Popen(
        [str(Path(sys.executable).parent / "watershed"), "worker", "--beat", "-c", "2", "-Q", "propagation"],
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=tmp_path,  # Spark's default warehouse directory lands here, not in the repo
    )
    summary = tmp_path / "var" / "nightly" / yesterday() / "summary.json"
    try:
        deadline = time.monotonic() + 300
        while not summary.exists():
            assert worker.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, (
                "the beat schedule never ran the chain: " + log.read_text()[-3000:]
            )
            time.sleep(1)
    finally:
        stop_group(worker)
    result = json.loads(summary.read_text())
    assert result["status"] == "complete", result
    assert "beat: the nightly chain at '* * * * *' (UTC)" in log.read_text()


def test_a_bad_cron_line_is_refused_naming_the_setting(monkeypatch):
    monkeypatch.setenv("WATERSHED_NIGHTLY_CRON", "0 2 *")
    result = CliRunner().invoke(app, ["worker", "--beat"])
    assert result.exit_code == 2
    assert "WATERSHED_NIGHTLY_CRON='0 2 *': expected five fields" in result.output
    monkeypatch.setenv("WATERSHED_NIGHTLY_CRON", "61 2 * * *")
    result = CliRunner().invoke(app, ["worker", "--beat"])
    assert result.exit_code == 2 and "WATERSHED_NIGHTLY_CRON='61 2 * * *'" in result.output
