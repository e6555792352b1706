"""The nightly DAG on a real Airflow 3 (its own virtualenv, SQLite metadata, `airflow dags test`),
the Spark provider's operator running local Spark, against the test session's FalkorDB, Redis and
Celery worker.

- Airflow's own import check passes and parsing the DAG file takes under a second.
- A run equals the commands by hand (lineage, tags, TTL records, the protection plan); a second
  run for the same date changes nothing.
- A run whose propagate step is killed (SIGKILL, mid-propagation) is re-run to the same result.
- A run with `apply_protection` on encrypts a Spark-written ORC warehouse through the spark-submit
  apply job and the test KMS, the tables in a Hive metastore (Derby) that job opens.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.api_service import ThreadServer, make_settings
from tests.support.nightly_state import graph_state, plan_state
from tests.support.nightly_warehouse import (
    PROTECTED,
    NightlyInputs,
    expected_protection,
    nightly_inputs,
    protection_records,
)
from tests.support.openlineage_capture import CaptureServer
from tests.support.processes import stop_group
from tests.support.protected_warehouse import CLEAN, SOURCE, TABLES, held
from watershed.api.cli import app
from watershed.graph.falkordb_store import FalkorDBStore
from watershed.graph.server import free_port

pytestmark = [pytest.mark.spark, pytest.mark.services]

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-airflow"
DAY = "2024-01-31"


class Airflow:
    def __init__(self, env: dict[str, str], home: Path) -> None:
        self.env = env
        self.home = home

    def run(self, *args: str, graph: str, timeout: float = 600, extra_env: dict | None = None):
        env = {**self.env, "WATERSHED_GRAPH_NAME": graph, **(extra_env or {})}
        process = subprocess.Popen(
            [str(VENV / "bin" / "airflow"), *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=self.home,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            # the whole group: a spark-submit JVM under the airflow process must not outlive it
            stop_group(process, timeout=10)
            raise
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

    def start(self, *args: str, graph: str, log: Path, extra_env: dict | None = None) -> subprocess.Popen:
        env = {**self.env, "WATERSHED_GRAPH_NAME": graph, **(extra_env or {})}
        return subprocess.Popen(
            [str(VENV / "bin" / "airflow"), *args],
            env=env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            cwd=self.home,
            start_new_session=True,
        )


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    from watershed.ingest.generator import generate_warehouse

    out = tmp_path_factory.mktemp("dag-warehouse")
    generate_warehouse(out, tasks=40, seed=11)
    return out


@pytest.fixture(scope="module")
def lineage_service(falkordb_server, celery_redis, tmp_path_factory):
    """Watershed's service on a graph of its own, for Airflow's OpenLineage provider: its URL and
    a producer's token."""
    from watershed.api.http.app import create_app
    from watershed.api.service.accounts.store import AccountStore

    graph = "dag_lineage_intake"
    store = _store(falkordb_server, graph)
    store.ensure_schema()
    accounts = AccountStore(store)
    accounts.add("airflow", "producer", None, actor="test")
    token = accounts.create_token("airflow", "test").token
    settings = make_settings(falkordb_server, celery_redis, graph, tmp_path_factory.mktemp("dag-lineage-api"))
    port = free_port()
    server = ThreadServer(create_app(settings, store), port)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}", token
    finally:
        server.stop()
        store.clear()
        store.close()


@pytest.fixture(scope="module")
def lineage_capture(lineage_service):
    """Where Airflow's OpenLineage provider sends the DAG's own task events during these runs:
    Watershed, through a capture server that keeps each event and Watershed's answer
    (tests/support/openlineage_capture.py)."""
    url, _token = lineage_service
    with CaptureServer(forward_to=url) as capture:
        yield capture


@pytest.fixture(scope="module")
def airflow(
    tmp_path_factory, falkordb_server, celery_redis, workers, warehouse, lineage_service, lineage_capture
):
    """Airflow in .venv-airflow (created on first use), its SQLite DB migrated, env for the services,
    its OpenLineage provider configured as docs/openlineage.md says (HTTP transport, api_key auth)."""
    subprocess.run(["bash", str(REPO / "scripts" / "airflow_venv.sh")], check=True, timeout=1500)
    home = tmp_path_factory.mktemp("airflow-home")
    data = tmp_path_factory.mktemp("dag-data")
    keep = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("WATERSHED_", "AIRFLOW", "PYSPARK", "OPENLINEAGE"))
    }
    env = {
        **keep,
        "PATH": f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW_CONN_WATERSHED_SPARK": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "WATERSHED_DATA_DIR": str(data),
        "WATERSHED_FALKORDB_PORT": str(falkordb_server.port),
        "WATERSHED_CELERY_BROKER": f"redis://127.0.0.1:{celery_redis.port}/0",
        "WATERSHED_NIGHTLY_TASKS": str(warehouse / "tasks"),
        "WATERSHED_NIGHTLY_CATALOG": str(warehouse / "catalog.json"),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "watershed-nightly",
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
            {
                "type": "http",
                "url": lineage_capture.url,
                "endpoint": "api/v1/lineage",
                "auth": {"type": "api_key", "apiKey": lineage_service[1]},
            }
        ),
    }
    airflow = Airflow(env, home)
    migrated = airflow.run("db", "migrate", graph="unused")
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    return airflow


def _store(falkordb_server, graph: str) -> FalkorDBStore:
    return FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=graph)


def _summary(airflow: Airflow) -> dict:
    return json.loads(
        (Path(airflow.env["WATERSHED_DATA_DIR"]) / "nightly" / DAY / "summary.json").read_text()
    )


def _json_output(text: str):
    """The JSON an airflow command printed after its log lines (warnings go to standard output too)."""
    lines = text.splitlines()
    start = max(
        i for i, line in enumerate(lines) if line.startswith(("[", "{")) and not line.startswith("[warn")
    )
    return json.loads("\n".join(lines[start:]))


def _assert_the_tasks_events_arrived(capture, token: str) -> None:
    """Airflow's OpenLineage provider sent, to the configured endpoint with the producer's token, a
    START and a COMPLETE for every task the run ran (job name dag.task), each a child of the DAG
    run's own COMPLETE event, whose state facet lists the tasks and their states; Watershed took
    every one."""
    posts = list(capture.posts)
    assert posts, "Airflow's OpenLineage provider sent nothing"
    assert {(p.path, p.authorization) for p in posts} == {("/api/v1/lineage", f"Bearer {token}")}
    assert [(p.event["job"]["name"], p.status, p.answer) for p in posts if p.status >= 300] == []
    events = [p.event for p in posts]
    assert {e["job"]["namespace"] for e in events} == {"watershed-nightly"}
    [dag_run] = [e for e in events if e["job"]["name"] == "watershed_nightly"]
    assert dag_run["eventType"] == "COMPLETE"
    states = dag_run["run"]["facets"]["airflowState"]["tasksState"]
    ran = {task for task, state in states.items() if state == "success"}
    assert {"prepare", "harvest", "propagate", "summary"} <= ran, states
    sent = {(e["job"]["name"], e["eventType"]) for e in events if e is not dag_run}
    assert sent == {(f"watershed_nightly.{task}", kind) for task in ran for kind in ("START", "COMPLETE")}
    parents = {e["run"]["facets"]["parent"]["run"]["runId"] for e in events if e is not dag_run}
    assert parents == {dag_run["run"]["runId"]}


def test_the_dag_passes_airflows_import_check_and_parses_in_under_a_second(airflow):
    errors = airflow.run("dags", "list-import-errors", "-o", "json", graph="unused")
    assert errors.returncode == 0, errors.stderr
    assert _json_output(errors.stdout) == []
    report = airflow.run("dags", "report", "-o", "json", graph="unused")
    assert report.returncode == 0, report.stderr
    [row] = _json_output(report.stdout)
    assert row["dags"] == ["watershed_nightly"] and int(row["task_num"]) == 15, row
    hours, minutes, seconds = row["duration"].split(":")
    assert int(hours) == 0 and int(minutes) == 0 and float(seconds) < 1.0, row


def test_a_run_equals_the_commands_by_hand_and_a_second_run_changes_nothing(
    airflow,
    lineage_service,
    lineage_capture,
    falkordb_server,
    celery_redis,
    warehouse,
    monkeypatch,
    tmp_path,
):
    dag_graph, hand_graph = "dag_nightly", "dag_by_hand"
    lineage_capture.clear()
    first = airflow.run("dags", "test", "watershed_nightly", DAY, graph=dag_graph)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    _assert_the_tasks_events_arrived(lineage_capture, lineage_service[1])
    summary = _summary(airflow)
    assert summary["status"] == "complete", summary
    steps = {s["step"]: s for s in summary["steps"]}
    assert steps["harvest"]["counts"]["loaded"] == 40
    assert steps["propagate"]["counts"]["tags_changed"] > 0
    assert steps["protection_apply"]["status"] == "skipped"
    dag_store = _store(falkordb_server, dag_graph)
    hand_store = _store(falkordb_server, hand_graph)
    try:
        after_first = graph_state(dag_store)
        assert after_first["tags"] and after_first["ttl"]

        # the commands by hand, on another graph
        for name, value in airflow.env.items():
            if name.startswith("WATERSHED_"):
                monkeypatch.setenv(name, value)
        monkeypatch.setenv("WATERSHED_GRAPH_NAME", hand_graph)
        runner = CliRunner()
        tasks, catalog = str(warehouse / "tasks"), str(warehouse / "catalog.json")
        for command in (
            ["harvest", "--tasks", tasks, "--catalog", catalog, "--out", str(tmp_path / "harvest")],
            ["propagate"],
            ["protect", "plan", "--out", str(tmp_path / "plan.json")],
        ):
            result = runner.invoke(app, command)
            assert result.exit_code == 0, result.output
        from watershed.ttl_advisor.tasks import advise_and_store

        advise_and_store("ttl-by-hand")
        assert graph_state(hand_store) == after_first
        ledger = Path(airflow.env["WATERSHED_DATA_DIR"]) / "nightly" / DAY
        assert plan_state(tmp_path / "plan.json") == plan_state(ledger / "protection-plan.json")

        second = airflow.run("dags", "test", "watershed_nightly", DAY, graph=dag_graph)
        assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
        assert graph_state(dag_store) == after_first
        again = {s["step"]: s for s in _summary(airflow)["steps"]}
        assert again["harvest"]["counts"]["loaded"] == 0
        assert again["propagate"]["counts"]["tags_changed"] == 0
    finally:
        for store in (dag_store, hand_store):
            store.clear()
            store.close()


def test_a_run_killed_while_propagating_is_rerun_to_the_same_result(
    airflow,
    falkordb_server,
    celery_redis,
    tmp_path,
):
    from watershed.propagation.run_state import RunState

    graph = "dag_killed"
    # one node per batch and a short lock: the propagation takes long enough to be killed in the
    # middle, and the dead coordinator's lock expires soon after
    slow = {"WATERSHED_PROPAGATION_BATCH_SIZE": "1", "WATERSHED_PROPAGATION_LOCK_TTL_SECONDS": "3"}
    state = RunState.from_url(f"redis://127.0.0.1:{celery_redis.port}/0", graph)
    store = _store(falkordb_server, graph)
    try:
        process = airflow.start(
            "dags", "test", "watershed_nightly", DAY, graph=graph, log=tmp_path / "killed.log", extra_env=slow
        )
        deadline = time.monotonic() + 300
        while True:
            record = state.current()
            if record is not None and record.status == "running" and record.layers:
                break
            assert process.poll() is None, (tmp_path / "killed.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the propagate step never started"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        killed = state.current()
        assert killed.status == "running", "the run finished before the kill"
        expires = time.monotonic() + 60
        while state.holder() is not None:  # the dead run's lock expires (3 s)
            assert time.monotonic() < expires, "the killed run's lock never expired"
            time.sleep(0.2)

        rerun = airflow.run("dags", "test", "watershed_nightly", DAY, graph=graph, extra_env=slow)
        assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
        steps = {s["step"]: s for s in _summary(airflow)["steps"]}
        # the killed run was finished, then a run of its own took what changed since it began
        assert steps["propagate"]["counts"]["resumed"] == killed.run_id
        assert state.last_completed().status == "done"

        # the same graph as an uninterrupted nightly run on a fresh graph
        clean_graph = "dag_clean"
        clean = airflow.run("dags", "test", "watershed_nightly", DAY, graph=clean_graph)
        assert clean.returncode == 0, clean.stdout[-3000:] + clean.stderr[-3000:]
        clean_store = _store(falkordb_server, clean_graph)
        try:
            assert graph_state(store) == graph_state(clean_store)
        finally:
            clean_store.clear()
            clean_store.close()
    finally:
        store.clear()
        store.close()


def _hive_conf(root: Path) -> dict[str, str]:
    """Spark conf for a Hive metastore in Derby under root: the process that registers the warehouse
    and the spark-submit steps (through the connection's conf) open the same catalog, one at a time.
    Derby without fsync (durability=test): a throwaway metastore, created several times faster."""
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(root / "spark-warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true"
        ),
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={root} -Dderby.system.durability=test",
    }


def _hive_warehouse(spark, root: Path, conf: dict[str, str]) -> NightlyInputs:
    """The protection e2e warehouse written by the test's Spark, then registered in the Hive
    metastore of `conf` by a Spark of its own (the test's Spark keeps an in-memory catalog)."""
    inputs = nightly_inputs(spark, root / "night")
    for table in TABLES:  # external tables: their files stay
        spark.sql(f"DROP TABLE IF EXISTS {table}")
    registered = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.support.nightly_warehouse",
            json.dumps(conf),
            json.dumps(asdict(inputs)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    assert registered.returncode == 0, registered.stderr[-3000:]
    return inputs


def test_a_run_with_apply_protection_encrypts_the_warehouse_through_the_spark_submit_job(
    airflow, falkordb_server, kms_server, spark, tmp_path
):
    conf = _hive_conf(tmp_path / "hive")
    inputs = _hive_warehouse(spark, tmp_path / "hive", conf)
    files = {table: inputs.files(table) for table in TABLES}
    planned = files[SOURCE] + files[CLEAN]
    assert all(len(files[t]) >= 2 for t in TABLES), files
    data = tmp_path / "var"
    night = {
        "WATERSHED_DATA_DIR": str(data),
        "WATERSHED_NIGHTLY_TASKS": inputs.tasks,
        "WATERSHED_NIGHTLY_CATALOG": inputs.catalog,
        "WATERSHED_NIGHTLY_KMS": kms_server.provider_path,
        # the apply job's executors authenticate with the KMS delegation token
        "HADOOP_TOKEN_FILE_LOCATION": str(kms_server.token_file),
        "AIRFLOW_CONN_WATERSHED_SPARK": json.dumps(
            {"conn_type": "spark", "host": "local[2]", "extra": {"conf": conf}}
        ),
    }
    graph = "dag_apply"
    store = _store(falkordb_server, graph)
    try:
        run = airflow.run(
            "dags", "test", "watershed_nightly", DAY, "-c", json.dumps({"apply_protection": True}),
            graph=graph,
            extra_env=night,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        summary = json.loads((data / "nightly" / DAY / "summary.json").read_text())
        assert summary["status"] == "complete", summary
        steps = {s["step"]: s for s in summary["steps"]}
        applied = steps["protection_apply"]
        assert applied["status"] == "done" and applied["run_id"] == f"protect-nightly-{DAY}", applied
        assert applied["counts"]["files_done"] == len(planned) > 0, applied
        assert applied["counts"]["files_failed"] == applied["counts"]["files_skipped"] == 0
        for table in TABLES:
            assert inputs.files(table) == files[table]
            for path in files[table]:
                assert held(path) == dict.fromkeys(PROTECTED[table], ("pii", "nullify")), path
        # the DDL ran in the job's catalog and the records are those `watershed nightly` leaves
        # (tests/api/service/test_nightly.py compares its records with the same expectation)
        assert protection_records(store, inputs.root) == expected_protection(inputs, kms_server.provider_path)
    finally:
        store.clear()
        store.close()
