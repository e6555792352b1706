"""Fixtures for orc_crypto tests: a Spark-written encrypted table, reusable by every orc_crypto test."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from tests.support.plan_table import TABLE, set_table, tags
from watershed.orc_crypto.keys.memory import InMemoryKeyProvider

DATA_DIR = Path(__file__).parent / "data"
ENCRYPTED_TABLE = "enc_customers"
ENCRYPTED_ROWS = 30
ROWS_PER_STRIPE = 10

#: the tags and policy the encrypted table is generated from (also used by the DDL tests)
TABLE_TAGS = {
    "table": ENCRYPTED_TABLE,
    "columns": [
        {"name": "id", "type": "bigint"},
        {"name": "ssn", "type": "string", "tags": ["pii"]},
        {"name": "email", "type": "string", "tags": ["contact"]},
        {"name": "salary", "type": "int", "tags": ["financial"]},
        {"name": "address", "type": "struct<street:string,zip:string>", "tags": ["pii"]},
        {"name": "name", "type": "string", "tags": ["public"]},
    ],
}
POLICY = {
    "levels": [
        {"name": "pii", "key": "pii", "mask": "nullify"},
        {"name": "contact", "key": "pii", "mask": "sha256"},
        {"name": "financial", "key": "fin", "mask": "redact"},
    ]
}


def expected_rows() -> list[dict]:
    rows = []
    for i in range(ENCRYPTED_ROWS):
        rows.append(
            {
                "id": i,
                "ssn": f"{100000000 + i * 7919:09d}",
                "email": None if i % 7 == 3 else f"user{i}@example.com",
                "salary": 1000 + i * 37,
                "address": {"street": f"{i} Main St", "zip": f"{10000 + i}"},
                "name": f"name-{i}",
            }
        )
    return rows


def masked_row(row: dict) -> dict:
    """What a reader without keys sees: nullify -> null, sha256 -> uppercase hex, redact -> digits as 9."""
    email = row["email"]
    return {
        "id": row["id"],
        "ssn": None,
        "email": None if email is None else hashlib.sha256(email.encode()).hexdigest().upper(),
        "salary": int("9" * len(str(row["salary"]))),
        "address": None,
        "name": row["name"],
    }


@dataclass
class SparkEncryptedOrc:
    """The encrypted table Spark wrote through the embedded KMS."""

    table: str
    directory: Path
    files: list[Path]
    rows: list[dict]  # the plaintext Spark wrote, sorted by id
    ddl: str
    orc_encrypt: str
    orc_mask: str
    #: KMS requests (RequestRecord) made while Spark wrote the table
    kms_requests: list = field(default_factory=list)


@pytest.fixture(scope="session")
def spark_encrypted_orc(spark, kms_server) -> SparkEncryptedOrc:
    """An ORC table written by Spark from the generated DDL: keys pii + fin, nullify/sha256/redact,
    an encrypted struct column, one file of 3 stripes (10 rows each)."""
    from watershed.orc_crypto.ddl import TableTags, create_table_ddl, ddl_policy, plan_encryption

    tags = TableTags.model_validate(TABLE_TAGS)
    policy = ddl_policy(POLICY)
    ddl = create_table_ddl(
        ENCRYPTED_TABLE,
        tags,
        policy,
        key_provider_path=kms_server.provider_path,
        extra_options={
            "orc.compress": "SNAPPY",
            "orc.stripe.row.count": str(ROWS_PER_STRIPE),
            "orc.rows.between.memory.checks": "1",
        },
    )
    plan = plan_encryption(tags, policy)
    rows = expected_rows()
    spark.sql(f"DROP TABLE IF EXISTS {ENCRYPTED_TABLE}")
    spark.sql(ddl)
    schema = ", ".join(f"{c.name} {c.type}" for c in tags.columns)
    frame = spark.createDataFrame([tuple(r.values()) for r in rows], schema)
    previous_batch = spark.conf.get("spark.sql.orc.columnarWriterBatchSize")
    # Small writer batches let ORC's stripe.row.count check run often enough to cut stripes.
    spark.conf.set("spark.sql.orc.columnarWriterBatchSize", "1")
    kms_server.clear_requests()
    try:
        frame.coalesce(1).write.insertInto(ENCRYPTED_TABLE)
    finally:
        spark.conf.set("spark.sql.orc.columnarWriterBatchSize", previous_batch)
    requests = kms_server.requests()
    location = spark.sql(f"DESCRIBE TABLE EXTENDED {ENCRYPTED_TABLE}").where("col_name = 'Location'").first()
    directory = Path(location.data_type.removeprefix("file:"))
    files = sorted(directory.glob("*.orc"))
    return SparkEncryptedOrc(
        table=ENCRYPTED_TABLE,
        directory=directory,
        files=files,
        rows=rows,
        ddl=ddl,
        orc_encrypt=plan.orc_encrypt,
        orc_mask=plan.orc_mask,
        kms_requests=requests,
    )


#: the keystore passphrase of the CLI tests (a low scrypt cost keeps them fast)
CLI_PASSPHRASE_ENV = {"WATERSHED_KEYSTORE_PASSPHRASE": "cli-secret", "WATERSHED_KEYSTORE_SCRYPT_N": "1024"}


@pytest.fixture
def cli_keystore(tmp_path, monkeypatch) -> Path:
    """A keystore with the key `pii`, created through `watershed kms create-key`; its passphrase is set."""
    from typer.testing import CliRunner

    from watershed.api.cli import app

    for name, value in CLI_PASSPHRASE_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("WATERSHED_KEYSTORE_PASSPHRASE_FILE", raising=False)
    path = tmp_path / "ks.json"
    result = CliRunner().invoke(app, ["kms", "create-key", "pii", "--keystore", str(path)])
    assert result.exit_code == 0, result.output
    return path


def flat(result) -> str:
    """A CLI result's output with its line breaks and runs of spaces made single spaces."""
    return " ".join(result.output.split())


@pytest.fixture
def kms_env(tmp_path, monkeypatch) -> dict[str, str]:
    """A keystore, KMS secret and token of this test's own (passphrase from CLI_PASSPHRASE_ENV), set in
    the environment; returns the whole environment, for subprocesses."""
    values = {
        **CLI_PASSPHRASE_ENV,
        "WATERSHED_KEYSTORE_PATH": str(tmp_path / "ks.json"),
        "WATERSHED_KMS_SECRET_FILE": str(tmp_path / "kms.secret"),
        "WATERSHED_KMS_TOKEN_FILE": str(tmp_path / "kms.token"),
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("HADOOP_TOKEN_FILE_LOCATION", raising=False)
    monkeypatch.delenv("WATERSHED_KEYSTORE_PASSPHRASE_FILE", raising=False)
    return {**os.environ, **values}


# the protection plan tests' keys and table (tests/support/plan_table.py)
@pytest.fixture
def provider():
    return InMemoryKeyProvider({"pii": b"p" * 32, "fin": b"f" * 16})


@pytest.fixture
def warehouse(graph_store, tmp_path):
    """dw.users (id, ssn, email) at a local location with two ORC partitions; ssn is pii=L4."""
    location = tmp_path / "dw" / "users"
    for day in ("2026-01-01", "2026-01-02"):
        part = location / f"dt={day}"
        part.mkdir(parents=True)
        table = pa.table({"id": [1, 2, 3], "ssn": ["a", "b", "c"], "email": ["x@y", "z@w", None]})
        orc.write_table(table, part / "part-0.orc")
        (part / "_SUCCESS").write_bytes(b"")
        (part / ".part-0.orc.crc").write_bytes(b"junk")
    set_table(graph_store, TABLE, str(location), {"id": None, "ssn": tags("L4"), "email": None})
    return location
