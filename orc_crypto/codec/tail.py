"""Reading the ORC file tail: PostScript, Footer, Metadata and the encrypted stripe statistics."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from google.protobuf.message import DecodeError

from watershed.orc_crypto.codec import compression
from watershed.orc_crypto.codec.kinds import STRUCT
from watershed.orc_crypto.errors import OrcFormatError, UnsupportedOrcError
from watershed.orc_crypto.proto import orc_proto_pb2 as pb

MAGIC = b"ORC"
MAX_POSTSCRIPT = 255


@dataclass
class OrcTail:
    path: str
    file_length: int
    postscript: pb.PostScript
    footer: pb.Footer
    metadata: pb.Metadata
    #: offset of the encrypted stripe statistics (= end of the stripes)
    stripe_statistics_offset: int
    encrypted_stripe_statistics: bytes

    @property
    def codec(self) -> int:
        return self.postscript.compression

    @property
    def block_size(self) -> int:
        return self.postscript.compressionBlockSize or 262144

    @property
    def is_encrypted(self) -> bool:
        return self.footer.HasField("encryption") and len(self.footer.encryption.variants) > 0


def parse_message(message, data: bytes, path: str, what: str):
    """`message` (a protobuf of orc_proto) read from `data`; bytes that do not parse as one are an
    OrcFormatError naming the file and `what` (`stripe 2 footer`), never a protobuf error."""
    try:
        message.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise OrcFormatError(path, f"corrupt {what}: {exc}") from exc
    return message


def decompress(tail_path: str, codec: int, data: bytes, block_size: int, what: str) -> bytes:
    try:
        return compression.decompress(codec, data, block_size)
    except compression.ChunkError as exc:
        raise OrcFormatError(tail_path, f"{what}: {exc}") from exc


def read_tail(path: str | Path, data: bytes | None = None) -> OrcTail:
    """Parse the tail of the ORC file at `path` (or of its bytes `data`)."""
    path = str(path)
    if data is None:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise OrcFormatError(path, f"cannot read: {exc.strerror or exc}") from exc
    size = len(data)
    if size < 4 or data[:3] != MAGIC:
        raise OrcFormatError(path, "not an ORC file (missing 'ORC' header)")
    ps_length = data[-1]
    if ps_length == 0 or ps_length + 1 > size - 3:
        raise OrcFormatError(path, f"invalid PostScript length {ps_length} (truncated file or garbage tail)")
    postscript = parse_message(pb.PostScript(), data[size - 1 - ps_length : size - 1], path, "PostScript")
    if postscript.magic != "ORC":
        raise OrcFormatError(path, "PostScript has no 'ORC' magic (truncated file or garbage tail)")
    if postscript.compression not in compression.SUPPORTED:
        name = compression.CODEC_NAMES.get(postscript.compression, str(postscript.compression))
        raise UnsupportedOrcError(path, f"unsupported compression {name}")
    version = list(postscript.version)
    if version and version[0] > 1:
        raise UnsupportedOrcError(path, f"unsupported ORC file version {'.'.join(map(str, version))}")
    footer_length, metadata_length = postscript.footerLength, postscript.metadataLength
    stats_length = postscript.stripeStatisticsLength
    footer_start = size - 1 - ps_length - footer_length
    metadata_start = footer_start - metadata_length
    stats_start = metadata_start - stats_length
    if footer_start < 3 or metadata_start < 3 or stats_start < 3:
        raise OrcFormatError(path, "tail lengths exceed the file size (truncated file)")
    block = postscript.compressionBlockSize or 262144
    codec = postscript.compression
    footer = parse_message(
        pb.Footer(),
        decompress(path, codec, data[footer_start : footer_start + footer_length], block, "Footer"),
        path,
        "Footer",
    )
    metadata = parse_message(
        pb.Metadata(),
        decompress(path, codec, data[metadata_start:footer_start], block, "Metadata"),
        path,
        "Metadata",
    )
    content_end = footer.contentLength if footer.HasField("contentLength") else stats_start
    if content_end > stats_start:
        raise OrcFormatError(path, f"footer content length {content_end} runs into the tail")
    for index, stripe in enumerate(footer.stripes):
        end = stripe.offset + stripe.indexLength + stripe.dataLength + stripe.footerLength
        if stripe.offset < 3 or end > stats_start:
            raise OrcFormatError(path, f"stripe {index} lies outside the file content")
    if not footer.types:
        raise OrcFormatError(path, "footer has no types")
    _check_types(path, footer.types)
    return OrcTail(
        path=path,
        file_length=size,
        postscript=postscript,
        footer=footer,
        metadata=metadata,
        stripe_statistics_offset=stats_start,
        encrypted_stripe_statistics=bytes(data[stats_start:metadata_start]),
    )


def _check_types(path: str, types) -> None:
    """Types are numbered in pre-order, so every child's id is above its parent's (which also
    rules out cycles that would send a tree walk round forever)."""
    for column, node in enumerate(types):
        for child in node.subtypes:
            if not column < child < len(types):
                raise OrcFormatError(path, f"type {column} names child {child}, outside the type tree")
        if node.kind == STRUCT and len(node.fieldNames) != len(node.subtypes):
            raise OrcFormatError(
                path, f"struct type {column} has {len(node.subtypes)} fields but {len(node.fieldNames)} names"
            )


def column_ancestors(types, column: int) -> list[int]:
    """Column ids from the root struct (0) down to `column`, both included."""
    parent = {child: node_id for node_id, node in enumerate(types) for child in node.subtypes}
    path = [column]
    while path[-1] != 0:
        path.append(parent[path[-1]])
    return path[::-1]


def column_subtree_max(types, root: int) -> int:
    """Largest column id in the subtree rooted at `root` (pre-order numbering)."""
    last = root
    stack = [root]
    while stack:
        column = stack.pop()
        last = max(last, column)
        stack.extend(types[column].subtypes)
    return last


def plaintext_tail(tail: OrcTail, metadata, footer) -> list[bytes]:
    """The bytes that end a file without stripe statistics in the postscript: `metadata` and
    `footer` compressed as `tail` compresses, its postscript with their new lengths, and the
    postscript's length byte (for a plaintext image written from an encrypted file)."""
    metadata_bytes = compression.compress(tail.codec, metadata.SerializeToString(), tail.block_size)
    footer_bytes = compression.compress(tail.codec, footer.SerializeToString(), tail.block_size)
    postscript = pb.PostScript()
    postscript.CopyFrom(tail.postscript)
    postscript.ClearField("stripeStatisticsLength")
    postscript.metadataLength = len(metadata_bytes)
    postscript.footerLength = len(footer_bytes)
    ps_bytes = postscript.SerializeToString()
    return [metadata_bytes, footer_bytes, ps_bytes, bytes([len(ps_bytes)])]
