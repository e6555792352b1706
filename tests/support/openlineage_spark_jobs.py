"""Three Spark jobs run with OpenLineage's Spark listener attached, in a process of their own (one
SparkContext per process: the session's `spark` fixture has no listener, and a listener is only
read when a context starts). The listener's HTTP transport sends every event to URL + ENDPOINT with
the API key as a bearer token.

    python -m tests.support.openlineage_spark_jobs JAR URL ENDPOINT API_KEY NAMESPACE WORKDIR ORDER

`run_jobs` starts that process; `job_events` picks one job's events out of what arrived.
`python -m tests.support.openlineage_spark_jobs --record DIR` re-records the events committed under
tests/ingest/openlineage/events (one JSON array per job, in arrival order).

The source tables are written through the DataFrame API first (their events are the set-up's);
then the jobs, each one Spark action, so one OpenLineage run (its job name ends with its output):
- dataframe: default.customers with email hashed by sha2(email, 256), saved as
  default.customers_hashed (no SQL anywhere)
- files: default.orders summed per customer, written as Parquet files to WORKDIR/files/order_totals
- sql: INSERT INTO default.customer_orders SELECT ... FROM customers JOIN orders ... WHERE ...

ORDER is `sql-last` or `sql-first`. On Spark 4.3 the listener (1.53.0) reports the text of the
last `spark.sql` statement as the SQL job facet of every later DataFrame action of the session
(tests/ingest/openlineage/events/README.md): run first, the SQL job's INSERT text rides along with
the DataFrame and file jobs, as in a real script that mixes both; the recorded events are
`sql-last`, so each job's facets are its own.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Spark's app name: the OpenLineage parent job's name and the prefix of every job's name
APP_NAME = "watershed_ol_jobs"
LISTENER = "io.openlineage.spark.agent.OpenLineageSparkListener"
#: the stock HTTP transport's default endpoint, Watershed's intake
ENDPOINT = "/api/v1/lineage"
#: each job -> the last path segment of the dataset it writes (the jobs' outputs under WORKDIR)
OUTPUTS = {"dataframe": "customers_hashed", "files": "order_totals", "sql": "customer_orders"}


def listener_jar() -> Path:
    """The listener's jar as scripts/bootstrap.sh placed it, in the version the pom pins."""
    pom = (ROOT / "scripts" / "maven" / "openlineage-spark" / "pom.xml").read_text()
    version = pom.split("<openlineage.version>")[1].split("<")[0]
    # the virtualenv's share/ folder, as graph/neo4j_server.py finds the local Neo4j
    jar = (
        Path(sys.prefix)
        / "share"
        / "watershed"
        / f"openlineage-spark-{version}"
        / f"openlineage-spark_2.13-{version}.jar"
    )
    if not jar.is_file():
        raise FileNotFoundError(f"{jar} is missing: scripts/bootstrap.sh fetches it")
    return jar


def run_jobs(url: str, api_key: str, namespace: str, workdir: Path, order: str = "sql-last") -> None:
    """The three jobs in a Spark process of their own, its listener sending to `url`."""
    args = [str(listener_jar()), url, ENDPOINT, api_key, namespace, str(workdir), order]
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.openlineage_spark_jobs", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the Spark jobs failed ({done.returncode}):\n{done.stderr[-4000:]}")


def job_events(events: list[dict], job: str) -> list[dict]:
    """The events of one job (a key of OUTPUTS): those that read something and write its output.
    The set-up's events (no input) and the application's own (no dataset) are left out."""
    suffix = "/" + OUTPUTS[job]
    return [
        e for e in events if e.get("inputs") and any(o["name"].endswith(suffix) for o in e.get("outputs", []))
    ]


def session(jar: str, url: str, endpoint: str, api_key: str, namespace: str, workdir: Path):
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master("local[1]")
        .appName(APP_NAME)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.warehouse.dir", str(workdir / "warehouse"))
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={workdir / 'derby'}")
        .config("spark.jars", jar)
        .config("spark.extraListeners", LISTENER)
        .config("spark.openlineage.transport.type", "http")
        .config("spark.openlineage.transport.url", url)
        .config("spark.openlineage.transport.endpoint", endpoint)
        .config("spark.openlineage.transport.auth.type", "api_key")
        .config("spark.openlineage.transport.auth.apiKey", api_key)
        .config("spark.openlineage.namespace", namespace)
        .getOrCreate()
    )


def set_up_tables(spark) -> None:
    customers = spark.createDataFrame(
        [(1, "a@example.com", "NL"), (2, "b@example.com", "DE")],
        "customer_id BIGINT, email STRING, country STRING",
    )
    customers.write.format("parquet").saveAsTable("customers")
    orders = spark.createDataFrame(
        [(10, 1, 12.5), (11, 2, 7.0), (12, 1, 3.25)], "order_id BIGINT, customer_id BIGINT, amount DOUBLE"
    )
    orders.write.format("parquet").saveAsTable("orders")
    spark.createDataFrame([], "customer_id BIGINT, email STRING, amount DOUBLE").write.format(
        "parquet"
    ).saveAsTable("customer_orders")


def dataframe_job(spark) -> None:
    from pyspark.sql import functions as F

    customers = spark.table("customers")
    hashed = customers.select(
        F.col("customer_id"), F.sha2(F.col("email"), 256).alias("email_hash"), F.col("country")
    )
    hashed.write.format("parquet").saveAsTable("customers_hashed")


def files_job(spark, workdir: Path) -> None:
    from pyspark.sql import functions as F

    totals = spark.table("orders").groupBy("customer_id").agg(F.sum("amount").alias("total_amount"))
    totals.write.mode("overwrite").parquet(str(workdir / "files" / "order_totals"))


def sql_job(spark) -> None:
    spark.sql(
        "INSERT INTO customer_orders"
        " SELECT c.customer_id, c.email, o.amount"
        " FROM customers c JOIN orders o ON c.customer_id = o.customer_id"
        " WHERE o.amount > 5"
    )


def record(outdir: Path) -> None:
    """Run the jobs against a capture server and write each job's events to OUTDIR/<job>_job.json.
    The work directory is a fixed path, so the recorded dataset names do not change run to run."""
    from tests.support.openlineage_capture import CaptureServer

    workdir = Path("/tmp/watershed-openlineage-jobs")
    shutil.rmtree(workdir, ignore_errors=True)
    with CaptureServer() as capture:
        run_jobs(capture.url, "not-a-secret", "spark-tests", workdir)
        events = capture.events()
    for job in OUTPUTS:
        (outdir / f"{job}_job.json").write_text(json.dumps(job_events(events, job), indent=1) + "\n")


def main(argv: list[str]) -> None:
    if argv[0] == "--record":
        record(Path(argv[1]))
        return
    jar, url, endpoint, api_key, namespace, workdir, order = argv
    if order not in ("sql-first", "sql-last"):
        raise SystemExit(f"ORDER: expected sql-first or sql-last, got {order!r}")
    work = Path(workdir)
    spark = session(jar, url, endpoint, api_key, namespace, work)
    spark.sparkContext.setLogLevel("ERROR")
    jobs = [lambda: dataframe_job(spark), lambda: files_job(spark, work)]
    jobs.insert(0 if order == "sql-first" else len(jobs), lambda: sql_job(spark))
    try:
        set_up_tables(spark)
        for job in jobs:
            job()
    finally:
        # stopping the context drains the listener's queue: every event is sent before the exit
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
