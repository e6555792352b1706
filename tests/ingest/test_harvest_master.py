"""The harvest job's entry point takes its master and paths from the launcher and the settings (issue 12).

`spark-submit --master M ingest/harvest.py` must run on M (the job used to set
local[*] itself, so `--master yarn` ran locally); outside spark-submit the
master is WATERSHED_SPARK_MASTER, and run records go under DATA_DIR/harvest
like `watershed harvest`'s. Each test starts a Spark application of its own:
the master is a property of the process that launched it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SPARK_SUBMIT = Path(sys.executable).parents[1] / "lib/python3.11/site-packages/pyspark/bin/spark-submit"


@pytest.fixture
def corpus(tmp_path) -> Path:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "t_a.sql").write_text("INSERT OVERWRITE TABLE dwd.a SELECT x, upper(y) AS y FROM ods.b")
    return tasks


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("WATERSHED_", "SPARK_", "PYSPARK_"))},
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "WATERSHED_DATA_DIR": str(tmp_path / "data"),
        **extra,
    }


def _submit(corpus: Path, tmp_path: Path, env: dict[str, str], *job_args: str) -> subprocess.CompletedProcess:
    job = [str(REPO / "ingest/harvest.py"), "--tasks", str(corpus), "--graph", "none", *job_args]
    return subprocess.run(
        [str(SPARK_SUBMIT), "--master", "local[1]", *job],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _run_record(result: subprocess.CompletedProcess, data_dir: Path) -> dict:
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    out_dir = Path(summary["out_dir"])
    assert out_dir.parent == data_dir / "harvest", out_dir
    record = json.loads((out_dir / "run.json").read_text())
    assert record["status"] == "ok" and record["tasks"] == 1
    return record


@pytest.mark.spark  # no fixture: the test runs spark-submit itself
@pytest.mark.skipif(not SPARK_SUBMIT.exists(), reason="pyspark's spark-submit is not in this venv")
def test_spark_submit_runs_the_job_on_the_master_it_was_given(corpus, tmp_path):
    # WATERSHED_SPARK_MASTER is lower than spark-submit's own flag: the launcher's master wins.
    env = _env(tmp_path, WATERSHED_SPARK_MASTER="local[2]")
    result = _submit(corpus, tmp_path, env)
    assert _run_record(result, tmp_path / "data")["spark_master"] == "local[1]"

    # a --master of the job's own that contradicts spark-submit's is refused, not silently used
    refused = _submit(corpus, tmp_path, env, "--master", "local[2]")
    assert refused.returncode == 1
    # spark-submit merges the driver's standard error into its standard output
    assert "--master local[2]: this job was launched on local[1]" in refused.stdout


def test_the_job_outside_spark_submit_takes_the_master_from_the_settings(corpus, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "watershed.ingest.harvest", "--tasks", str(corpus), "--graph", "none"],
        env=_env(tmp_path, WATERSHED_SPARK_MASTER="local[1]"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert _run_record(result, tmp_path / "data")["spark_master"] == "local[1]"


def test_the_job_loads_into_the_configured_backend(corpus, tmp_path):
    """WATERSHED_BACKEND=neo4j with no Neo4j there: an error naming neo4j, never a load into FalkorDB."""
    from watershed.graph.server import free_port

    port = free_port()
    result = subprocess.run(
        [sys.executable, "-m", "watershed.ingest.harvest", "--tasks", str(corpus)],
        env=_env(tmp_path, WATERSHED_BACKEND="neo4j", WATERSHED_NEO4J_URI=f"bolt://127.0.0.1:{port}"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"error: cannot reach the neo4j graph on bolt://127.0.0.1:{port}" in result.stderr
