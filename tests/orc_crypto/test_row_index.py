"""Row index positions moved from uncompressed to compressed streams, checked against the ORC library.

The same table is written by pyarrow's ORC writer twice, uncompressed and compressed with
the same block size. Every compressed position the library recorded, read back as an
offset into the uncompressed stream, must equal the position of the uncompressed file;
and `compress_positions` must produce positions that read back the same way. This pins
the per-type layout (which numbers are stream offsets) for every type the masks write.
"""

from __future__ import annotations

import datetime
import decimal
import io

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from watershed.orc_crypto.codec import compression, kinds, row_index
from watershed.orc_crypto.codec.stripes import read_stripe_footer, stream_places
from watershed.orc_crypto.codec.tail import decompress, read_tail
from watershed.orc_crypto.proto import orc_proto_pb2 as pb

ROWS = 60000
STRIDE = 7000
BLOCK = 65536  # the ORC C++ writer needs a multiple of its 64 KiB memory block


def _table(with_nulls: bool) -> pa.Table:
    def maybe(i, value):
        return None if with_nulls and i % 5 == 2 else value

    return pa.table(
        {
            "b": pa.array([maybe(i, i % 3 == 0) for i in range(ROWS)], pa.bool_()),
            "i8": pa.array([maybe(i, i % 100 - 50) for i in range(ROWS)], pa.int8()),
            "i16": pa.array([maybe(i, i * 7 % 30000) for i in range(ROWS)], pa.int16()),
            "i32": pa.array([maybe(i, i * 7919) for i in range(ROWS)], pa.int32()),
            "i64": pa.array([maybe(i, i * 1_000_003) for i in range(ROWS)], pa.int64()),
            "f32": pa.array([maybe(i, i / 3) for i in range(ROWS)], pa.float32()),
            "f64": pa.array([maybe(i, i / 7) for i in range(ROWS)], pa.float64()),
            "s": pa.array([maybe(i, f"value-{i * 31 % 997}-" + "x" * (i % 40)) for i in range(ROWS)]),
            "bin": pa.array([maybe(i, bytes([i % 256]) * (i % 9)) for i in range(ROWS)], pa.binary()),
            "ts": pa.array(
                [
                    maybe(
                        i,
                        datetime.datetime(2020, 1, 1) + datetime.timedelta(seconds=i * 3601, microseconds=i),
                    )
                    for i in range(ROWS)
                ],
                pa.timestamp("ns"),
            ),
            "d": pa.array(
                [maybe(i, datetime.date(2000, 1, 1) + datetime.timedelta(days=i)) for i in range(ROWS)],
                pa.date32(),
            ),
            "dec": pa.array([maybe(i, decimal.Decimal(i) / 100) for i in range(ROWS)], pa.decimal128(10, 2)),
            "dec38": pa.array(
                [maybe(i, decimal.Decimal(i) * 10**20) for i in range(ROWS)], pa.decimal128(38, 0)
            ),
            "lst": pa.array([maybe(i, list(range(i % 4))) for i in range(ROWS)], pa.list_(pa.int32())),
            "mp": pa.array(
                [maybe(i, [(f"k{i % 3}", i)]) for i in range(ROWS)], pa.map_(pa.string(), pa.int64())
            ),
            "st": pa.array(
                [maybe(i, {"x": i, "y": f"y{i % 11}"}) for i in range(ROWS)],
                pa.struct([("x", pa.int64()), ("y", pa.string())]),
            ),
        }
    )


def _write(table: pa.Table, codec: str) -> bytes:
    sink = io.BytesIO()
    orc.write_table(
        table,
        sink,
        compression=codec,
        compression_block_size=BLOCK,
        row_index_stride=STRIDE,
        stripe_size=1 << 40,
    )
    return sink.getvalue()


def _streams(data: bytes):
    tail = read_tail("t.orc", data)
    footer = read_stripe_footer(tail, data, 0)
    streams = {
        (p.column, p.kind): data[p.offset : p.offset + p.length] for p in stream_places(tail, 0, footer)
    }
    return tail, footer, streams


def _chunk_index(stream: bytes) -> dict[int, int]:
    """Chunk start offset -> chunk number, from the chunk headers of a compressed stream."""
    starts, position, number = {}, 0, 0
    while position < len(stream):
        starts[position] = number
        header = stream[position] | stream[position + 1] << 8 | stream[position + 2] << 16
        position += 3 + (header >> 1)
        number += 1
    starts[position] = number  # a position may name the end of the stream
    return starts


def _as_offsets(positions, layout, chunk_numbers) -> list[int]:
    """Compressed positions read back as uncompressed stream offsets (plus encoder positions)."""
    out, cursor = [], 0
    for kind, extra in layout:
        start, inside = positions[cursor], positions[cursor + 1]
        out.append(chunk_numbers[kind][start] * BLOCK + inside)
        out += positions[cursor + 2 : cursor + 2 + extra]
        cursor += 2 + extra
    assert cursor == len(positions), "positions left over: the layout is wrong"
    return out


@pytest.mark.parametrize("with_nulls", [False, True])
def test_compressed_positions_match_the_orc_library(with_nulls):
    table = _table(with_nulls)
    plain_tail, plain_footer, plain_streams = _streams(_write(table, "uncompressed"))
    packed_tail, _packed_footer, packed_streams = _streams(_write(table, "zstd"))
    types = plain_tail.footer.types
    checked, multi_chunk = 0, 0
    for column in range(1, len(types)):
        present = (column, kinds.PRESENT) in plain_streams
        layout = row_index.stream_layout(types[column].kind, plain_footer.columns[column].kind, present)
        plain_index = pb.RowIndex.FromString(bytes(plain_streams[(column, kinds.ROW_INDEX)]))
        packed_raw = decompress(
            "t.orc", packed_tail.codec, packed_streams[(column, kinds.ROW_INDEX)], BLOCK, "index"
        )
        packed_index = pb.RowIndex.FromString(packed_raw)
        assert len(plain_index.entry) == len(packed_index.entry) == -(-ROWS // STRIDE)
        numbers = {kind: _chunk_index(packed_streams[(column, kind)]) for kind, _ in layout}
        multi_chunk += any(len(n) > 3 for n in numbers.values())
        # what the library recorded for its compressed streams
        for plain_entry, packed_entry in zip(plain_index.entry, packed_index.entry, strict=True):
            assert _as_offsets(list(packed_entry.positions), layout, numbers) == list(plain_entry.positions)
        # what compress_positions records for our own compression of the same streams
        ours = {
            kind: compression.compress_chunks(compression.ZSTD, plain_streams[(column, kind)], BLOCK)
            for kind, _ in layout
        }
        converted = row_index.compress_positions(
            plain_index, layout, {k: c.chunk_starts for k, c in ours.items()}, BLOCK
        )
        our_numbers = {kind: _chunk_index(b"".join(bytes(p) for p in c.parts)) for kind, c in ours.items()}
        for plain_entry, entry in zip(plain_index.entry, converted.entry, strict=True):
            assert _as_offsets(list(entry.positions), layout, our_numbers) == list(plain_entry.positions)
            assert entry.statistics == plain_entry.statistics
        checked += 1
    assert checked == len(types) - 1
    assert multi_chunk >= 5, "too few streams span several chunks for the check to mean much"


def test_layout_mismatch_is_reported():
    index = pb.RowIndex()
    index.entry.add(positions=[0, 0, 0])
    with pytest.raises(row_index.RowIndexLayoutError, match="positions"):
        row_index.compress_positions(index, row_index.stream_layout(kinds.LONG, 2, False), {1: [0]}, BLOCK)


def test_boundary_positions_name_the_end_of_the_previous_chunk():
    assert row_index.chunk_position(0, [0, 100], 10) == (0, 0)
    assert row_index.chunk_position(5, [0, 100], 10) == (0, 5)
    assert row_index.chunk_position(10, [0, 100], 10) == (0, 10)
    assert row_index.chunk_position(11, [0, 100], 10) == (100, 1)
    with pytest.raises(row_index.RowIndexLayoutError):
        row_index.chunk_position(21, [0, 100], 10)
