"""ORC's sha256 mask on Arrow arrays, value for value as ORC Java's SHA256MaskFactory writes it.

- STRING: the 64 uppercase hex characters of SHA-256 over the value's UTF-8 bytes;
- VARCHAR(n): that hex cut to n characters when n < 64;
- CHAR(n): exactly n bytes: cut when n < 64; when n > 64, padded with spaces except the
  last byte, which ORC Java leaves 0x00 (its fill stops one short; kept for compatibility);
- BINARY: the 32-byte digest of the value. ORC Java hashes the whole buffer behind the
  value instead (a bug that makes its output depend on memory contents); the digest of
  the value is what that code means to write, and what this writes;
- every other primitive type becomes null (the caller handles compound types).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from watershed.orc_crypto.codec import kinds
from watershed.orc_crypto.proto import orc_proto_pb2 as pb

try:
    from watershed.orc_crypto.masking._sha256 import digest_values
except ImportError:  # installed without a C compiler: same bytes, slower (see setup.py)
    from watershed.orc_crypto.masking._sha256_fallback import digest_values

HEX_LENGTH = 64
DIGEST_LENGTH = 32
_OFFSET_WIDTHS = {pa.string(): 4, pa.binary(): 4, pa.large_string(): 8, pa.large_binary(): 8}


def sha256_array(values: pa.Array, column_type: pb.Type) -> pa.Array:
    """The masked array (same Arrow type, nulls kept) for a primitive ORC column."""
    kind = column_type.kind
    if kind == kinds.BINARY:
        return _digests(values, hexadecimal=False, width=DIGEST_LENGTH, zero_last_pad=False)
    if kind == kinds.STRING:
        return _digests(values, hexadecimal=True, width=HEX_LENGTH, zero_last_pad=False)
    if kind == kinds.VARCHAR:
        return _digests(values, True, min(column_type.maximumLength or HEX_LENGTH, HEX_LENGTH), False)
    if kind == kinds.CHAR:
        width = column_type.maximumLength or 1
        return _digests(values, True, width, zero_last_pad=width > HEX_LENGTH)
    return pa.nulls(len(values), type=values.type)


def _digests(values: pa.Array, hexadecimal: bool, width: int, zero_last_pad: bool) -> pa.Array:
    offset_width = _OFFSET_WIDTHS.get(values.type)
    if offset_width is None:
        raise TypeError(f"sha256 mask needs a string or binary array, got {values.type}")
    count = len(values)
    validity, offsets, data = values.buffers()
    output = pa.allocate_buffer(count * width)
    if count:
        digest_values(
            offsets,
            offset_width,
            values.offset,
            count,
            data or b"",
            hexadecimal,
            width,
            zero_last_pad,
            output,
        )
    index_type = np.int32 if offset_width == 4 else np.int64
    new_offsets = pa.py_buffer(np.arange(0, (count + 1) * width, width, dtype=index_type))
    if not values.null_count:
        validity = None
    elif values.offset:
        validity = values.is_valid().buffers()[1]  # a bitmap of its own, from bit 0
    return pa.Array.from_buffers(values.type, count, [validity, new_offsets, output], values.null_count)
