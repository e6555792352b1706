"""Read ORC directories with a fresh Spark that has no key provider at all: ORC's masked view.

    python -m tests.orc_crypto.spark_without_keys DIR [DIR ...]

prints one JSON line per directory: its rows sorted by `id`. The test session's Spark cannot
do this: ORC Java caches its key provider per JVM, and a provider kind it does not know makes
it loop forever on encrypted files (ReaderEncryption.getVariant), so it takes a JVM of its own.
"""

from __future__ import annotations

import json
import sys


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


if __name__ == "__main__":
    main(sys.argv[1:])
