"""Embedded keystore, JCEKS reader, and the local-key formula."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.orc_crypto.conftest import DATA_DIR
from tests.support.sample_keys import SAMPLE1_ENCRYPTED_KEYS, SAMPLE_KEYSTORE
from watershed.orc_crypto.keys.base import KeyProviderError, UnknownKeyError
from watershed.orc_crypto.keys.embedded import (
    EmbeddedKeystore,
    KeystoreError,
    KeystoreSettings,
    backup_keystore,
    passphrase_from_environment,
)
from watershed.orc_crypto.keys.jceks import JceksError, JceksKeystore
from watershed.orc_crypto.keys.material import aes_ctr, unwrap_local_key

FAST = 2**10  # scrypt cost for tests


@pytest.fixture
def keystore(tmp_path) -> EmbeddedKeystore:
    return EmbeddedKeystore.create(tmp_path / "ks.json", "s3cret", scrypt_n=FAST)


@pytest.fixture(scope="module")
def sample_jceks() -> JceksKeystore:
    return JceksKeystore(SAMPLE_KEYSTORE, "ORC_KEY")


def test_embedded_keystore_round_trip_and_file_mode(keystore, tmp_path):
    keystore.create_key("pii", bits=256, description="people", attributes={"owner": "sec"})
    keystore.create_key("fin", bits=128)
    path = tmp_path / "ks.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    raw = path.read_text()
    assert keystore.get("pii").versions[0].hex() not in raw  # encrypted at rest
    assert json.loads(raw)["kdf"]["name"] == "scrypt"
    reopened = EmbeddedKeystore.open(path, "s3cret")
    assert reopened.names() == ["fin", "pii"]
    assert reopened.get("pii").versions == keystore.get("pii").versions
    meta = reopened.get("pii").metadata()
    assert meta["cipher"] == "AES/CTR/NoPadding" and meta["length"] == 256 and meta["versions"] == 1
    assert meta["description"] == "people" and meta["attributes"] == {"owner": "sec"}
    assert meta["created"] > 2**31  # milliseconds, a Java Long
    assert len(reopened.get("fin").versions[0]) == 16
    # no temp file left behind; the lock file stays (removing it would race with a waiting locker)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ks.json", "ks.json.lock"]


def test_roll_adds_a_version_and_old_versions_still_decrypt(keystore):
    keystore.create_key("pii")
    encrypted = bytes(range(32))
    before = keystore.decrypt_local_key("pii", 0, encrypted)
    keystore.roll_key("pii")
    assert keystore.key_info("pii").version == 1
    assert keystore.decrypt_local_key("pii", 0, encrypted) == before
    assert keystore.decrypt_local_key("pii", 1, encrypted) != before
    with pytest.raises(KeyProviderError, match="no version 2"):
        keystore.decrypt_local_key("pii", 2, encrypted)


def test_wrong_passphrase_and_tampering_are_detected(keystore, tmp_path):
    keystore.create_key("pii")
    path = tmp_path / "ks.json"
    with pytest.raises(KeystoreError, match="wrong passphrase"):
        EmbeddedKeystore.open(path, "wrong")
    envelope = json.loads(path.read_text())
    envelope["kdf"]["n"] = FAST * 2  # the header is authenticated
    path.write_text(json.dumps(envelope))
    with pytest.raises(KeystoreError, match=str(path)):
        EmbeddedKeystore.open(path, "s3cret")
    with pytest.raises(KeystoreError, match="does not exist"):
        EmbeddedKeystore.open(tmp_path / "missing.json", "s3cret")
    with pytest.raises(KeystoreError, match="already exists"):
        EmbeddedKeystore.create(path, "s3cret")


def test_key_names_bits_and_unknown_keys_are_checked(keystore):
    for bad in ("PII", "a:b", "x@1", ""):
        with pytest.raises(KeyProviderError, match="invalid key name"):
            keystore.create_key(bad)
    with pytest.raises(KeyProviderError, match="bit length"):
        keystore.create_key("odd", bits=100)
    keystore.create_key("pii")
    with pytest.raises(KeyProviderError, match="already exists"):
        keystore.create_key("pii")
    with pytest.raises(UnknownKeyError, match="'nope'"):
        keystore.key_info("nope")


def test_passphrase_comes_from_env_or_file(tmp_path, monkeypatch):
    monkeypatch.delenv("WATERSHED_KEYSTORE_PASSPHRASE", raising=False)
    monkeypatch.delenv("WATERSHED_KEYSTORE_PASSPHRASE_FILE", raising=False)
    with pytest.raises(KeystoreError, match="WATERSHED_KEYSTORE_PASSPHRASE"):
        passphrase_from_environment()
    secret_file = tmp_path / "pass"
    secret_file.write_text("from-file\n")
    monkeypatch.setenv("WATERSHED_KEYSTORE_PASSPHRASE_FILE", str(secret_file))
    assert passphrase_from_environment() == "from-file"
    monkeypatch.setenv("WATERSHED_KEYSTORE_PASSPHRASE", "from-env")
    assert passphrase_from_environment() == "from-env"
    assert KeystoreSettings().keystore_scrypt_n >= 2**14


def test_local_key_formula_is_aes_ctr_over_the_stored_bytes():
    master, stored = bytes(range(32)), bytes(range(100, 132))
    local = unwrap_local_key(master, stored)
    # Two counter blocks: the second keystream block uses the incremented IV.
    block0 = aes_ctr(master, stored[:16], bytes(16))
    iv1 = (int.from_bytes(stored[:16], "big") + 1).to_bytes(16, "big")
    block1 = aes_ctr(master, iv1, bytes(16))
    assert local == bytes(a ^ b for a, b in zip(stored, block0 + block1, strict=True))
    assert len(unwrap_local_key(master, stored[:16])) == 16


def test_jceks_sample_keystore_metadata_and_material(sample_jceks):
    assert sample_jceks.names() == ["pii"]
    record = sample_jceks.get("pii")
    assert record.metadata() == {
        "name": "pii",
        "cipher": "AES/CTR/NoPadding",
        "length": 256,
        "description": "ORC_KEY",
        "attributes": {"key.acl.name": "pii"},
        "created": 1628446570258,
        "versions": 1,
    }
    assert len(record.versions[0]) == 32
    info = sample_jceks.key_info("pii")
    assert (info.version, info.bit_length, info.key_bytes) == (0, 256, 32)


def test_jceks_does_what_orc_asks_of_a_key_provider(sample_jceks):
    """keys/base.py KeyProvider: a key it lacks is an UnknownKeyError naming it, and a local key is
    AES-CTR under the master key version, counter from the stored bytes' first 16, over them."""
    for call in (
        lambda: sample_jceks.key_info("nope"),
        lambda: sample_jceks.decrypt_local_key("nope", 0, bytes(32)),
    ):
        with pytest.raises(UnknownKeyError, match="'nope'"):
            call()
    master = sample_jceks.get("pii").versions[0]
    stored = bytes(range(7, 39))
    keystream = aes_ctr(master, stored[:16], bytes(16)) + aes_ctr(
        master, (int.from_bytes(stored[:16], "big") + 1).to_bytes(16, "big"), bytes(16)
    )
    assert sample_jceks.decrypt_local_key("pii", 0, stored) == bytes(
        a ^ b for a, b in zip(stored, keystream, strict=True)
    )


def test_jceks_gives_the_sample1_local_keys(sample_jceks):
    for encrypted, local in SAMPLE1_ENCRYPTED_KEYS.items():
        assert sample_jceks.decrypt_local_key("pii", 0, bytes.fromhex(encrypted)).hex() == local


def test_sample1_file_holds_those_encrypted_keys():
    sample = DATA_DIR / "sample1.orc"
    if not sample.exists():
        pytest.skip("sample1.orc not (yet) in tests/orc_crypto/data")
    data = sample.read_bytes()
    for encrypted in SAMPLE1_ENCRYPTED_KEYS:
        assert bytes.fromhex(encrypted) in data


def test_jceks_and_embedded_keystore_with_same_material_agree(sample_jceks, keystore):
    keystore.create_key("pii", bits=256, material=sample_jceks.get("pii").versions[0])
    for encrypted, local in SAMPLE1_ENCRYPTED_KEYS.items():
        e = bytes.fromhex(encrypted)
        assert keystore.decrypt_local_key("pii", 0, e) == sample_jceks.decrypt_local_key("pii", 0, e)
        assert keystore.decrypt_local_key("pii", 0, e).hex() == local


def test_jceks_password_errors_name_the_file(tmp_path, monkeypatch):
    monkeypatch.delenv("HADOOP_KEYSTORE_PASSWORD", raising=False)
    with pytest.raises(JceksError, match=r"kms\.keystore.*password"):
        JceksKeystore(SAMPLE_KEYSTORE)  # default password `none` is wrong for the sample
    monkeypatch.setenv("HADOOP_KEYSTORE_PASSWORD", "ORC_KEY")
    assert JceksKeystore(SAMPLE_KEYSTORE).names() == ["pii"]
    with pytest.raises(JceksError, match="does not exist"):
        JceksKeystore(tmp_path / "none.jceks")
    garbage = tmp_path / "garbage.jceks"
    garbage.write_bytes(b"\x00" * 40)
    with pytest.raises(JceksError, match=r"garbage\.jceks"):
        JceksKeystore(garbage)
    with pytest.raises(KeyProviderError, match="read-only"):
        JceksKeystore(SAMPLE_KEYSTORE).roll_key("pii")


WRITER = """
import sys
from watershed.orc_crypto.keys.embedded import EmbeddedKeystore
store = EmbeddedKeystore.open(sys.argv[1], "s3cret")
for i in range(10_000):
    store.create_key(f"k{i}")
    print(f"k{i}", flush=True)
"""


def test_a_killed_writer_leaves_a_whole_keystore_with_every_reported_key(keystore, tmp_path):
    """SIGKILL a writer mid-stream: the file opens, every key it reported is there, the lock is free."""
    path = tmp_path / "ks.json"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    reported = [writer.stdout.readline().strip() for _ in range(8)]
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=10)
    writer.stdout.close()
    survivor = EmbeddedKeystore.open(path, "s3cret")
    assert set(reported) <= set(survivor.names())
    survivor.create_key("after")  # the dead writer's flock went with it
    assert "after" in EmbeddedKeystore.open(path, "s3cret").names()


def test_backup_and_restore_under_the_lock(keystore, tmp_path):
    keystore.create_key("pii")
    backup = tmp_path / "backup" / "ks.json"
    backup_keystore(tmp_path / "ks.json", backup)
    assert stat.S_IMODE(os.stat(backup).st_mode) == 0o600
    keystore.create_key("later")
    keystore.delete_key("pii")
    backup_keystore(backup, tmp_path / "ks.json")  # restore: the live handle reloads it
    assert keystore.names() == ["pii"]
    with pytest.raises(KeystoreError, match="missing"):
        backup_keystore(tmp_path / "missing.json", tmp_path / "x.json")
