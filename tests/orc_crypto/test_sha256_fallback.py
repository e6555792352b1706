"""The pure-Python SHA-256 mask loop writes the same bytes as the C extension (an install without a compiler).

Both are called with the buffers `sha256._digests` passes: sliced arrays, nulls,
empty values, 32- and 64-bit offsets, cut and CHAR-padded widths, raw digests.
"""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pytest

from watershed.orc_crypto.codec import kinds
from watershed.orc_crypto.masking import _sha256_fallback, sha256
from watershed.orc_crypto.proto import orc_proto_pb2 as pb

_sha256 = pytest.importorskip(
    "watershed.orc_crypto.masking._sha256", reason="the C extension is not built here: nothing to compare"
)

VALUES = ["alice@example.com", None, "", "bob", "ünïcödé ✓", "x" * 1000, None, "tail"]

ARRAYS = {
    "string": pa.array(VALUES, pa.string()),
    "large_string": pa.array(VALUES, pa.large_string()),
    "binary": pa.array([v.encode() if v is not None else None for v in VALUES], pa.binary()),
    "sliced": pa.array(VALUES, pa.string()).slice(2, 5),
    "all null": pa.array([None, None, None], pa.string()),
    "all empty": pa.array(["", "", ""], pa.string()),
}

#: (hexadecimal, width, zero_last_pad) as sha256_array asks for them: STRING, VARCHAR(10), CHAR(70), CHAR(64), BINARY
SHAPES = [(True, 64, False), (True, 10, False), (True, 70, True), (True, 64, False), (False, 32, False)]


def _run(digest_values, array: pa.Array, hexadecimal: bool, width: int, zero_last_pad: bool) -> bytes:
    offset_width = 8 if array.type in (pa.large_string(), pa.large_binary()) else 4
    _validity, offsets, data = array.buffers()
    output = bytearray(len(array) * width)
    digest_values(
        offsets,
        offset_width,
        array.offset,
        len(array),
        data or b"",
        hexadecimal,
        width,
        zero_last_pad,
        output,
    )
    return bytes(output)


@pytest.mark.parametrize("name", sorted(ARRAYS))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"hex{int(s[0])}-w{s[1]}-z{int(s[2])}")
def test_the_fallback_writes_the_c_extensions_bytes(name, shape):
    array = ARRAYS[name]
    expected = _run(_sha256.digest_values, array, *shape)
    assert _run(_sha256_fallback.digest_values, array, *shape) == expected


def test_the_bytes_are_orcs_sha256_mask():
    """Not just equal to each other: uppercase hex, cut to the width, CHAR(70) padded with a last 0x00."""
    array = pa.array(["alice", None], pa.string())
    hexed = hashlib.sha256(b"alice").hexdigest().upper().encode()
    empty = hashlib.sha256(b"").hexdigest().upper().encode()
    assert _run(_sha256_fallback.digest_values, array, True, 70, True) == (
        hexed + b" " * 5 + b"\0" + empty + b" " * 5 + b"\0"
    )
    assert _run(_sha256_fallback.digest_values, array, True, 10, False) == hexed[:10] + empty[:10]
    assert _run(_sha256_fallback.digest_values, array, False, 32, False) == (
        hashlib.sha256(b"alice").digest() + hashlib.sha256(b"").digest()
    )


@pytest.mark.parametrize(
    "bad",
    [
        {"offset_width": 3},
        {"count": 99},
        {"output": bytearray(10)},
    ],
    ids=["offset width", "range past the offsets", "output too small"],
)
def test_both_refuse_the_same_bad_calls(bad):
    array = ARRAYS["string"]
    _validity, offsets, data = array.buffers()
    call = {
        "offsets": offsets,
        "offset_width": 4,
        "first": 0,
        "count": len(array),
        "data": data,
        "hexadecimal": True,
        "width": 64,
        "zero_last_pad": False,
        "output": bytearray(len(array) * 64),
        **bad,
    }
    for digest_values in (_sha256.digest_values, _sha256_fallback.digest_values):
        with pytest.raises(ValueError):
            digest_values(*call.values())


@pytest.mark.parametrize(
    ("kind", "length"),
    [(kinds.STRING, 0), (kinds.VARCHAR, 12), (kinds.CHAR, 80), (kinds.BINARY, 0)],
)
def test_the_mask_is_the_same_array_with_either(monkeypatch, kind, length):
    column = pb.Type(kind=kind, maximumLength=length) if length else pb.Type(kind=kind)
    array = ARRAYS["binary"] if kind == kinds.BINARY else ARRAYS["string"]
    with_c = sha256.sha256_array(array, column)
    monkeypatch.setattr(sha256, "digest_values", _sha256_fallback.digest_values)
    with_fallback = sha256.sha256_array(array, column)
    assert with_fallback.equals(with_c) and with_c.null_count == 2
