"""Protection benchmark: `protect apply` on Spark executors against Spark's own rewrite of the same
tables with `orc.encrypt`, and `protect rewrap` against `protect apply`, in one run.

    .venv/bin/python bench/protect_bench.py [--tables 4] [--files 200] [--size-mb 2200] [--master local[2]]

Generates (once, cached under var/bench/protect/) a warehouse of `--tables` partitioned tables
with `--files` snappy ORC files in all (pyarrow, deterministic) of about `--size-mb` MB together:
an id, a 9-digit `ssn` and an `email` (both tagged pii=L4), a barely compressible hex payload and
an amount. It starts FalkorDB and the embedded KMS on free ports, loads the tables into the graph
with their tags, registers them in Spark's catalog, and then times, on fresh copies of the files:

- spark: for every table, Spark reads it and writes it with `orc.encrypt` / `orc.mask` (what a
  user without Watershed runs to protect existing data: read + write with the options);
- apply: `watershed protect plan` then `apply` through Spark executors (each file rewritten by
  orc_crypto: encrypted streams and masked copies written, the rest copied, verified, swapped);
- rewrap: `kms roll pii`, then `protect rewrap` through Spark executors (each protected file's
  encrypted streams re-keyed in place).

Prints seconds, MB/s and the ratios the issue states its targets in (apply >= 3x Spark's rewrite;
rewrap >= 20x apply), and writes bench/results/protect_bench.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.orc_bench import start_kms  # noqa: E402

RESULTS = REPO / "bench" / "results" / "protect_bench.json"
COLUMNS = ["id", "ssn", "email", "payload", "amount"]
SENSITIVE = {"ssn": "L4", "email": "L4"}
HEX_WIDTH = 48
# bytes one row takes in a snappy ORC file of this shape (measured once; only sizes the generator)
BYTES_PER_ROW = 64


def _table_names(tables: int) -> list[str]:
    return [f"bench_protect.t{n}" for n in range(tables)]


def generate(root: Path, tables: int, files: int, size_mb: int, seed: int = 7) -> list[tuple[str, Path]]:
    """`files` ORC files spread over `tables` tables as `dt=` partitions (cached: a complete set
    is kept, a partial one written again)."""
    import random

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.orc as orc

    marker = root / "complete.json"
    spec = {"tables": tables, "files": files, "size_mb": size_mb, "seed": seed}
    names = _table_names(tables)
    locations = [(name, root / "data" / name.replace(".", "/")) for name in names]
    if marker.exists() and json.loads(marker.read_text()) == spec:
        return locations
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(seed)
    rows = max(1000, size_mb * 1_000_000 // files // BYTES_PER_ROW)
    offsets = pa.array(range(0, (rows + 1) * HEX_WIDTH, HEX_WIDTH), type=pa.int32()).buffers()[1]
    for n in range(files):
        _name, location = locations[n % tables]
        start = n * rows
        ids = pa.array(range(start, start + rows), type=pa.int64())
        text_ids = pc.cast(ids, pa.string())
        payload = pa.StringArray.from_buffers(
            rows, offsets, pa.py_buffer(rng.randbytes(rows * HEX_WIDTH // 2).hex().encode())
        )
        data = pa.table(
            {
                "id": ids,
                "ssn": pc.utf8_lpad(text_ids, 9, "0"),
                "email": pc.binary_join_element_wise("user", text_ids, "@example.com", ""),
                "payload": payload,
                "amount": pc.multiply(pc.cast(ids, pa.float64()), 0.01),
            }
        )
        partition = location / f"dt=2026-{1 + (n // tables) // 28:02d}-{1 + (n // tables) % 28:02d}"
        partition.mkdir(parents=True, exist_ok=True)
        orc.write_table(data, str(partition / "part-00000.orc"), compression="snappy")
    marker.write_text(json.dumps(spec))
    return locations


def _size(paths: list[Path]) -> int:
    return sum(f.stat().st_size for p in paths for f in p.rglob("*.orc"))


def _copy(locations: list[tuple[str, Path]], into: Path) -> list[tuple[str, Path]]:
    shutil.rmtree(into, ignore_errors=True)
    copies = []
    for name, location in locations:
        target = into / name.replace(".", "/")
        shutil.copytree(location, target)
        copies.append((name, target))
    os.sync()
    return copies


def load_graph(store, locations: list[tuple[str, Path]]) -> None:
    """The tables, their columns and their tags: pii=L4 on ssn and email, as propagation leaves it."""
    from watershed.graph.catalog import Catalog

    catalog = Catalog.from_dict(
        {
            "tables": {
                name: {
                    "columns": [{"name": c, "type": "string" if c != "id" else "bigint"} for c in COLUMNS],
                    "format": "orc",
                    "location": str(location),
                    "partitioned_by": [{"name": "dt", "type": "string"}],
                }
                for name, location in locations
            }
        }
    )
    store.upsert_catalog(catalog)
    tags = {
        f"{name}.{column}": json.dumps({"pii": {"v": [level], "o": "seed", "p": []}}, separators=(",", ":"))
        for name, _ in locations
        for column, level in SENSITIVE.items()
    }
    store.write_all(
        [
            (
                "UNWIND $rows AS r MATCH (c:Column {id: r[0]}) SET c.tags = r[1]",
                {"rows": [[column, text] for column, text in tags.items()]},
            )
        ]
    )


def register_tables(spark, locations: list[tuple[str, Path]]) -> None:
    spark.sql("CREATE DATABASE IF NOT EXISTS bench_protect")
    for name, location in locations:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(
            f"CREATE TABLE {name} (id BIGINT, ssn STRING, email STRING, payload STRING, amount DOUBLE, "
            f"dt STRING) USING ORC PARTITIONED BY (dt) LOCATION '{location}'"
        )
        spark.sql(f"ALTER TABLE {name} RECOVER PARTITIONS")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--size-mb", type=int, default=2200)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--work", type=Path, default=REPO / "var" / "bench" / "protect")
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    from watershed.graph.falkordb_store import FalkorDBStore
    from watershed.graph.protection import ProtectionPolicy, ProtectionRule
    from watershed.graph.server import ServerSpec, free_port, start, stop
    from watershed.orc_crypto.protect.plan import plan_protection
    from watershed.orc_crypto.protect.spark_apply import apply_plan, rewrap_files

    print(f"generating {args.files} files, about {args.size_mb} MB, under {args.work} (cached)", flush=True)
    source = generate(args.work / "source", args.tables, args.files, args.size_mb)
    size = _size([p for _, p in source])
    files = sum(1 for _, p in source for _ in p.rglob("*.orc"))
    print(f"{files} files, {size / 1e6:.0f} MB", flush=True)

    scratch = Path(tempfile.mkdtemp(prefix="protect-bench-", dir=args.work))
    kms = start_kms(_mkdir(scratch / "kms"))
    server = ServerSpec("falkordb", "127.0.0.1", free_port(), scratch, with_falkordb=True)
    start(server)
    result: dict = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "files": files,
        "mb": round(size / 1e6),
        "master": args.master,
    }
    spark = None
    try:
        store = FalkorDBStore("127.0.0.1", server.port, graph="bench_protect")
        store.ensure_schema()
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        spark = (
            SparkSession.builder.master(args.master)
            .appName("protect-bench")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", "4g")
            .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
            .config("spark.executorEnv.HADOOP_TOKEN_FILE_LOCATION", os.environ["HADOOP_TOKEN_FILE_LOCATION"])
            .config("spark.hadoop.hadoop.security.key.provider.path", kms.provider_path)
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")

        # Spark's own rewrite: read each table, write it with the encryption options.
        spark_in = _copy(source, scratch / "spark_in")
        options = {
            "orc.key.provider": "hadoop",
            "orc.encrypt": "pii:ssn,email",
            "orc.mask": "nullify:ssn,email",
            "orc.compress": "SNAPPY",
        }
        # an untimed warm-up so the JVM's start is not charged to the timed rewrite
        spark.read.orc(str(spark_in[0][1])).limit(10_000).write.options(**options).mode("overwrite").orc(
            str(scratch / "warmup")
        )
        started = time.monotonic()
        for name, location in spark_in:
            spark.read.orc(str(location)).write.options(**options).mode("overwrite").partitionBy("dt").orc(
                str(scratch / "spark_out" / name)
            )
        spark_seconds = time.monotonic() - started
        shutil.rmtree(scratch / "spark_in", ignore_errors=True)
        shutil.rmtree(scratch / "spark_out", ignore_errors=True)
        result["spark_rewrite_s"] = round(spark_seconds, 2)
        print(f"spark rewrite: {spark_seconds:.1f} s ({size / 1e6 / spark_seconds:.0f} MB/s)", flush=True)

        # protect plan + apply through Spark executors, on a fresh copy.
        tables = _copy(source, scratch / "apply")
        load_graph(store, tables)
        register_tables(spark, tables)
        policy = ProtectionPolicy(
            key_provider_path=kms.provider_path,
            rules=[ProtectionRule(tag="pii", levels=["L4"], key="pii", mask="nullify")],
        )
        started = time.monotonic()
        plan = plan_protection(store, policy, key_provider_path=kms.provider_path)
        plan_seconds = time.monotonic() - started
        planned = sum(len(t.files) for t in plan.tables)
        run = apply_plan(plan, store, spark=spark, kms=kms.provider_path)
        apply_seconds = time.monotonic() - started
        if run.errors or run.files_done != planned:
            raise SystemExit(f"apply did not protect every file: {run.model_dump_json()}")
        result.update(
            plan_s=round(plan_seconds, 2),
            apply_s=round(apply_seconds, 2),
            files_done=run.files_done,
            bytes_rewritten=run.bytes_rewritten,
        )
        print(
            f"protect plan + apply: {apply_seconds:.1f} s (plan {plan_seconds:.1f} s), {run.files_done} files",
            flush=True,
        )

        # rewrap after a key roll
        kms.state.backend.roll_key("pii")
        started = time.monotonic()
        rewrap = rewrap_files(store, spark=spark, kms=kms.provider_path)
        rewrap_seconds = time.monotonic() - started
        if rewrap.errors or rewrap.files_done != planned:
            raise SystemExit(f"rewrap did not re-key every file: {rewrap.model_dump_json()}")
        result["rewrap_s"] = round(rewrap_seconds, 2)
        print(f"protect rewrap: {rewrap_seconds:.1f} s, {rewrap.files_done} files", flush=True)

        result["apply_vs_spark"] = round(spark_seconds / apply_seconds, 2)
        result["rewrap_vs_apply"] = round(apply_seconds / rewrap_seconds, 2)
        print(
            f"apply vs Spark's rewrite: {result['apply_vs_spark']}x (target >= 3); "
            f"rewrap vs apply: {result['rewrap_vs_apply']}x (target >= 20)",
            flush=True,
        )
    finally:
        if spark is not None:
            spark.stop()
        stop(server)
        kms.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"results written to {RESULTS.relative_to(REPO)}")


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


if __name__ == "__main__":
    main()
