"""Read ORC directories with a fresh Spark that has no key provider at all: ORC's masked view.

    python -m tests.support.spark_without_keys DIR [DIR ...]

prints one JSON line per directory: its rows sorted by `id`. The test session's Spark cannot
do this: ORC Java caches its key provider per JVM, and a provider kind it does not know makes
it loop forever on encrypted files (ReaderEncryption.getVariant), so it takes a JVM of its own:
`spark_rows_without_key_provider` runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def main(directories: list[str]) -> None:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("watershed-no-key-provider")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for directory in directories:
            rows = [r.asDict(recursive=True) for r in spark.read.orc(directory).collect()]
            rows.sort(key=lambda r: r["id"])
            print(json.dumps(rows, default=repr, sort_keys=True), flush=True)
    finally:
        spark.stop()


def spark_rows_without_key_provider(*directories: Path) -> list[list[dict]]:
    """The rows a fresh Spark with no key provider reads from each directory (sorted by id)."""
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.spark_without_keys", *map(str, directories)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("[")]


if __name__ == "__main__":
    main(sys.argv[1:])
