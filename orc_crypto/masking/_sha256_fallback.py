"""The SHA-256 mask loop in Python, for installs without the C extension (no compiler).

Same contract and bytes as `_sha256.digest_values` (see _sha256.c); several times slower,
which only matters for the sha256 mask of large files.
"""

from __future__ import annotations

import hashlib


def digest_values(
    offsets,
    offset_width: int,
    first: int,
    count: int,
    data,
    hexadecimal: bool,
    width: int,
    zero_last_pad: bool,
    output,
) -> None:
    if offset_width not in (4, 8):
        raise ValueError("offset_width must be 4 or 8")
    bounds = memoryview(offsets).cast("B")
    if first < 0 or count < 0 or width < 0 or (first + count + 1) * offset_width > len(bounds):
        raise ValueError("value range outside the offsets buffer")
    target = memoryview(output).cast("B")
    if len(target) < count * width:
        raise ValueError("output buffer too small")
    values = memoryview(data).cast("B") if len(data) else memoryview(b"")
    positions = bounds[first * offset_width : (first + count + 1) * offset_width].cast(
        "i" if offset_width == 4 else "q"
    )
    digest_length = 64 if hexadecimal else 32
    copied = min(width, digest_length)
    pad = b" " * (width - copied)
    if pad and zero_last_pad:
        pad = pad[:-1] + b"\0"
    for index in range(count):
        start, end = positions[index], positions[index + 1]
        if start < 0 or end < start or end > len(values):
            raise ValueError("array offsets point outside the data buffer")
        digest = hashlib.sha256(values[start:end])
        field = digest.hexdigest().upper().encode() if hexadecimal else digest.digest()
        target[index * width : (index + 1) * width] = field[:copied] + pad
