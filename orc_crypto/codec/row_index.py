"""Row index positions: which stream each position belongs to, and moving them to compressed streams.

A RowIndexEntry's positions point, for every stream of its column in a fixed order,
at where the row group starts: in an uncompressed stream one byte offset, in a
compressed stream two numbers (where the compression chunk starts in the stream, and
the offset inside the decompressed chunk), each followed by the stream encoder's own
positions (run-length state). The order and the encoder positions per column type
are those the ORC writers record (C++ `ColumnWriter::recordPosition` and subclasses;
Java's TreeWriters agree). When a column has no nulls in a stripe its PRESENT stream
is left out and so are its three positions.

`compress_positions` turns the row index of a column written uncompressed into the
row index of the same streams compressed with `compression.compress_chunks`, so a
column can be written once without compression and compressed afterwards.
"""

from __future__ import annotations

from watershed.graph.errors import WatershedError
from watershed.orc_crypto.codec.kinds import (
    BINARY,
    BOOLEAN,
    BYTE,
    CHAR,
    DATA,
    DATE,
    DECIMAL,
    DICTIONARY,
    DICTIONARY_V2,
    DOUBLE,
    FLOAT,
    INT,
    LENGTH,
    LIST,
    LONG,
    MAP,
    PRESENT,
    SECONDARY,
    SHORT,
    STRING,
    STRUCT,
    TIMESTAMP,
    TIMESTAMP_INSTANT,
    UNION,
    VARCHAR,
)
from watershed.orc_crypto.proto import orc_proto_pb2 as pb

#: encoder positions after the stream offset: boolean RLE (byte RLE run + bit), byte or integer RLE (run)
_BOOLEAN_RLE, _RLE, _RAW = 2, 1, 0


class RowIndexLayoutError(WatershedError, ValueError):
    """The positions do not have the layout the column's type and encoding imply."""


def stream_layout(kind: int, encoding: int, has_present: bool) -> list[tuple[int, int]]:
    """(stream kind, encoder positions after the offset) per stream, in row-index order."""
    layout = [(PRESENT, _BOOLEAN_RLE)] if has_present else []
    dictionary = encoding in (DICTIONARY, DICTIONARY_V2)
    if kind == BOOLEAN:
        layout.append((DATA, _BOOLEAN_RLE))
    elif kind in (BYTE, UNION) or kind in (SHORT, INT, LONG, DATE):
        layout.append((DATA, _RLE))
    elif kind in (FLOAT, DOUBLE):
        layout.append((DATA, _RAW))
    elif kind in (STRING, VARCHAR, CHAR) and dictionary:
        layout.append((DATA, _RLE))
    elif kind in (STRING, VARCHAR, CHAR, BINARY):
        layout += [(DATA, _RAW), (LENGTH, _RLE)]
    elif kind in (TIMESTAMP, TIMESTAMP_INSTANT):
        layout += [(DATA, _RLE), (SECONDARY, _RLE)]
    elif kind == DECIMAL:
        layout += [(DATA, _RAW), (SECONDARY, _RLE)]
    elif kind in (LIST, MAP):
        layout.append((LENGTH, _RLE))
    elif kind != STRUCT:
        raise RowIndexLayoutError(f"no row index layout for type kind {kind}")
    return layout


def chunk_position(offset: int, chunk_starts: list[int], block_size: int) -> tuple[int, int]:
    """(chunk start, offset in the decompressed chunk) of byte `offset` of the uncompressed stream.

    An offset on a chunk boundary names the end of the previous chunk, as the C++
    writer records it before it compresses a full chunk; readers accept both forms.
    """
    if offset == 0:
        return 0, 0
    chunk = (offset - 1) // block_size
    if chunk >= len(chunk_starts):
        raise RowIndexLayoutError(f"position {offset} lies past the end of the stream")
    return chunk_starts[chunk], offset - chunk * block_size


def compress_positions(
    index: pb.RowIndex,
    layout: list[tuple[int, int]],
    chunk_starts: dict[int, list[int]],
    block_size: int,
) -> pb.RowIndex:
    """The row index of the same streams after `compress_chunks` (chunk starts per stream kind)."""
    result = pb.RowIndex()
    expected = sum(1 + extra for _, extra in layout)
    for number, entry in enumerate(index.entry):
        positions = list(entry.positions)
        if len(positions) != expected:
            raise RowIndexLayoutError(
                f"row group {number} has {len(positions)} positions, the layout {layout} needs {expected}"
            )
        converted: list[int] = []
        cursor = 0
        for stream_kind, extra in layout:
            converted += chunk_position(positions[cursor], chunk_starts[stream_kind], block_size)
            converted += positions[cursor + 1 : cursor + 1 + extra]
            cursor += 1 + extra
        new_entry = result.entry.add(positions=converted)
        if entry.HasField("statistics"):
            new_entry.statistics.CopyFrom(entry.statistics)
    return result
