"""Compression chunks round trip for every supported codec, and pyarrow-written tails parse."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from watershed.orc_crypto.codec import compression
from watershed.orc_crypto.codec.stripes import read_stripe_footer, stream_places
from watershed.orc_crypto.codec.tail import read_tail


@pytest.mark.parametrize("codec", sorted(compression.SUPPORTED))
def test_chunk_round_trip(codec):
    payload = os.urandom(1000) + b"a" * 5000
    packed = compression.compress(codec, payload, 1024)
    assert compression.decompress(codec, packed, 1024) == payload


@pytest.mark.parametrize("codec", ["uncompressed", "zlib", "snappy", "zstd", "lz4"])
def test_pyarrow_file_layout(tmp_path, codec):
    path = tmp_path / f"{codec}.orc"
    table = pa.table({"a": list(range(3000)), "s": [f"v{i}" for i in range(3000)]})
    orc.write_table(table, str(path), compression=codec, stripe_size=4096)
    tail = read_tail(path)
    assert tail.footer.numberOfRows == 3000
    data = path.read_bytes()
    for index in range(len(tail.footer.stripes)):
        places = stream_places(tail, index, read_stripe_footer(tail, data, index))
        assert {p.column for p in places} == {0, 1, 2}
