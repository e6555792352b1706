"""Acceptance: Spark (ORC Java) encrypts through the embedded KMS over HTTP and reads back."""

from __future__ import annotations

import pyarrow.orc as po

from tests.orc_crypto.conftest import ROWS_PER_STRIPE, masked_row


def _spark_rows(spark, path) -> list[dict]:
    # Sorting in Python keeps it to one scan (a Spark orderBy samples the file first).
    rows = spark.read.orc(str(path)).collect()
    return sorted((r.asDict(recursive=True) for r in rows), key=lambda r: r["id"])


def test_generated_ddl_names_both_keys_and_all_masks(spark_encrypted_orc):
    assert spark_encrypted_orc.orc_encrypt == "fin:salary;pii:ssn,email,address"
    assert spark_encrypted_orc.orc_mask == "nullify:ssn,address;redact:salary;sha256:email"
    assert 'orc.encrypt "fin:salary;pii:ssn,email,address"' in spark_encrypted_orc.ddl


def test_spark_writes_several_encrypted_stripes(spark_encrypted_orc):
    assert len(spark_encrypted_orc.files) == 1
    orc = po.ORCFile(str(spark_encrypted_orc.files[0]))
    assert orc.nrows == len(spark_encrypted_orc.rows)
    assert orc.nstripes == len(spark_encrypted_orc.rows) // ROWS_PER_STRIPE


def test_spark_reads_plaintext_with_the_kms(spark, spark_encrypted_orc):
    assert _spark_rows(spark, spark_encrypted_orc.directory) == spark_encrypted_orc.rows


def test_reader_without_keys_sees_masked_values(spark_encrypted_orc):
    table = po.ORCFile(str(spark_encrypted_orc.files[0])).read()
    got = sorted(table.to_pylist(), key=lambda r: r["id"])
    assert got == [masked_row(r) for r in spark_encrypted_orc.rows]


def test_kms_user_without_acl_gets_403_and_spark_falls_back_to_masked(spark, kms_server, spark_encrypted_orc):
    kms_server.deny_decrypt("pii")
    kms_server.deny_decrypt("fin")
    kms_server.clear_requests()
    try:
        got = _spark_rows(spark, spark_encrypted_orc.directory)
    finally:
        kms_server.reset_acl()
    assert got == [masked_row(r) for r in spark_encrypted_orc.rows]
    decrypts = [r for r in kms_server.requests() if r.method == "POST" and r.path.endswith("/_eek")]
    # ORC gives up on a key after its first failure: one denied call per key name and file.
    assert sorted((r.path, r.status) for r in decrypts) == [
        ("/kms/v1/keyversion/fin@0/_eek", 403),
        ("/kms/v1/keyversion/pii@0/_eek", 403),
    ]
    denied = [e for e in kms_server.audit_events() if e.outcome == "DENIED"]
    assert {(e.user, e.op, e.key) for e in denied} == {
        (kms_server.user, "decrypt_eek", "pii"),
        (kms_server.user, "decrypt_eek", "fin"),
    }


def test_partial_acl_decrypts_only_the_allowed_key(spark, kms_server, spark_encrypted_orc):
    kms_server.deny_decrypt("fin")
    try:
        got = _spark_rows(spark, spark_encrypted_orc.directory)
    finally:
        kms_server.reset_acl()
    for row, plain in zip(got, spark_encrypted_orc.rows, strict=True):
        assert row == {**plain, "salary": masked_row(plain)["salary"]}


def test_kms_traffic_per_written_file(kms_server, spark_encrypted_orc):
    """Doc §9.3: (2 OPTIONS on first contact), 1 GET _metadata per key name, 1 POST decrypt per variant."""
    requests = spark_encrypted_orc.kms_requests
    options = [r for r in requests if r.method == "OPTIONS"]
    others = [r for r in requests if r.method != "OPTIONS"]
    assert len(options) in (0, 2)
    if options:
        assert options[0].query == "" and options[1].query == f"user.name={kms_server.user}"
        assert requests[:2] == options
    metadata = sorted(r.path for r in others if r.method == "GET")
    assert metadata == ["/kms/v1/key/fin/_metadata", "/kms/v1/key/pii/_metadata"]
    decrypts = sorted(r.path for r in others if r.method == "POST")
    # variants: fin:salary, pii:ssn, pii:email, pii:address
    assert decrypts == ["/kms/v1/keyversion/fin@0/_eek"] + ["/kms/v1/keyversion/pii@0/_eek"] * 3
    assert all(r.status == 200 and r.user == kms_server.user for r in others)
    assert all(r.query == "eek_op=decrypt" for r in others if r.method == "POST")


def test_orc_crypto_decrypts_what_spark_encrypted(spark, kms_server, spark_encrypted_orc, tmp_path):
    """Two keys, nullify + sha256 + redact, an encrypted struct, several stripes: every value comes back."""
    from watershed.orc_crypto.decrypt import decrypt_file, read_table
    from watershed.orc_crypto.keys.kms_client import KmsClient

    with KmsClient(kms_server.provider_path) as client:
        for i, source in enumerate(spark_encrypted_orc.files):
            rows = sorted(read_table(source, client).to_pylist(), key=lambda r: r["id"])
            assert rows == spark_encrypted_orc.rows
            target = tmp_path / f"plain-{i}.orc"
            decrypt_file(source, target, client)
            # the decrypted file is a plain ORC file any reader (here Spark, without keys) reads
            assert _spark_rows(spark, target) == spark_encrypted_orc.rows
