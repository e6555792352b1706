"""Spark (ORC Java) reads what orc_crypto encrypted, through the embedded KMS."""

from __future__ import annotations

from pathlib import Path

import pyarrow.orc as orc
import pytest

from watershed.orc_crypto.decrypt import read_table
from watershed.orc_crypto.encrypt import encrypt_file, parse_encrypt_option, parse_mask_option


def _spark_plain_file(spark, directory: Path, codec: str) -> Path:
    rows = [(i, f"{i:09d}", f"user{i}@example.com", float(i * 10), (f"c{i % 3}", i)) for i in range(300)]
    frame = spark.createDataFrame(
        rows, "id int, ssn string, email string, salary double, addr struct<city:string,zip:int>"
    )
    out = directory / f"plain_{codec}"
    frame.coalesce(1).write.option("orc.compress", codec).orc(str(out))
    return next(out.glob("part-*.orc"))


@pytest.mark.parametrize("codec", ["SNAPPY", "ZLIB", "ZSTD", "NONE", "LZ4"])
def test_spark_reads_orc_crypto_output(spark, kms_server, tmp_path, codec):
    from watershed.orc_crypto.keys.kms_client import KmsClient

    source = _spark_plain_file(spark, tmp_path, codec)
    expected = sorted(tuple(r) for r in spark.read.orc(str(source)).collect())
    encrypted_dir = tmp_path / "enc"
    encrypted_dir.mkdir()
    target = encrypted_dir / "part-0.orc"
    with KmsClient(kms_server.provider_path) as client:
        encrypt_file(
            source,
            target,
            client,
            parse_encrypt_option("pii:ssn,email,addr;fin:salary"),
            parse_mask_option("nullify:ssn,email"),
        )
        assert read_table(target, client).equals(orc.ORCFile(str(source)).read())
    got = sorted(tuple(r) for r in spark.read.orc(str(encrypted_dir)).collect())
    assert got == expected
    # A user without decrypt rights: the KMS answers 403 and Spark falls back to the masked copy.
    kms_server.deny_decrypt("pii")
    kms_server.deny_decrypt("fin")
    try:
        masked = spark.read.orc(str(encrypted_dir)).orderBy("id").collect()
    finally:
        kms_server.reset_acl()
    assert [r.id for r in masked] == list(range(300))
    assert all(r.ssn is None and r.email is None and r.salary is None and r.addr is None for r in masked)
