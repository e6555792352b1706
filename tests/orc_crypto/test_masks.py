"""sha256 and redact masks in the rewriter: readers without keys see exactly ORC Java's masked values."""

from __future__ import annotations

import hashlib
import re

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from watershed.orc_crypto.decrypt import read_table
from watershed.orc_crypto.encrypt import encrypt_file, parse_encrypt_option, parse_mask_option
from watershed.orc_crypto.errors import UnsupportedOrcError

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


def default_redact(text: str) -> str:
    """ORC Java's default redact on these test strings: upper -> X, lower -> x, digits -> 9,
    punctuation -> '.', spaces kept."""
    text = re.sub(r"[A-ZÀ-ÖØ-Þ]", "X", text)
    text = re.sub(r"[a-zß-öø-ÿ]", "x", text)
    return re.sub(r"['-]", ".", re.sub(r"\d", "9", text))


def masked(row: dict) -> dict:
    email, name = row["email"], row["name"]
    return {
        "id": row["id"],
        "ssn": None,
        "email": None if email is None else hashlib.sha256(email.encode()).hexdigest().upper(),
        "salary": int(re.sub(r"\d", "9", str(row["salary"]))),
        "name": None if name is None else default_redact(name),
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
    from watershed.orc_crypto.keys.memory import InMemoryKeyProvider

    source, target = tmp_path / "plain.orc", tmp_path / "enc.orc"
    write_plain(source, codec)
    assert orc.ORCFile(str(source)).nstripes > 1
    provider = InMemoryKeyProvider({"pii": b"p" * 32, "fin": b"f" * 16}, bit_length=256)
    encrypt_file(source, target, provider, parse_encrypt_option(ENCRYPT), parse_mask_option(MASKS))
    without_keys = orc.ORCFile(str(target)).read().to_pylist()
    assert without_keys == [masked(r) for r in plain_rows()]
    assert read_table(target, provider).to_pylist() == plain_rows()


def test_spark_sees_originals_with_the_kms_and_masked_values_without(spark, kms_server, tmp_path):
    from watershed.orc_crypto.keys.kms_client import KmsClient

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


NESTED_ROWS = 3000


def nested_rows() -> list[dict]:
    return [
        {
            "id": i,
            "addr": None
            if i % 6 == 1
            else {"street": None if i % 5 == 0 else f"{i} Elm St", "zip": 10000 + i},
            "home": None if i % 8 == 3 else {"street": f"{i} Oak Ave", "zip": 20000 + i},
            "blob": None if i % 4 == 0 else f"blob-{i}".encode(),
            "count": i,
            "names": None if i % 7 == 2 else [f"Ann-{i}", None, "Bo b"][: i % 4],
        }
        for i in range(NESTED_ROWS)
    ]


NESTED_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("addr", pa.struct([("street", pa.string()), ("zip", pa.int32())])),
        ("home", pa.struct([("street", pa.string()), ("zip", pa.int32())])),
        ("blob", pa.binary()),
        ("count", pa.int64()),
        ("names", pa.list_(pa.string())),
    ]
)
NESTED_ENCRYPT = "pii:addr,home.street,blob,count,names"
NESTED_MASKS = "sha256:addr,home.street,blob,count;redact:names"


def nested_masked(row: dict) -> dict:
    """By the masks' definitions: what ORC Java 2.3 itself fails to write (see test_masks_java.py)."""

    def sha(value: str | None) -> str | None:
        return None if value is None else hashlib.sha256(value.encode()).hexdigest().upper()

    addr, home = row["addr"], row["home"]
    return {
        "id": row["id"],
        # sha256 on a struct with null rows: strings hashed, the int nullified, null rows stay null
        "addr": None if addr is None else {"street": sha(addr["street"]), "zip": None},
        # an encrypted sub-column: only it is masked, its struct and siblings stay
        "home": None if home is None else {"street": sha(home["street"]), "zip": home["zip"]},
        # binary: the digest of the value (ORC Java hashes its whole buffer, a bug)
        "blob": None if row["blob"] is None else hashlib.sha256(row["blob"]).digest(),
        "count": None,  # sha256 nullifies numbers
        "names": None
        if row["names"] is None
        else [None if n is None else default_redact(n) for n in row["names"]],
    }


def write_nested(path) -> None:
    orc.write_table(
        pa.Table.from_pylist(nested_rows(), schema=NESTED_SCHEMA),
        str(path),
        compression="uncompressed",  # the C++ writer cuts small stripes only when uncompressed
        stripe_size=8 * 1024,
        row_index_stride=500,
        batch_size=256,
    )


def test_masks_on_nested_columns_binary_and_numbers(tmp_path):
    from watershed.orc_crypto.keys.memory import InMemoryKeyProvider

    source, target = tmp_path / "plain.orc", tmp_path / "enc.orc"
    write_nested(source)
    assert orc.ORCFile(str(source)).nstripes > 1
    provider = InMemoryKeyProvider({"pii": b"p" * 32})
    encrypt_file(
        source, target, provider, parse_encrypt_option(NESTED_ENCRYPT), parse_mask_option(NESTED_MASKS)
    )
    assert orc.ORCFile(str(target)).read().to_pylist() == [nested_masked(r) for r in nested_rows()]
    assert read_table(target, provider).to_pylist() == nested_rows()


def test_spark_reads_nested_masked_copies(spark, kms_server, tmp_path):
    from watershed.orc_crypto.keys.kms_client import KmsClient

    source = tmp_path / "plain.orc"
    write_nested(source)
    encrypted = tmp_path / "table"
    encrypted.mkdir()
    with KmsClient(kms_server.provider_path) as client:
        encrypt_file(
            source,
            encrypted / "part-0.orc",
            client,
            parse_encrypt_option(NESTED_ENCRYPT),
            parse_mask_option(NESTED_MASKS),
        )

    def spark_rows(where: str = "true"):
        rows = spark.read.orc(str(encrypted)).where(where).collect()
        return sorted((r.asDict(recursive=True) for r in rows), key=lambda r: r["id"])

    assert spark_rows() == nested_rows()
    kms_server.deny_decrypt("pii")
    try:
        assert spark_rows() == [nested_masked(r) for r in nested_rows()]
        # Row-group skipping on an unencrypted column makes the reader seek inside the masked
        # copies' streams with their row index positions.
        assert spark_rows("id = 2345") == [nested_masked(nested_rows()[2345])]
    finally:
        kms_server.reset_acl()


def test_bad_masks_and_columns_are_refused(tmp_path):
    from watershed.orc_crypto.keys.memory import InMemoryKeyProvider

    source = tmp_path / "plain.orc"
    write_nested(source)
    provider = InMemoryKeyProvider({"pii": b"p" * 32})
    for encrypt, masks, message in [
        ("pii:blob", "hash:blob", "unknown mask 'hash'"),
        ("pii:count", "redact,`Xx9`,`year`:count", "redact"),
        ("pii:count", "sha256,x:count", "takes no parameters"),
        ("pii:names._elem", "", "inside a list or map"),
        ("pii:nosuch", "", "does not exist"),
    ]:
        with pytest.raises(UnsupportedOrcError, match=message):
            encrypt_file(
                source,
                tmp_path / "out.orc",
                provider,
                parse_encrypt_option(encrypt),
                parse_mask_option(masks),
            )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.orc"]
