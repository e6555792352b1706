"""The unencrypted copies of encrypted columns under the sha256 and redact masks.

What a reader without the key sees must be what ORC Java's masks produce:

- sha256: a string becomes the uppercase hex SHA-256 of its UTF-8 bytes;
- redact (default parameters): upper-case letters become `X`, lower-case
  letters `x`, decimal digits `9`, everything else stays; an integer keeps its
  sign and has each digit replaced by 9.

The masked values are written, one stripe at a time, by pyarrow's ORC writer
(the C++ ORC library) with the source's codec, compression block size and row
index stride; their streams, encodings and statistics then take the place of
the column's in the rewritten stripe. That keeps every stream encoding, row
index and statistic of the masked copy the ORC library's own.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc

from watershed.orc_crypto.codec import compression
from watershed.orc_crypto.codec.stripes import INDEX_KINDS, read_stripe_footer, stream_places
from watershed.orc_crypto.codec.tail import OrcTail, read_tail
from watershed.orc_crypto.errors import UnsupportedOrcError
from watershed.orc_crypto.proto import orc_proto_pb2 as pb

VALUE_MASKS = {"sha256", "redact"}
_STRING = 7
_STRING_KINDS = {_STRING, 16, 17}  # STRING, VARCHAR, CHAR
_INTEGER_KINDS = {1, 2, 3, 4}  # BYTE, SHORT, INT, LONG
_PYARROW_CODECS = {
    compression.NONE: "uncompressed",
    compression.ZLIB: "zlib",
    compression.SNAPPY: "snappy",
    compression.LZ4: "lz4",
    compression.ZSTD: "zstd",
}


def check_mask(path: str, tail: OrcTail, column: int, name: str, mask: str) -> None:
    """Refuse what this module cannot mask exactly as ORC Java would."""
    kind, *params = mask.split(",")
    if kind not in VALUE_MASKS:
        return
    if params:
        raise UnsupportedOrcError(path, f"mask {mask!r} on {name!r}: mask parameters are not supported")
    column_type = tail.footer.types[column].kind
    # ORC Java truncates the hash to a varchar/char's length; only unbounded strings are done here.
    if kind == "sha256" and column_type != _STRING:
        raise UnsupportedOrcError(path, f"mask sha256 on {name!r}: only string columns are supported")
    if kind == "redact" and column_type not in _STRING_KINDS | _INTEGER_KINDS:
        raise UnsupportedOrcError(
            path, f"mask redact on {name!r}: only string and integer columns are supported"
        )
    if tail.footer.types[0].fieldNames and column not in tail.footer.types[0].subtypes:
        raise UnsupportedOrcError(path, f"mask {kind} on {name!r}: only top-level columns are supported")


def masked_values(values: pa.Array, mask: str) -> pa.Array:
    kind = mask.split(",", 1)[0]
    if kind == "sha256":
        return pa.array(
            [
                None if v is None else hashlib.sha256(v.encode()).hexdigest().upper()
                for v in values.to_pylist()
            ],
            type=values.type,
        )
    if pa.types.is_integer(values.type):
        return pc.cast(pc.replace_substring_regex(pc.cast(values, pa.string()), r"\d", "9"), values.type)
    text = pc.replace_substring_regex(values, r"\p{Lu}", "X")
    text = pc.replace_substring_regex(text, r"\p{Ll}", "x")
    return pc.replace_substring_regex(text, r"\p{Nd}", "9")


@dataclass
class MaskedStripe:
    #: (kind, bytes) of the column's streams, index streams first
    streams: list[tuple[int, bytes]]
    encoding: pb.ColumnEncoding
    statistics: pb.ColumnStatistics


class ColumnMasker:
    """Builds the masked copy of one top-level column, stripe by stripe, from the plaintext file."""

    def __init__(self, path: str, data, tail: OrcTail, column: int, mask: str) -> None:
        self.path, self.tail, self.mask = path, tail, mask
        root = tail.footer.types[0]
        self.name = root.fieldNames[list(root.subtypes).index(column)]
        self.reader = orc.ORCFile(pa.BufferReader(pa.py_buffer(data)))
        self.stripes: list[pa.Array] = []

    def _write(self, values: pa.Array) -> bytes:
        sink = pa.BufferOutputStream()
        try:
            orc.write_table(
                pa.table({self.name: values}),
                sink,
                compression=_PYARROW_CODECS[self.tail.codec],
                compression_block_size=self.tail.block_size,
                row_index_stride=self.tail.footer.rowIndexStride or 10000,
                stripe_size=1 << 40,  # one stripe: the caller keeps the source's stripe boundaries
            )
        except pa.ArrowException as exc:
            raise UnsupportedOrcError(
                self.path, f"cannot write the masked copy of {self.name!r}: {exc}"
            ) from exc
        return sink.getvalue().to_pybytes()

    def stripe(self, index: int) -> MaskedStripe:
        values = masked_values(self.reader.read_stripe(index, columns=[self.name]).column(0), self.mask)
        self.stripes.append(values)
        written = self._write(values)
        tail = read_tail(self.path, written)
        footer = read_stripe_footer(tail, written, 0)
        streams = [
            (place.kind, written[place.offset : place.offset + place.length])
            for place in sorted(
                stream_places(tail, 0, footer), key=lambda p: (p.kind not in INDEX_KINDS, p.kind)
            )
            if place.column == 1 and (self.tail.footer.rowIndexStride or place.kind not in INDEX_KINDS)
        ]
        return MaskedStripe(streams, footer.columns[1], tail.metadata.stripeStats[0].colStats[1])

    def file_statistics(self) -> pb.ColumnStatistics:
        """Statistics of the whole masked column (all stripes)."""
        values = pa.concat_arrays(self.stripes) if self.stripes else pa.array([], type=pa.string())
        return read_tail(self.path, self._write(values)).footer.statistics[1]
