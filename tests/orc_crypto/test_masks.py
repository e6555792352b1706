"""sha256 and redact masks in the rewriter: readers without keys see exactly ORC Java's masked values."""

from __future__ import annotations

import hashlib
import re

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from orc_crypto.decrypt import read_table
from orc_crypto.encrypt import encrypt_file, parse_encrypt_option, parse_mask_option
from orc_crypto.errors import UnsupportedOrcError

ROWS = 20000
ENCRYPT = "pii:ssn,email,name;fin:salary"
MASKS = "nullify:ssn;sha256:email;redact:salary,name"


def plain_rows() -> list[dict]:
    return [
        {
            "id": i,
            "ssn": f"{100000000 + i * 7919:09d}",
            "email": None if i % 11 == 3 else f"User{i}@Example.com",
            "salary": (1000 + i * 37) * (-1 if i % 13 == 5 else 1),
            "name": None if i % 17 == 0 else f"Zoë O'Brien-{i}",
        }
        for i in range(ROWS)
    ]


def masked(row: dict) -> dict:
    email, name = row["email"], row["name"]
    redact = lambda text: re.sub(r"\d", "9", re.sub(r"[a-zß-öø-ÿ]", "x", re.sub(r"[A-ZÀ-ÖØ-Þ]", "X", text)))  # noqa: E731
    return {
        "id": row["id"],
        "ssn": None,
        "email": None if email is None else hashlib.sha256(email.encode()).hexdigest().upper(),
        "salary": int(re.sub(r"\d", "9", str(row["salary"]))),
        "name": None if name is None else redact(name),
    }


def write_plain(path, codec: str) -> None:
    table = pa.Table.from_pylist(
        plain_rows(),
        schema=pa.schema(
            [
                ("id", pa.int64()),
                ("ssn", pa.string()),
                ("email", pa.string()),
                ("salary", pa.int32()),
                ("name", pa.string()),
            ]
        ),
    )
    # small stripes and a short index stride: several stripes and row groups per stripe
    orc.write_table(
        table, str(path), compression=codec, stripe_size=16 * 1024, row_index_stride=500, batch_size=256
    )


@pytest.mark.parametrize("codec", ["snappy", "zlib", "zstd", "lz4", "uncompressed"])
def test_pyarrow_file_masked_for_readers_without_keys(tmp_path, codec):
    from orc_crypto.keys.memory import InMemoryKeyProvider

    source, target = tmp_path / "plain.orc", tmp_path / "enc.orc"
    write_plain(source, codec)
    assert orc.ORCFile(str(source)).nstripes > 1
    provider = InMemoryKeyProvider({"pii": b"p" * 32, "fin": b"f" * 16}, bit_length=256)
    encrypt_file(source, target, provider, parse_encrypt_option(ENCRYPT), parse_mask_option(MASKS))
    without_keys = orc.ORCFile(str(target)).read().to_pylist()
    assert without_keys == [masked(r) for r in plain_rows()]
    assert read_table(target, provider).to_pylist() == plain_rows()


@pytest.mark.spark
def test_spark_sees_originals_with_the_kms_and_masked_values_without(spark, kms_server, tmp_path):
    from orc_crypto.keys.kms_client import KmsClient

    source = tmp_path / "plain.orc"
    write_plain(source, "snappy")
    encrypted = tmp_path / "table"
    encrypted.mkdir()
    with KmsClient(kms_server.provider_path) as client:
        encrypt_file(
            source, encrypted / "part-0.orc", client, parse_encrypt_option(ENCRYPT), parse_mask_option(MASKS)
        )

    def spark_rows():
        return sorted((r.asDict() for r in spark.read.orc(str(encrypted)).collect()), key=lambda r: r["id"])

    assert spark_rows() == plain_rows()
    kms_server.deny_decrypt("pii")
    kms_server.deny_decrypt("fin")
    try:
        assert spark_rows() == [masked(r) for r in plain_rows()]
        # predicate push-down over the masked copy's row index and statistics
        hashed = masked(plain_rows()[42])["email"]
        found = spark.read.orc(str(encrypted)).where(f"email = '{hashed}'").collect()
        assert [r.id for r in found] == [42]
    finally:
        kms_server.reset_acl()


def test_masks_that_cannot_be_built_exactly_are_refused(tmp_path):
    from orc_crypto.keys.memory import InMemoryKeyProvider

    source = tmp_path / "plain.orc"
    write_plain(source, "snappy")
    provider = InMemoryKeyProvider({"pii": b"p" * 32})
    for masks, message in [
        ("sha256:id", "only string columns"),
        ("redact,Xx:name", "mask parameters are not supported"),
    ]:
        with pytest.raises(UnsupportedOrcError, match=message):
            encrypt_file(
                source,
                tmp_path / "out.orc",
                provider,
                parse_encrypt_option("pii:id,name"),
                parse_mask_option(masks),
            )
    assert not (tmp_path / "out.orc").exists()
