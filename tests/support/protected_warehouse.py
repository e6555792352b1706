"""The warehouse of the protection end-to-end test (tests/orc_crypto/test_protect_e2e.py), which the
nightly tests (tests/api/service/test_nightly.py, tests/dags/) build too: three ORC tables Spark
writes, partitioned by day, two of them built by SQL tasks; their rows, and what protection a
file's tail holds."""

from __future__ import annotations

import copy

import yaml

from watershed.graph.protection import ColumnKey
from watershed.orc_crypto.codec.tail import read_tail
from watershed.orc_crypto.protect.apply import file_protection
from watershed.propagation.policy import DEFAULT_POLICY_YAML

SOURCE, CLEAN, STATS = "ods.users", "dw.users_clean", "dw.users_stats"
TABLES = (SOURCE, CLEAN, STATS)
SCHEMAS = {
    SOURCE: "id BIGINT, ssn STRING, email STRING, name STRING, dt STRING",
    CLEAN: "id BIGINT, ssn STRING, email_lower STRING, dt STRING",
    STATS: "n BIGINT, dt STRING",
}
# The two tasks that build the downstream tables: Spark runs them, the lineage extractor reads them.
TASKS = {
    "t_users_clean": f"INSERT INTO TABLE {CLEAN} "
    f"SELECT id, ssn, lower(email) AS email_lower, dt FROM {SOURCE}",
    "t_users_stats": f"INSERT INTO TABLE {STATS} SELECT count(*) AS n, dt FROM {SOURCE} GROUP BY dt",
}
DAYS = ("2024-03-01", "2024-03-02")
ROWS = 16
NULLIFY = ColumnKey(key="pii", mask="nullify")


def source_rows() -> list[dict]:
    return [
        {
            "id": i,
            "ssn": f"{123000000 + i * 7919:09d}",
            "email": f"User{i}@Example.com",
            "name": f"name-{i}",
            "dt": DAYS[i % 2],
        }
        for i in range(ROWS)
    ]


def clean_rows() -> list[dict]:
    return [
        {"id": r["id"], "ssn": r["ssn"], "email_lower": r["email"].lower(), "dt": r["dt"]}
        for r in source_rows()
    ]


def policy_data(kms: str) -> dict:
    """The default tag policy without its name-pattern seeds (so every tag downstream of the
    steward's comes from propagation), with the test KMS as the provider the DDL sets."""
    data = copy.deepcopy(yaml.safe_load(DEFAULT_POLICY_YAML))
    data.pop("seeds")
    data["protection"]["key_provider_path"] = kms
    return data


def orc_files(location) -> list[str]:
    return sorted(str(p) for p in location.rglob("*.orc") if not p.name.startswith((".", "_")))


def build_warehouse(spark, root) -> dict[str, object]:
    """The three tables in Spark's catalog (USING ORC, partitioned by dt, LOCATION under root);
    Spark writes the source's rows and runs the two tasks. Returns table -> location."""
    locations = {table: root / table.replace(".", "/") for table in TABLES}
    for database in ("ods", "dw"):
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {database} LOCATION '{root / database}'")
    for table in TABLES:
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql(
            f"CREATE TABLE {table} ({SCHEMAS[table]}) USING ORC PARTITIONED BY (dt) "
            f"LOCATION '{locations[table]}'"
        )
    spark.createDataFrame(source_rows(), SCHEMAS[SOURCE]).repartition(1).write.insertInto(SOURCE)
    for sql in TASKS.values():
        spark.sql(sql)
    return locations


def sql_rows(spark, table: str) -> list[dict]:
    # no REFRESH TABLE: the session that ran the apply must not serve stale file sizes
    order = "dt" if table == STATS else "id"
    return [r.asDict() for r in spark.sql(f"SELECT * FROM {table} ORDER BY {order}").collect()]


def held(path: str) -> dict[str, tuple[str, str]]:
    return {name: (key.key, key.mask) for name, key in file_protection(read_tail(path)).items()}
