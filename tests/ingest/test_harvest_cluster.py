"""The harvest on separate executor JVMs and Python workers, the package shipped as on a cluster (issue 16).

Spark's `local-cluster[2,1,2048]` master starts a standalone master and two workers in the
driver's JVM, and one executor JVM per worker with Python workers of its own: a YARN or
Kubernetes run's process layout on one machine. The job is launched by spark-submit the way
a cluster run is: `watershed` reaches the driver and the executors only through
`--py-files watershed.zip` (made from the built wheel), and the interpreter they run
(`spark.pyspark.python`) has the dependencies but not watershed. The graph it loads must
equal an in-process harvest of the same corpus.

`import watershed` from a zip needs the zip's directory entries (watershed is a namespace
package with no `__init__.py`: zipimport finds its portion only through a `watershed/`
entry), which a wheel lacks; and PySpark puts only .zip/.egg/.jar files of
`spark.submit.pyFiles` on the executors' path, so a .whl given to `--py-files` as it is
would not import there. Hence the zip is built from the wheel's files, with its directories.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import uuid
import zipfile
from pathlib import Path

import pytest

from tests.support.wheel import run, venv_without_watershed
from watershed.graph.catalog import Catalog
from watershed.ingest.generator import generate_warehouse
from watershed.ingest.harvest import run_harvest

REPO = Path(__file__).resolve().parents[2]
PYSPARK_HOME = Path(sysconfig.get_path("purelib")) / "pyspark"
MASTER = "local-cluster[2,1,2048]"
#: written by the bare interpreter in every directory holding the shipped zip (an executor's)
MARKER_PREFIX = "watershed-test-python-"


def package_zip(wheel: Path, target: Path) -> Path:
    """`watershed/` of the wheel as a zip for --py-files, made as docs/operations.md says:
    unpack the wheel, `python -m zipfile -c watershed.zip watershed` (that writes the
    directory entries zipimport needs). The C extension inside cannot load from a zip: the
    pure-Python fallback (watershed.orc_crypto.masking) does the same work there."""
    unpacked = target.parent / "unpacked"
    run([sys.executable, "-m", "zipfile", "-e", wheel, unpacked], target.parent)
    run([sys.executable, "-m", "zipfile", "-c", target, "watershed"], unpacked)
    return target


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> Path:
    """An interpreter with this venv's dependencies (pyspark, sqlglot, ...) and no watershed.

    A plain path line in a .pth adds this venv's site-packages without running its .pth files,
    so the editable install's finder stays out. A second .pth line records, in any directory
    holding the shipped zip (an executor's working directory), that this interpreter ran there.
    """
    root = tmp_path_factory.mktemp("bare-venv")
    site = venv_without_watershed(root)
    python = root / "bin" / "python"
    (site / "watershed_test_marker.pth").write_text(
        "import os, sys; os.path.exists('watershed.zip') and "
        f"open('{MARKER_PREFIX}' + str(os.getpid()), 'w').write(sys.executable)\n"
    )
    return python


@pytest.fixture
def spark_home(tmp_path) -> Path:
    """pyspark's SPARK_HOME by symlinks: the local-cluster workers write their `work/`
    directories (one per executor, its logs and fetched files) here, not into the venv."""
    home = tmp_path / "spark-home"
    home.mkdir()
    for entry in PYSPARK_HOME.iterdir():
        if entry.name != "work":
            (home / entry.name).symlink_to(entry)
    return home


def _edges(store) -> set[tuple]:
    rows = store.read("MATCH (a:Column)-[r:FLOWS_TO]->(b:Column) RETURN a.id, b.id, r.task, r.kind")
    return {tuple(row) for row in rows}


@pytest.mark.timeout(600)
@pytest.mark.skipif(
    not (PYSPARK_HOME / "bin" / "spark-submit").exists(), reason="pyspark has no spark-submit"
)
def test_the_harvest_on_a_local_cluster_with_the_package_shipped_as_a_zip(
    wheel, bare_python, spark_home, spark, graph_store, falkordb_server, tmp_path
):
    from watershed.graph.falkordb_store import FalkorDBStore

    probe = subprocess.run(
        [bare_python, "-c", "import watershed"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert probe.returncode != 0 and "No module named 'watershed'" in probe.stderr, probe.stderr
    job = tmp_path / "job"
    job.mkdir()
    (tmp_path / "ship").mkdir()
    shipped = package_zip(wheel, tmp_path / "ship" / "watershed.zip")
    with zipfile.ZipFile(wheel) as built:  # the job's entry point as the wheel ships it, not the repo's
        (job / "harvest.py").write_bytes(built.read("watershed/ingest/harvest.py"))
    generate_warehouse(tmp_path / "warehouse", tasks=60, seed=7)
    tasks, catalog = tmp_path / "warehouse" / "tasks", tmp_path / "warehouse" / "catalog.json"

    graph_name = f"test_cluster_{uuid.uuid4().hex[:8]}"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("WATERSHED_", "SPARK_", "PYSPARK_"))},
        "SPARK_HOME": str(spark_home),
        "WATERSHED_DATA_DIR": str(tmp_path / "data"),
        "WATERSHED_BACKEND": "falkordb",
        "WATERSHED_FALKORDB_HOST": falkordb_server.host,
        "WATERSHED_FALKORDB_PORT": str(falkordb_server.port),
        "WATERSHED_GRAPH_NAME": graph_name,
    }
    cluster_store = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=graph_name)
    try:
        result = subprocess.run(
            [
                spark_home / "bin" / "spark-submit",
                *("--master", MASTER),
                *("--py-files", shipped),
                # driver and executors: the interpreter without watershed
                *("--conf", f"spark.pyspark.python={bare_python}"),
                *("--conf", "spark.ui.enabled=false"),
                # scheduling waits for both executors, so the extraction's two partitions run on two JVMs
                *("--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0"),
                *("--conf", "spark.scheduler.maxRegisteredResourcesWaitingTime=300s"),
                job / "harvest.py",
                *("--tasks", tasks, "--catalog", catalog, "--out", tmp_path / "out"),
            ],
            env=env,
            cwd=job,
            capture_output=True,
            text=True,
            timeout=540,
        )
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        record = json.loads((Path(summary["out_dir"]) / "run.json").read_text())
        assert record["status"] == "ok" and record["spark_master"] == MASTER, record
        assert record["tasks"] == record["loaded"] == 60

        # Both executors ran tasks (each fetched the zip into its working directory) in the
        # interpreter without watershed: what they imported came from the zip.
        executors = sorted(d for d in (spark_home / "work").glob("app-*/*") if (d / "watershed.zip").exists())
        assert len(executors) >= 2, executors
        for directory in executors:
            ran = {p.read_text() for p in directory.glob(f"{MARKER_PREFIX}*")}
            assert ran == {str(bare_python)}, (directory, ran)

        reference = run_harvest(
            spark,
            tasks=str(tasks),
            catalog=Catalog.load(catalog),
            store=graph_store,
            out_dir=tmp_path / "reference",
            progress=lambda _: None,
        )
        assert reference.tasks_with_errors == record["tasks_with_errors"]
        assert cluster_store.stats() == graph_store.stats()
        assert cluster_store.stats().column_edges > 0
        assert _edges(cluster_store) == _edges(graph_store)
    finally:
        cluster_store.clear()
        cluster_store.close()
