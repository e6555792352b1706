"""Key rotation: after a key roll, rewrap moves files to the new version touching only encrypted bytes."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from watershed.orc_crypto.codec.stripes import read_stripe_footer, stream_places
from watershed.orc_crypto.codec.tail import read_tail
from watershed.orc_crypto.decrypt import read_table
from watershed.orc_crypto.encrypt import encrypt_file
from watershed.orc_crypto.errors import OrcKeyError
from watershed.orc_crypto.keys.memory import InMemoryKeyProvider
from watershed.orc_crypto.rewrap import rewrap_file

ROWS = 20_000


def _table() -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "ssn": [f"{100000000 + i * 7919 % 899999999:09d}" for i in range(ROWS)],
            "email": [None if i % 11 == 3 else f"user{i}@example.com" for i in range(ROWS)],
            "salary": pa.array([1000 + (i * 37) % 90000 for i in range(ROWS)], pa.int32()),
        }
    )


def _variant_ranges(path, variants: set[int]) -> list[tuple[int, int]]:
    """(offset, length) of every stripe stream of the given encryption variants."""
    data = path.read_bytes()
    tail = read_tail(str(path), data)
    ranges = []
    for s in range(len(tail.footer.stripes)):
        footer = read_stripe_footer(tail, data, s)
        ranges += [(p.offset, p.length) for p in stream_places(tail, s, footer) if p.variant in variants]
    return ranges


def _blank(data: bytes, ranges) -> bytes:
    out = bytearray(data)
    for offset, length in ranges:
        out[offset : offset + length] = bytes(length)
    return bytes(out)


def _assert_only_variant_bytes_changed(before: bytes, after_path, rotated: set[int]) -> None:
    """The header, every unencrypted stream and stripe footer, and the stripe layout are the same
    bytes; the rotated variants' streams lie at the same places (re-keyed, so other bytes)."""
    tail_before = read_tail("before", before)
    after = after_path.read_bytes()
    tail_after = read_tail(str(after_path), after)
    end = tail_before.stripe_statistics_offset
    assert tail_after.stripe_statistics_offset == end
    assert [(s.offset, s.indexLength, s.dataLength, s.footerLength) for s in tail_after.footer.stripes] == [
        (s.offset, s.indexLength, s.dataLength, s.footerLength) for s in tail_before.footer.stripes
    ]
    ranges = _variant_ranges(after_path, rotated)
    assert ranges
    assert _blank(before[:end], ranges) == _blank(after[:end], ranges)
    assert all(before[o : o + n] != after[o : o + n] for o, n in ranges if n >= 8)
    unrotated = set(range(len(tail_before.footer.encryption.variants))) - rotated
    for o, n in _variant_ranges(after_path, unrotated):
        assert before[o : o + n] == after[o : o + n]
    # The unencrypted Metadata is copied as it was.
    assert tail_after.metadata == tail_before.metadata


def test_rewrap_after_a_roll(tmp_path):
    provider = InMemoryKeyProvider({"pii": b"p" * 32, "fin": b"f" * 16})
    provider.add("fin", b"g" * 16, 128)  # fin@1 before the file is written: its variant stays as is
    plain = tmp_path / "plain.orc"
    table = _table()
    orc.write_table(table, plain, stripe_size=64 * 1024, compression="snappy")
    path = tmp_path / "enc.orc"
    encrypt_file(plain, path, provider, {"pii": ["ssn", "email"], "fin": ["salary"]}, {"email": "sha256"})
    assert len(read_tail(str(path)).footer.stripes) >= 3
    before = path.read_bytes()
    unchanged = rewrap_file(path, provider)
    assert not unchanged.changed and path.read_bytes() == before

    assert provider.add("pii", b"q" * 32) == 1  # the roll
    result = rewrap_file(path, provider)
    assert result.changed
    assert result.versions_before == {"fin": 1, "pii": 0}
    assert result.versions_after == {"fin": 1, "pii": 1}
    keys = {k.keyName: k.keyVersion for k in read_tail(str(path)).footer.encryption.key}
    assert keys == {"fin": 1, "pii": 1}
    # Variants by key name: fin (salary) = 0, pii (ssn, email) = 1, 2.
    _assert_only_variant_bytes_changed(before, path, {1, 2})
    assert 0 < result.bytes_rekeyed < len(before) / 2
    assert read_table(path, provider).equals(table)
    assert orc.read_table(path).equals(orc.read_table(pa.BufferReader(before)))  # the masked view

    # The old version alone no longer opens the file; idempotent: a second run changes nothing.
    old_only = InMemoryKeyProvider({"pii": b"p" * 32})
    old_only.add("fin", b"f" * 16, 128)
    old_only.add("fin", b"g" * 16, 128)
    with pytest.raises(OrcKeyError):
        read_table(path, old_only)
    stat = os.stat(path)
    again = rewrap_file(path, provider)
    assert not again.changed and os.stat(path).st_mtime_ns == stat.st_mtime_ns


def test_wrong_key_material_leaves_the_file(tmp_path):
    plain = tmp_path / "plain.orc"
    orc.write_table(_table(), plain, compression="zlib")
    path = tmp_path / "enc.orc"
    encrypt_file(plain, path, InMemoryKeyProvider({"pii": b"p" * 32}), {"pii": ["ssn"]})
    before = path.read_bytes()
    impostor = InMemoryKeyProvider({"pii": b"x" * 32})
    impostor.add("pii", b"y" * 32)
    with pytest.raises(OrcKeyError, match="does not decrypt"):
        rewrap_file(path, impostor)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_spark_file_rewrapped_reads_in_spark(spark, spark_encrypted_orc, kms_server, tmp_path):
    """A Spark-written file under a key of its own; the key rolls in the KMS; after the rewrap the
    file names the new version and Spark reads the plaintext through the KMS with it."""
    from watershed.orc_crypto.keys.kms_client import KmsClient
    from watershed.orc_crypto.kms.acl import KeyAcl

    name = "rewrapkey"
    if name not in kms_server.keystore.names():
        kms_server.keystore.create_key(name, bits=256, description="rewrap test")
    config = kms_server.server.state.acls.config.model_copy(deep=True)
    users = [kms_server.user]
    config.keys[name] = KeyAcl(metadata=users, decrypt_eek=users, generate_eek=users)
    kms_server.set_acl(config)
    try:
        rows = [(i, f"{100000000 + i:09d}", f"u{i}@x.org") for i in range(30)]
        frame = spark.createDataFrame(rows, "id bigint, ssn string, email string").coalesce(1)
        out = tmp_path / "spark"
        (
            frame.write.option("orc.encrypt", f"{name}:ssn,email")
            .option("orc.mask", "sha256:email")
            .option("orc.compress", "ZLIB")
            .orc(str(out))
        )
        (path,) = sorted(out.glob("*.orc"))
        before = path.read_bytes()
        kms_server.keystore.roll_key(name)
        version = kms_server.keystore.key_info(name).version
        with KmsClient(kms_server.provider_path) as client:
            result = rewrap_file(path, client)
            assert result.changed and result.versions_after == {name: version}
            assert read_table(path, client).to_pylist() == [
                {"id": i, "ssn": s, "email": e} for i, s, e in rows
            ]
        _assert_only_variant_bytes_changed(before, path, {0, 1})
        kms_server.clear_requests()
        got = sorted(spark.read.orc(str(out)).collect())
        assert [tuple(r) for r in got] == rows
        decrypts = {r.path for r in kms_server.requests() if r.path.endswith("/_eek")}
        assert decrypts == {f"/kms/v1/keyversion/{name}@{version}/_eek"}
    finally:
        kms_server.reset_acl()


def test_a_file_changed_during_the_rewrap_is_left_to_its_writer(tmp_path):
    """Another writer replaces the file while the rewrap works: its file stays, the rewrap fails."""
    from watershed.orc_crypto.errors import OrcOutputError

    plain = tmp_path / "plain.orc"
    orc.write_table(_table(), plain, compression="zlib")
    path = tmp_path / "enc.orc"
    provider = InMemoryKeyProvider({"pii": b"p" * 32})
    encrypt_file(plain, path, provider, {"pii": ["ssn"]})
    provider.add("pii", b"q" * 32)
    other = b"written by someone else"

    class Meddling(InMemoryKeyProvider):
        def decrypt_local_key(self, name, version, encrypted_key):
            if version == 1:  # the new local key: the rewrite is under way
                # Writers replace files (truncating a mapped file in place would be SIGBUS).
                (tmp_path / "other").write_bytes(other)
                os.replace(tmp_path / "other", path)
            return provider.decrypt_local_key(name, version, encrypted_key)

        def key_info(self, name):
            return provider.key_info(name)

    with pytest.raises(OrcOutputError, match="changed while it was being rewrapped"):
        rewrap_file(path, Meddling())
    assert path.read_bytes() == other


# In place: only the changed bytes are written, through a redo journal.

_CHILD = """
import random, sys
from watershed.orc_crypto.keys.memory import InMemoryKeyProvider
from watershed.orc_crypto.rewrap import rewrap_file
provider = InMemoryKeyProvider({"pii": b"p" * 32, "fin": b"f" * 16})
provider.add("pii", b"q" * 32)
rewrap_file(sys.argv[1], provider, random_bytes=random.Random(7).randbytes)
print("finished", flush=True)
"""


def _rolled_provider() -> InMemoryKeyProvider:
    provider = InMemoryKeyProvider({"pii": b"p" * 32, "fin": b"f" * 16})
    provider.add("pii", b"q" * 32)
    return provider


def _encrypted(tmp_path, name: str = "enc.orc"):
    plain = tmp_path / "plain.orc"
    if not plain.exists():
        orc.write_table(_table(), plain, stripe_size=64 * 1024, compression="zlib")
    path = tmp_path / name
    encrypt_file(
        plain,
        path,
        InMemoryKeyProvider({"pii": b"p" * 32, "fin": b"f" * 16}),
        {"pii": ["ssn", "email"], "fin": ["salary"]},
        {"email": "sha256"},
    )
    return path


def _reference(tmp_path, before: bytes) -> bytes:
    """The uninterrupted whole-file rewrap of the same bytes with the same fresh local keys."""
    import random

    whole = tmp_path / "whole.orc"
    whole.write_bytes(before)
    rewrap_file(whole, _rolled_provider(), in_place=False, random_bytes=random.Random(7).randbytes)
    return whole.read_bytes()


def _journals(tmp_path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".rewrap-journal"))


def test_in_place_writes_the_same_bytes_as_the_whole_file_path(tmp_path):
    import random

    path = _encrypted(tmp_path)
    before = path.read_bytes()
    inode = os.stat(path).st_ino
    reference = _reference(tmp_path, before)
    assert reference != before
    result = rewrap_file(path, _rolled_provider(), random_bytes=random.Random(7).randbytes)
    assert result.changed and result.versions_after == {"fin": 0, "pii": 1}
    assert path.read_bytes() == reference
    assert os.stat(path).st_ino == inode  # written in place, not replaced
    assert _journals(tmp_path) == []
    assert read_table(path, _rolled_provider()).equals(_table())
    _assert_only_variant_bytes_changed(before, path, {1, 2})


def _crash(path, writes: int) -> None:
    """Run a rewrap in a child that stops before its `writes`-th in-place write; SIGKILL it there."""
    import signal
    import subprocess
    import sys

    from watershed.orc_crypto.rewrap_journal import CRASH_HOOK

    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path)],
        stdout=subprocess.PIPE,
        env={**os.environ, CRASH_HOOK: str(writes)},
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "rewrap-stopped"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()


@pytest.mark.parametrize("writes", [0, 3])
def test_a_rewrap_killed_mid_write_is_finished_by_the_next(tmp_path, writes):
    path = _encrypted(tmp_path)
    before = path.read_bytes()
    reference = _reference(tmp_path, before)
    _crash(path, writes)
    assert _journals(tmp_path) == [".enc.orc.rewrap-journal"]
    torn = path.read_bytes()
    assert (torn == before) == (writes == 0)
    assert torn != reference
    # The next rewrap replays the journal; the file is then at the current versions.
    again = rewrap_file(path, _rolled_provider())
    assert not again.changed
    assert path.read_bytes() == reference
    assert _journals(tmp_path) == []
    assert read_table(path, _rolled_provider()).equals(_table())


def test_a_torn_journal_is_dropped_and_the_file_left_intact(tmp_path):
    from watershed.orc_crypto.rewrap import recover_rewrap
    from watershed.orc_crypto.rewrap_journal import journal_path

    path = _encrypted(tmp_path)
    before = path.read_bytes()
    _crash(path, 0)
    journal = journal_path(path)
    sealed = journal.read_bytes()
    journal.write_bytes(sealed[: len(sealed) // 2])  # as if the crash came while it was written
    assert recover_rewrap(path) is False
    assert path.read_bytes() == before and not journal.exists()

    # A flipped byte is caught by the checksum the same way.
    journal.write_bytes(sealed[:100] + bytes([sealed[100] ^ 1]) + sealed[101:])
    assert recover_rewrap(path) is False
    assert path.read_bytes() == before and not journal.exists()
    assert rewrap_file(path, _rolled_provider()).changed
    assert read_table(path, _rolled_provider()).equals(_table())


def test_a_journal_for_a_replaced_file_is_not_applied(tmp_path):
    from watershed.orc_crypto.rewrap import recover_rewrap

    path = _encrypted(tmp_path)
    _crash(path, 0)
    other = _encrypted(tmp_path, "other.orc")
    os.replace(other, path)  # a writer replaced the file after the crash
    replaced = path.read_bytes()
    assert recover_rewrap(path) is False
    assert path.read_bytes() == replaced and _journals(tmp_path) == []
