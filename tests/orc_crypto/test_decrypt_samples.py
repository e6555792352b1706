"""Decrypting apache/orc's encrypted sample files (ORC 1.6 writer) with the sample keystore."""

from __future__ import annotations

from pathlib import Path

import pyarrow.orc as orc
import pytest

from watershed.orc_crypto.ciphers import aes_ctr, decrypt_range, stream_iv
from watershed.orc_crypto.codec.tail import read_tail
from watershed.orc_crypto.decrypt import decrypt_file, read_table
from watershed.orc_crypto.errors import OrcCryptoError, OrcFormatError, OrcKeyError
from watershed.orc_crypto.keys.jceks import JceksKeystore
from watershed.orc_crypto.keys.memory import InMemoryKeyProvider

DATA = Path(__file__).parent / "data"
EMAIL_SHA = "841626795E7D351555B835A002E3BF10669DE9B81C95A3D59E10865AC37EA7C3"


@pytest.fixture(scope="module")
def provider() -> InMemoryKeyProvider:
    master = JceksKeystore(DATA / "kms.keystore", password="ORC_KEY").get("pii").material(0)
    return InMemoryKeyProvider({"pii": master})


def test_local_keys_match_doc_vectors(provider):
    tail = read_tail(DATA / "sample1.orc")
    variants = tail.footer.encryption.variants
    keys = [provider.decrypt_local_key("pii", 0, v.encryptedKey).hex() for v in variants]
    assert keys == [
        "59e63216ff2576c8c8c95504f46e8eab9819fe468df62c6e6a32b3f674b9c2ab",
        "9ea48be705f3b93cee3827bfcc421d3b17f8562650f49177d3d33cdf3d0dabd7",
    ]
    assert tail.postscript.stripeStatisticsLength == 75 == len(tail.encrypted_stripe_statistics)
    assert tail.stripe_statistics_offset == tail.footer.contentLength == 560


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("sample1", {"ssn": "123456789", "email": "dongjoon@apache.org", "name": "Dongjoon Hyun"}),
        ("sample2", {"ssn": "987654321", "email": "william@apache.org", "name": "William Hyun"}),
    ],
)
def test_decrypt_to_plaintext_orc(tmp_path, provider, name, expected):
    target = tmp_path / f"{name}.plain.orc"
    decrypt_file(DATA / f"{name}.orc", target, provider)
    table = orc.ORCFile(str(target)).read()
    assert table.to_pylist() == [expected]
    plain_tail = read_tail(target)
    assert not plain_tail.is_encrypted
    # True statistics come back from the encrypted file statistics.
    assert plain_tail.footer.statistics[2].stringStatistics.minimum == expected["email"]
    assert list(tmp_path.iterdir()) == [target]


def test_masked_view_without_keys():
    rows = read_table(DATA / "sample1.orc").to_pylist()
    assert rows == [{"ssn": None, "email": EMAIL_SHA, "name": "Dongjoon Hyun"}]


def test_wrong_and_unknown_keys(tmp_path):
    with pytest.raises(OrcKeyError, match=r"sample1\.orc.*pii"):
        read_table(DATA / "sample1.orc", InMemoryKeyProvider({"other": bytes(32)}))
    # A wrong master key gives garbage, which must surface as an OrcCryptoError, not a crash.
    with pytest.raises(OrcCryptoError, match=r"sample1\.orc"):
        decrypt_file(DATA / "sample1.orc", tmp_path / "x.orc", InMemoryKeyProvider({"pii": bytes(32)}))
    assert not (tmp_path / "x.orc").exists()


def test_truncated_and_garbage_files(tmp_path):
    data = (DATA / "sample1.orc").read_bytes()
    for cut in (0, 2, 10, 600, len(data) - 1):
        bad = tmp_path / f"cut{cut}.orc"
        bad.write_bytes(data[:cut])
        with pytest.raises(OrcFormatError, match=rf"cut{cut}\.orc"):
            read_tail(bad)
    garbage = tmp_path / "garbage.orc"
    garbage.write_bytes(data[:-20] + bytes(range(20)))
    with pytest.raises(OrcFormatError, match=r"garbage\.orc"):
        read_tail(garbage)


def test_byte_range_decryption_matches_whole_stream():
    key, iv = bytes(range(32)), stream_iv(5, 1, 3)
    plain = bytes(range(256)) * 3
    cipher = aes_ctr(key, iv, plain)
    for start, end in [(0, 10), (15, 17), (16, 48), (33, 700), (767, 768)]:
        assert decrypt_range(key, iv, cipher[start:end], start) == plain[start:end]
