"""apply_plan through Spark local mode: the DDL through Spark SQL, the files rewritten by executors,
read back by Spark with the key (plaintext) and without it (masks); a new INSERT is encrypted."""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path

from watershed.graph.protection import (
    ColumnChange,
    ColumnKey,
    FilePlan,
    ProtectionPlan,
    TablePlan,
)
from watershed.orc_crypto.codec.tail import read_tail
from watershed.orc_crypto.protect import records
from watershed.orc_crypto.protect.ddl import alter_table_ddl
from watershed.orc_crypto.protect.spark_apply import apply_plan
from watershed.orc_crypto.protect.tails import file_protection

TABLE = "protect_apply_customers"
SCHEMA = "id BIGINT, ssn STRING, email STRING, name STRING, dt STRING"
ROWS = 24
WANT = {"ssn": ColumnKey(key="pii", mask="nullify"), "email": ColumnKey(key="pii", mask="sha256")}


def _rows() -> list[dict]:
    return [
        {
            "id": i,
            "ssn": f"{100000000 + i * 7919:09d}",
            "email": None if i % 5 == 2 else f"user{i}@example.com",
            "name": f"name-{i}",
            "dt": "2024-01-01" if i < ROWS // 2 else "2024-01-02",
        }
        for i in range(ROWS)
    ]


def _orc_files(location: Path) -> list[Path]:
    return sorted(p for p in location.rglob("*.orc") if not p.name.startswith((".", "_")))


def make_table(spark, location: Path) -> list[Path]:
    spark.sql(f"DROP TABLE IF EXISTS {TABLE}")
    spark.sql(
        f"CREATE TABLE {TABLE} (id BIGINT, ssn STRING, email STRING, name STRING, dt STRING) "
        f"USING ORC PARTITIONED BY (dt) LOCATION '{location}'"
    )
    frame = spark.createDataFrame(_rows(), SCHEMA)
    frame.repartition(2).write.insertInto(TABLE)
    return _orc_files(location)


def make_plan(table: str, location: Path, files: list[Path], kms: str) -> ProtectionPlan:
    plans = []
    for path in files:
        stat = os.stat(path)
        plans.append(
            FilePlan(
                path=str(path),
                partition=path.parent.name,
                size=stat.st_size,
                mtime_ns=stat.st_mtime_ns,
                action="encrypt",
                columns=WANT,
            )
        )
    changes = [
        ColumnChange(column=f"default.{table}.{name}", name=name, action="encrypt", want=key, tag="pii=L4")
        for name, key in WANT.items()
    ]
    # The planner's DDL (TBLPROPERTIES and SERDEPROPERTIES): a datasource (USING ORC) table takes its
    # writer options from its storage properties, so this is what proves a USING ORC table is covered.
    ddl = alter_table_ddl(table, WANT, kms)
    return ProtectionPlan(
        created_at=datetime.now(UTC).isoformat(),
        policy_digest="test",
        key_provider_path=kms,
        tables=[
            TablePlan(table=table, location=str(location), target=WANT, columns=changes, ddl=ddl, files=plans)
        ],
    )


def add_table(store, table: str, location: Path) -> None:
    """The catalog's Table node with its location: apply rewrites only files under it."""
    store.execute(
        "MERGE (t:Table {id: $id}) SET t.location = $location", {"id": table, "location": str(location)}
    )


def _spark_rows(spark, location: Path) -> list[dict]:
    # the partition column as a string, as the table declares it (not inferred as a date)
    frame = spark.read.option("basePath", str(location)).schema(SCHEMA).orc(str(location))
    rows = [r.asDict() for r in frame.collect()]
    return sorted(rows, key=lambda r: r["id"])


def test_apply_on_spark_encrypts_files_sets_ddl_and_is_idempotent(spark, kms_server, graph_store, tmp_path):
    location = tmp_path / "customers"
    files = make_table(spark, location)
    assert len(files) >= 2
    plan = make_plan(TABLE, location, files, kms_server.provider_path)
    add_table(graph_store, TABLE, location)
    seen: list[tuple[int, int]] = []
    run = apply_plan(plan, graph_store, spark=spark, progress=lambda done, total: seen.append((done, total)))
    assert run.status == "done" and not run.errors and not run.skipped, run
    assert run.files_done == len(files) and run.files_unchanged == 0
    assert run.bytes_rewritten == sum(p.stat().st_size for p in files)
    assert seen[-1] == (len(files), len(files))
    assert records.run(graph_store, run.id) == run

    # every file now holds the plan's encryption, and its record says so with its checksum
    saved = records.files_of(graph_store, [TABLE])
    assert sorted(saved) == [str(p) for p in files]
    for path in files:
        assert {n: (k.key, k.mask) for n, k in file_protection(read_tail(path)).items()} == {
            n: (k.key, k.mask) for n, k in WANT.items()
        }
        assert saved[str(path)].sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        assert saved[str(path)].run == run.id
    assert not [p for p in location.rglob(".*") if p.is_file() and p.name.endswith(".tmp")]
    assert records.table_protection(graph_store, TABLE).ddl == plan.tables[0].ddl
    assert records.table_protection(graph_store, TABLE).columns == WANT

    # Spark with the key reads the plaintext; as a user without the key's ACL, the masks
    assert _spark_rows(spark, location) == _rows()
    kms_server.deny_decrypt("pii")
    try:
        masked = _spark_rows(spark, location)
    finally:
        kms_server.reset_acl()
    assert [r["ssn"] for r in masked] == [None] * ROWS
    assert [r["email"] for r in masked] == [
        None if r["email"] is None else hashlib.sha256(r["email"].encode()).hexdigest().upper()
        for r in _rows()
    ]

    # the DDL made Spark's own writes encrypted: a new INSERT's file carries the keys
    spark.sql(f"INSERT INTO {TABLE} VALUES (100, '999000111', 'new@example.com', 'new', '2024-01-03')")
    new_files = [p for p in _orc_files(location) if p.parent.name == "dt=2024-01-03"]
    assert new_files
    for path in new_files:
        held = file_protection(read_tail(path))
        assert {n: (k.key, k.mask) for n, k in held.items()} == {
            "ssn": ("pii", "nullify"),
            "email": ("pii", "sha256"),
        }

    # the same plan again: nothing rewritten, no DDL run again, the files byte for byte as they were
    before = {p: p.read_bytes() for p in files}
    again = apply_plan(plan, graph_store, spark=spark)
    assert again.status == "done" and not again.errors and not again.skipped
    assert (again.files_done, again.files_unchanged, again.bytes_rewritten) == (0, len(files), 0)
    assert {p: p.read_bytes() for p in files} == before
    assert records.table_protection(graph_store, TABLE).run == run.id
    spark.sql(f"DROP TABLE IF EXISTS {TABLE}")


def test_failed_ddl_leaves_the_tables_files_alone(spark, kms_server, graph_store, tmp_path):
    """Spark refuses the DDL (here: no such table): its files are not rewritten, since Spark would
    go on writing plaintext next to them."""
    location = tmp_path / "orphan"
    location.mkdir()
    path = location / "part-0.orc"
    frame = spark.createDataFrame(_rows(), SCHEMA)
    frame.coalesce(1).write.orc(str(tmp_path / "written"))
    next((tmp_path / "written").rglob("part-*.orc")).rename(path)
    before = path.read_bytes()
    table = "protect_apply_no_such_table"
    add_table(graph_store, table, location)
    plan = make_plan(table, location, [path], kms_server.provider_path)
    run = apply_plan(plan, graph_store, spark=spark)
    assert run.status == "done" and run.files_done == 0
    assert [e.error.split(":")[0] for e in run.errors] == ["DDL failed"]
    assert [(s.path, s.error.split(" (")[0]) for s in run.skipped] == [
        (str(path), "not rewritten: the table's DDL failed")
    ]
    assert path.read_bytes() == before
    assert records.files_of(graph_store, [table]) == {}
    assert records.table_protection(graph_store, table) is None


def test_second_apply_records_every_protected_column_and_the_next_plan_is_empty(
    spark, kms_server, graph_store, tmp_path
):
    """Issue 14: apply with ssn protected; tag email; apply again -> the table's record holds both,
    and a plan made after it has nothing left to do."""
    import copy

    import yaml

    from watershed.ingest.harvest import catalog_from_spark
    from watershed.orc_crypto.protect.plan import plan_protection
    from watershed.propagation.engine import local_batches, propagate_full
    from watershed.propagation.graph_store import GraphTagStore
    from watershed.propagation.policy import DEFAULT_POLICY_YAML, Policy

    kms = kms_server.provider_path
    data = copy.deepcopy(yaml.safe_load(DEFAULT_POLICY_YAML))
    data.pop("seeds")
    data["protection"]["key_provider_path"] = kms
    policy = Policy.from_data(data, source="<test policy>")
    table = f"default.{TABLE}"
    make_table(spark, tmp_path / "customers")
    try:
        catalog = catalog_from_spark(spark, ["default"])
        catalog.tables = {table: catalog.tables[table]}
        graph_store.upsert_catalog(catalog)
        tags = GraphTagStore(graph_store, policy)
        for token, column in enumerate(("ssn", "email"), start=1):
            tags.set_tag(f"{table}.{column}", "pii", ["L4"], by="steward")
            tags.raise_fence(token)
            propagate_full(
                tags, local_batches(tags, policy, f"r{token}", token), run_id=f"r{token}", token=token
            )
            plan = plan_protection(graph_store, policy.protection, tables=[table])
            run = apply_plan(plan, graph_store, spark=spark, kms=kms)
            assert run.status == "done" and not run.errors and not run.skipped, run
        record = records.table_protection(graph_store, table)
        assert {name.lower() for name in record.columns} == {"ssn", "email"}
        after = plan_protection(graph_store, policy.protection)
        assert [(t.table, t.ddl, t.files, t.columns) for t in after.tables] == []
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {TABLE}")
