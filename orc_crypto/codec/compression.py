"""ORC compression chunks (3-byte little-endian header: 2 * length + is_original)."""

from __future__ import annotations

import zlib
from typing import NamedTuple

import cramjam

from watershed.graph.errors import WatershedError

NONE, ZLIB, SNAPPY, LZO, LZ4, ZSTD, BROTLI = range(7)
CODEC_NAMES = {
    NONE: "NONE",
    ZLIB: "ZLIB",
    SNAPPY: "SNAPPY",
    LZO: "LZO",
    LZ4: "LZ4",
    ZSTD: "ZSTD",
    BROTLI: "BROTLI",
}
SUPPORTED = {NONE, ZLIB, SNAPPY, LZ4, ZSTD}


class ChunkError(WatershedError, ValueError):
    """Malformed compressed data; the caller adds the file name."""


def _decompress_chunk(codec: int, data: bytes, block_size: int) -> bytes:
    try:
        if codec == ZLIB:
            inflater = zlib.decompressobj(-15)
            out = inflater.decompress(data, block_size)
            if inflater.unconsumed_tail:
                raise ChunkError("zlib chunk inflates beyond the compression block size")
            return out
        if codec == SNAPPY:
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(data))
        if codec == LZ4:
            buffer = bytearray(block_size)
            written = cramjam.lz4.decompress_block_into(data, buffer)
            return bytes(buffer[:written])
    except ChunkError:
        raise
    except Exception as exc:  # the codecs raise assorted types for corrupt input
        raise ChunkError(f"corrupt {CODEC_NAMES[codec]} chunk: {exc}") from exc
    raise ChunkError(f"unsupported compression {CODEC_NAMES.get(codec, codec)}")


#: one chunk's plain bytes (the read-back check of a written file decompresses chunk by chunk)
decompress_chunk = _decompress_chunk


def decompress(codec: int, data: bytes, block_size: int) -> bytes:
    """Plain bytes of a whole compressed stream (all its chunks)."""
    if codec == NONE:
        return bytes(data)
    out = bytearray()
    position, end = 0, len(data)
    view = memoryview(data)
    while position < end:
        if position + 3 > end:
            raise ChunkError(f"chunk header cut off at offset {position}")
        header = data[position] | (data[position + 1] << 8) | (data[position + 2] << 16)
        length, original = header >> 1, header & 1
        position += 3
        if position + length > end:
            raise ChunkError(f"chunk of {length} bytes at offset {position} runs past the stream end")
        chunk = view[position : position + length]
        position += length
        if original:
            out += chunk
        else:
            out += _decompress_chunk(codec, bytes(chunk), max(block_size, 1))
    return bytes(out)


def _compress_chunk(codec: int, data):
    """The compressed chunk, as bytes or a cramjam buffer (not copied into bytes: large streams
    are written piece by piece)."""
    if codec == ZLIB:
        deflater = zlib.compressobj(6, zlib.DEFLATED, -15)
        return deflater.compress(data) + deflater.flush()
    if codec == SNAPPY:
        return cramjam.snappy.compress_raw(data)
    if codec == ZSTD:
        return cramjam.zstd.compress(data)
    if codec == LZ4:
        return cramjam.lz4.compress_block(data, store_size=False)
    raise ChunkError(f"unsupported compression {CODEC_NAMES.get(codec, codec)}")


def compress(codec: int, data: bytes, block_size: int) -> bytes:
    """Chunked compressed form of `data`; a chunk that does not shrink is stored original."""
    return b"".join(compress_chunks(codec, data, block_size).parts)


class Compressed(NamedTuple):
    """A compressed stream as pieces (written one after the other without joining them)."""

    parts: list
    length: int
    #: where each compression chunk starts in the stream (empty for codec NONE)
    chunk_starts: list[int]


def compress_chunks(codec: int, data, block_size: int) -> Compressed:
    """The chunked compressed form of `data`, and where each chunk starts in it.

    Chunk k holds bytes [k * block_size, (k + 1) * block_size) of `data`, as ORC's
    writers cut them, so a position in `data` maps to (chunk start, offset in chunk).
    """
    view = memoryview(data)
    if codec == NONE:
        return Compressed([view], len(view), [])
    parts: list = []
    starts: list[int] = []
    position = 0
    block_size = max(block_size, 1)
    for start in range(0, len(view), block_size):
        plain = view[start : start + block_size]
        packed = _compress_chunk(codec, plain)
        starts.append(position)
        if len(packed) < len(plain):
            parts += [(len(packed) << 1).to_bytes(3, "little"), packed]
            position += 3 + len(packed)
        else:
            parts += [((len(plain) << 1) | 1).to_bytes(3, "little"), plain]
            position += 3 + len(plain)
    return Compressed(parts, position, starts)
