"""The unencrypted masked copy of an encrypted column subtree, one stripe at a time.

ORC Java writes every encrypted subtree twice: the original values into the encryption
variant, and the masked values as an ordinary column that readers without the key
read. Here the masked values of a stripe are written by the ORC library itself
(pyarrow's C++ writer), so their encodings, row index and statistics are the
library's own, and the written streams replace the column's in the rewritten stripe.

The library writes them uncompressed; this module compresses each stream with the
file's codec and block size (`compression.compress_chunks`, chunks cut exactly where
ORC's writers cut them) and moves the row index positions onto the compressed streams
(`row_index.compress_positions`). That is several times faster than the library's
own compressors for some codecs (its snappy ran at a fifth of cramjam's speed here).
"""

from __future__ import annotations

import datetime
import threading
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyarrow as pa
import pyarrow.orc as orc

from watershed.orc_crypto.codec import compression, kinds, row_index
from watershed.orc_crypto.codec.stripes import read_stripe_footer, stream_places
from watershed.orc_crypto.codec.tail import (
    OrcTail,
    column_ancestors,
    column_subtree_max,
    parse_message,
    read_tail,
)
from watershed.orc_crypto.errors import OrcFormatError, UnsupportedOrcError
from watershed.orc_crypto.masking.values import MaskError, SubtreeMasker
from watershed.orc_crypto.proto import orc_proto_pb2 as pb

#: rows per batch handed to the ORC writer (its default of 1024 costs time in per-batch overhead)
WRITER_BATCH_ROWS = 64 * 1024
#: row index stride used when the source has no row index (the written index is then dropped)
DEFAULT_STRIDE = 10000
# ORC type kinds whose streams are written alike whatever the declared kind (the masked copy
# is written with pyarrow's kind, which may differ: VARCHAR/CHAR are written as STRING)
_SAME_STREAMS = {
    kinds.VARCHAR: kinds.STRING,
    kinds.CHAR: kinds.STRING,
    kinds.TIMESTAMP_INSTANT: kinds.TIMESTAMP,
}


@dataclass
class MaskedStripe:
    """One stripe of the masked copy, ready to be laid out with the other streams."""

    #: (column, kind, compressed stream as a list of byte pieces), sorted by column then kind
    streams: list[tuple[int, int, list]] = field(default_factory=list)
    encodings: dict[int, pb.ColumnEncoding] = field(default_factory=dict)
    #: stripe statistics per column, bytesOnDisk set
    statistics: dict[int, pb.ColumnStatistics] = field(default_factory=dict)


class MaskedCopy:
    """Writes the masked copy of the subtree rooted at `root`, stripe by stripe (thread-safe)."""

    def __init__(self, path: str, data, tail: OrcTail, root: int, masker: SubtreeMasker) -> None:
        self.path, self.data, self.tail, self.root, self.masker = path, data, tail, root, masker
        types = tail.footer.types
        self.last = column_subtree_max(types, root)
        self.chain = _struct_path(path, types, root)  # top-level column .. root
        self.top_name = types[0].fieldNames[list(types[0].subtypes).index(self.chain[0])]
        self._local = threading.local()
        # TIMESTAMP values are wall-clock times relative to the stripe's writer time zone; the
        # library writes masked ones relative to GMT, so redacted ones need a GMT-like writer zone.
        self._redacted_timestamps = [
            c
            for c in range(root, self.last + 1)
            if types[c].kind == kinds.TIMESTAMP and masker.effective_mask(c).name == "redact"
        ]

    def _reader(self) -> orc.ORCFile:
        # pyarrow's ORC reader keeps state per call, so each thread gets its own.
        reader = getattr(self._local, "reader", None)
        if reader is None:
            try:
                reader = orc.ORCFile(pa.BufferReader(pa.py_buffer(self.data)))
            except (pa.ArrowException, OSError, ValueError) as exc:
                raise OrcFormatError(self.path, f"the ORC library cannot read the file: {exc}") from exc
            self._local.reader = reader
        return reader

    def close(self) -> None:
        """Drop the readers (they hold views of the source's memory map)."""
        self._local = threading.local()

    def _masked_top_column(self, stripe: int, rows: int) -> pa.Array:
        """The top-level column holding the masked subtree (struct ancestors pruned to the path)."""
        if len(self.chain) == 1 and not self.masker.needs_values():
            return pa.nulls(rows, type=arrow_type(self.path, self.tail.footer.types, self.root))
        try:
            top = self._reader().read_stripe(stripe, columns=[self.top_name]).column(0)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise OrcFormatError(
                self.path, f"stripe {stripe}: cannot read column {self.top_name!r}: {exc}"
            ) from exc
        arrays = [top]
        types = self.tail.footer.types
        for parent, child in zip(self.chain, self.chain[1:], strict=False):
            arrays.append(arrays[-1].field(list(types[parent].subtypes).index(child)))
        try:
            masked = self.masker.mask(arrays[-1])
        except MaskError as exc:
            raise UnsupportedOrcError(self.path, f"column {self.root}: {exc}") from exc
        for level in range(len(arrays) - 2, -1, -1):
            parent = arrays[level]
            index = list(types[self.chain[level]].subtypes).index(self.chain[level + 1])
            masked = pa.StructArray.from_arrays(
                [masked],
                fields=[parent.type.field(index)],
                mask=parent.is_null() if parent.null_count else None,
            )
        return masked

    def stripe(self, stripe: int) -> MaskedStripe:
        tail = self.tail
        rows = tail.footer.stripes[stripe].numberOfRows
        if self._redacted_timestamps:
            zone = read_stripe_footer(tail, self.data, stripe).writerTimezone
            if not _is_utc(zone):
                raise UnsupportedOrcError(
                    self.path,
                    f"stripe {stripe}: redact on TIMESTAMP column {self._redacted_timestamps[0]} needs a file "
                    f"written in UTC, this one was written in {zone!r} (nullify or sha256 work)",
                )
        values = self._masked_top_column(stripe, rows)
        stride = tail.footer.rowIndexStride
        sink = pa.BufferOutputStream()
        try:
            orc.write_table(
                pa.table({"masked": values}),
                sink,
                compression="uncompressed",
                row_index_stride=stride or DEFAULT_STRIDE,
                stripe_size=1 << 62,  # one stripe: the source's stripe boundaries are kept
                batch_size=WRITER_BATCH_ROWS,
                dictionary_key_size_threshold=0.0,
            )
        except pa.ArrowException as exc:
            raise UnsupportedOrcError(
                self.path, f"stripe {stripe}: cannot write the masked copy of column {self.root}: {exc}"
            ) from exc
        written = sink.getvalue()
        return self._take_streams(memoryview(written), stripe, bool(stride))

    def _take_streams(self, written, stripe: int, with_index: bool) -> MaskedStripe:
        """The written file's streams of the subtree, compressed as the target file is."""
        tail = self.tail
        codec, block = tail.codec, tail.block_size
        mini = read_tail(f"{self.path} (masked copy)", written)
        if len(mini.footer.stripes) != 1:
            raise OrcFormatError(
                self.path, f"stripe {stripe}: the masked copy came out as {len(mini.footer.stripes)} stripes"
            )
        offset = len(self.chain)  # written column id of the root (column 1 is the top-level column)
        self._check_types(mini.footer.types, offset)
        footer = read_stripe_footer(mini, written, 0)
        by_column: dict[int, dict[int, memoryview]] = {}
        for place in stream_places(mini, 0, footer):
            by_column.setdefault(place.column, {})[place.kind] = written[
                place.offset : place.offset + place.length
            ]
        result = MaskedStripe()
        for column in range(self.root, self.last + 1):
            written_column = offset + column - self.root
            raw_streams = by_column.get(written_column, {})
            encoding = footer.columns[written_column]
            compressed: dict[int, compression.Compressed] = {}
            for kind, raw in raw_streams.items():
                if kind not in kinds.INDEX_KINDS:
                    compressed[kind] = compression.compress_chunks(codec, raw, block)
            data_bytes = sum(stream.length for stream in compressed.values())
            if with_index and kinds.ROW_INDEX in raw_streams:
                index = parse_message(
                    pb.RowIndex(), raw_streams[kinds.ROW_INDEX], self.path, "masked row index"
                )
                if codec != compression.NONE:
                    layout = row_index.stream_layout(
                        mini.footer.types[written_column].kind, encoding.kind, kinds.PRESENT in raw_streams
                    )
                    chunk_starts = {kind: stream.chunk_starts for kind, stream in compressed.items()}
                    try:
                        index = row_index.compress_positions(index, layout, chunk_starts, block)
                    except row_index.RowIndexLayoutError as exc:
                        raise OrcFormatError(
                            self.path, f"stripe {stripe} column {column} masked row index: {exc}"
                        ) from exc
                compressed[kinds.ROW_INDEX] = compression.compress_chunks(
                    codec, index.SerializeToString(), block
                )
            result.streams += [(column, kind, compressed[kind].parts) for kind in sorted(compressed)]
            result.encodings[column] = encoding
            statistics = pb.ColumnStatistics()
            statistics.CopyFrom(mini.metadata.stripeStats[0].colStats[written_column])
            statistics.ClearField("bytesOnDisk")
            if data_bytes:
                statistics.bytesOnDisk = data_bytes
            result.statistics[column] = statistics
        return result

    def _check_types(self, written_types, offset: int) -> None:
        source_types = self.tail.footer.types
        if len(written_types) - offset != self.last - self.root + 1:
            raise UnsupportedOrcError(self.path, f"column {self.root}: the masked copy has another shape")
        for column in range(self.root, self.last + 1):
            source_kind = source_types[column].kind
            written_kind = written_types[offset + column - self.root].kind
            if _SAME_STREAMS.get(source_kind, source_kind) != _SAME_STREAMS.get(written_kind, written_kind):
                raise UnsupportedOrcError(
                    self.path,
                    f"column {column}: type kind {source_kind} came out as {written_kind} in the masked copy",
                )


_PRIMITIVE_ARROW_TYPES = {
    kinds.BOOLEAN: pa.bool_(),
    kinds.BYTE: pa.int8(),
    kinds.SHORT: pa.int16(),
    kinds.INT: pa.int32(),
    kinds.LONG: pa.int64(),
    kinds.FLOAT: pa.float32(),
    kinds.DOUBLE: pa.float64(),
    kinds.STRING: pa.string(),
    kinds.VARCHAR: pa.string(),
    kinds.CHAR: pa.string(),
    kinds.BINARY: pa.binary(),
    kinds.TIMESTAMP: pa.timestamp("ns"),
    kinds.TIMESTAMP_INSTANT: pa.timestamp("ns", tz="UTC"),
    kinds.DATE: pa.date32(),
}


def arrow_type(path: str, types, column: int) -> pa.DataType:
    """The Arrow type pyarrow's ORC reader gives the column (so its masked copy needs no read)."""
    node = types[column]
    if node.kind in _PRIMITIVE_ARROW_TYPES:
        return _PRIMITIVE_ARROW_TYPES[node.kind]
    children = [arrow_type(path, types, child) for child in node.subtypes]
    if node.kind == kinds.DECIMAL:
        return pa.decimal128(node.precision or 38, node.scale)
    if node.kind == kinds.LIST and len(children) == 1:
        return pa.list_(children[0])
    if node.kind == kinds.MAP and len(children) == 2:
        return pa.map_(children[0], children[1])
    if node.kind == kinds.STRUCT and len(children) == len(node.fieldNames):
        return pa.struct(list(zip(node.fieldNames, children, strict=True)))
    if node.kind == kinds.UNION:
        return pa.dense_union([pa.field(str(i), child) for i, child in enumerate(children)])
    raise OrcFormatError(
        path, f"column {column} has an invalid type (kind {node.kind}, {len(children)} children)"
    )


def _is_utc(zone: str) -> bool:
    """True for a time zone name that is UTC all year (the writer zone of TIMESTAMP values)."""
    if zone in ("", "GMT", "UTC", "Z"):
        return True
    try:
        info = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return all(
        info.utcoffset(datetime.datetime(year, month, 1)) == datetime.timedelta(0)
        for year in (1970, 2000, 2015, 2030)
        for month in (1, 7)
    )


def _struct_path(path: str, types, root: int) -> list[int]:
    """Column ids from the top-level column down to `root`, through struct fields only."""
    chain = column_ancestors(types, root)[1:]
    for parent in chain[:-1]:
        if types[parent].kind != kinds.STRUCT:
            raise UnsupportedOrcError(
                path, f"column {root} lies inside a list or map: encrypt the list or map column itself"
            )
    return chain
