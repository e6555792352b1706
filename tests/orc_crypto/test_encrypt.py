"""Encrypting pyarrow-written plaintext ORC files (every codec) with nullify masks."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from watershed.orc_crypto.codec.stripes import read_stripe_footer, stream_places
from watershed.orc_crypto.codec.tail import read_tail
from watershed.orc_crypto.decrypt import decrypt_file, read_table
from watershed.orc_crypto.encrypt import encrypt_file, parse_encrypt_option, parse_mask_option
from watershed.orc_crypto.errors import OrcKeyError, UnsupportedOrcError
from watershed.orc_crypto.keys.memory import InMemoryKeyProvider

ROWS = 20000


@pytest.fixture(scope="module")
def provider() -> InMemoryKeyProvider:
    return _provider()


def _provider() -> InMemoryKeyProvider:
    keys = InMemoryKeyProvider({"pii": b"p" * 32})
    keys.add("fin", b"f" * 16, bit_length=128)
    return keys


def _table() -> pa.Table:
    return pa.table(
        {
            "id": list(range(ROWS)),
            "ssn": [f"{i:09d}" for i in range(ROWS)],
            "salary": [float(i) if i % 7 else None for i in range(ROWS)],
            "address": [{"city": f"c{i % 13}", "zip": i} for i in range(ROWS)],
            "tags": [[i, i + 1] for i in range(ROWS)],
            "attrs": [[("k", i)] for i in range(ROWS)],
        },
        schema=pa.schema(
            [
                ("id", pa.int64()),
                ("ssn", pa.string()),
                ("salary", pa.float64()),
                ("address", pa.struct([("city", pa.string()), ("zip", pa.int32())])),
                ("tags", pa.list_(pa.int64())),
                ("attrs", pa.map_(pa.string(), pa.int64())),
            ]
        ),
    )


@pytest.mark.parametrize("codec", ["uncompressed", "zlib", "snappy", "zstd", "lz4"])
def test_encrypt_then_decrypt_every_codec(tmp_path, codec):
    provider = _provider()
    table = _table()
    source, target = tmp_path / "plain.orc", tmp_path / "enc.orc"
    orc.write_table(table, str(source), compression=codec, stripe_size=8 * 1024)
    before = source.read_bytes()
    encrypt_file(
        source,
        target,
        provider,
        parse_encrypt_option("pii:ssn,address,attrs;fin:salary,tags"),
        parse_mask_option("nullify:ssn"),
    )
    assert source.read_bytes() == before
    tail = read_tail(target)
    assert len(tail.footer.stripes) > 1
    enc = tail.footer.encryption
    assert [k.keyName for k in enc.key] == ["fin", "pii"]
    assert [(v.root, v.key) for v in enc.variants] == [(3, 0), (7, 0), (2, 1), (4, 1), (9, 1)]
    # The masked view: pyarrow without keys sees nulls in every encrypted column, the rest unchanged.
    masked = orc.ORCFile(str(target)).read()
    for name in ("ssn", "salary", "address", "tags", "attrs"):
        assert masked.column(name).null_count == ROWS, name
    assert masked.column("id").equals(table.column("id"))
    # Untouched columns' streams are byte-for-byte copies.
    plain_tail, plain_data, enc_data = read_tail(source), source.read_bytes(), target.read_bytes()
    for s in range(len(tail.footer.stripes)):
        old = {
            (p.column, p.kind): plain_data[p.offset : p.offset + p.length]
            for p in stream_places(plain_tail, s, read_stripe_footer(plain_tail, plain_data, s))
        }
        for p in stream_places(tail, s, read_stripe_footer(tail, enc_data, s)):
            if p.column == 1:
                assert enc_data[p.offset : p.offset + p.length] == old[(1, p.kind)]
    # With keys: the original values, also through decrypt-to-plaintext ORC.
    assert read_table(target, provider).equals(table)
    decrypt_file(target, tmp_path / "back.orc", provider)
    assert orc.ORCFile(str(tmp_path / "back.orc")).read().equals(table)
    assert read_tail(tmp_path / "back.orc").footer.statistics[2].stringStatistics.maximum == f"{ROWS - 1:09d}"


def test_encrypt_errors(tmp_path):
    provider = _provider()
    source = tmp_path / "plain.orc"
    orc.write_table(_table(), str(source))
    target = tmp_path / "out.orc"
    with pytest.raises(OrcKeyError, match="nokey"):
        encrypt_file(source, target, provider, {"nokey": ["ssn"]})
    with pytest.raises(UnsupportedOrcError, match="nosuch"):
        encrypt_file(source, target, provider, {"pii": ["nosuch"]})
    with pytest.raises(UnsupportedOrcError, match="nested"):
        encrypt_file(source, target, provider, {"pii": ["address"], "fin": ["address.city"]})
    assert not target.exists()
    encrypt_file(source, target, provider, {"pii": ["ssn"]})
    with pytest.raises(UnsupportedOrcError, match="already encrypted"):
        encrypt_file(target, tmp_path / "twice.orc", provider, {"pii": ["id"]})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.orc", "plain.orc"]


def test_output_does_not_depend_on_the_number_of_threads(tmp_path):
    """Stripes are rewritten in parallel threads and written in order: the bytes are the same."""
    import io
    import itertools

    from watershed.orc_crypto.encrypt import encrypt_to

    source = tmp_path / "plain.orc"
    orc.write_table(_table(), str(source), stripe_size=4 * 1024)  # uncompressed: small stripes
    data = source.read_bytes()
    assert len(read_tail(source).footer.stripes) > 3
    outputs = set()
    for workers in (1, 2, 4):
        counter = itertools.count()
        out = io.BytesIO()
        encrypt_to(
            str(source),
            data,
            out,
            _provider(),
            parse_encrypt_option("pii:ssn,address;fin:salary,tags"),
            parse_mask_option("sha256:ssn;redact:tags"),
            random_bytes=lambda n, c=counter: bytes([next(c)]) * n,  # the same local keys each time
            workers=workers,
        )
        outputs.add(out.getvalue())
    assert len(outputs) == 1
