"""Read back a rewritten ORC file before it replaces its target.

The rewriter copies most streams byte for byte without decoding them, so a damaged input
stream would pass straight into the output. Two levels of checking, run on the temp file:

- fast (always): the tail parses, the stripes and row counts are the ones written, every
  stream lies inside its stripe and decompresses (encrypted streams after decryption with
  the local key they were written with). This catches damage in compressed streams at the
  cost of one decompression pass.
- full: also decodes every stripe through the ORC library (pyarrow), and, for `encrypt`,
  the input's encrypted columns that the output holds only as ciphertext. This catches
  damage in uncompressed files' data streams (bad run lengths, lengths past the data),
  which no decompression can see.

The default, auto, is full for an uncompressed file (where decompression checks nothing) and
fast for a compressed one: decoding costs more than the whole rewrite (on the benchmark's
snappy file the rewriter's throughput would drop by more than half).

A failure is an `OrcVerifyError` naming the target, the stripe, and the column and stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from watershed.orc_crypto.ciphers import aes_ctr, stream_iv
from watershed.orc_crypto.codec import compression, kinds
from watershed.orc_crypto.codec.stripes import read_stripe_footer, stream_places
from watershed.orc_crypto.codec.tail import read_tail
from watershed.orc_crypto.errors import OrcCryptoError, OrcVerifyError
from watershed.orc_crypto.files import mapped_input

VERIFY_LEVELS = ("auto", "fast", "full")

_STREAM_NAMES = {
    kinds.PRESENT: "PRESENT",
    kinds.DATA: "DATA",
    kinds.LENGTH: "LENGTH",
    kinds.DICTIONARY_DATA: "DICTIONARY_DATA",
    kinds.DICTIONARY_COUNT: "DICTIONARY_COUNT",
    kinds.SECONDARY: "SECONDARY",
    kinds.ROW_INDEX: "ROW_INDEX",
    kinds.BLOOM_FILTER: "BLOOM_FILTER",
    kinds.BLOOM_FILTER_UTF8: "BLOOM_FILTER_UTF8",
}


@dataclass
class Expected:
    """What the rewriter meant to write, to check the file against."""

    #: rows of each stripe, in order
    stripe_rows: list[int]
    #: local key of each encryption variant (encrypt only), to decrypt variant streams
    local_keys: list[bytes] = field(default_factory=list)
    #: the input and its top-level columns that the output holds only encrypted (full check)
    source: str | None = None
    source_columns: list[str] = field(default_factory=list)


def verify_written(target: str | Path, temp: str | Path, expected: Expected, level: str = "auto") -> None:
    """Check the file at `temp` (about to become `target`); raise OrcVerifyError on any fault."""
    if level not in VERIFY_LEVELS:
        raise ValueError(f"unknown verification level {level!r}")
    target, temp = str(target), str(temp)

    def fail(where: str, cause: str) -> OrcVerifyError:
        hint = f" (is the input {expected.source} damaged?)" if expected.source else ""
        return OrcVerifyError(target, f"verification failed, target left untouched: {where}: {cause}{hint}")

    with mapped_input(temp, OrcVerifyError) as data:
        try:
            tail = read_tail(temp, data)
        except OrcCryptoError as exc:
            raise fail("file tail", exc.cause) from exc
        stripes = tail.footer.stripes
        rows = [stripe.numberOfRows for stripe in stripes]
        if rows != expected.stripe_rows:
            raise fail("row counts", f"stripes hold {rows} rows, expected {expected.stripe_rows}")
        if tail.footer.numberOfRows != sum(rows):
            raise fail("row counts", f"footer says {tail.footer.numberOfRows} rows, stripes hold {sum(rows)}")
        for s in range(len(stripes)):
            _check_stripe_streams(tail, data, s, expected, fail)
        if level == "auto":
            level = "full" if tail.codec == compression.NONE else "fast"
    if level == "full":
        _decode(temp, expected, fail)


def _check_stripe_streams(tail, data, s: int, expected: Expected, fail) -> None:
    try:
        footer = read_stripe_footer(tail, data, s)
        places = stream_places(tail, s, footer)
    except OrcCryptoError as exc:
        raise fail(f"stripe {s}", exc.cause) from exc
    end = tail.stripe_statistics_offset
    view = memoryview(data)
    stripe_id = s + 1
    for place in places:
        where = f"stripe {s}, column {place.column} {_STREAM_NAMES.get(place.kind, place.kind)} stream"
        if place.offset + place.length > end:
            raise fail(where, "runs past the stripes")
        raw = view[place.offset : place.offset + place.length]
        if place.variant is not None:
            if place.variant >= len(expected.local_keys):
                raise fail(where, f"encryption variant {place.variant} was not written")
            raw = aes_ctr(
                expected.local_keys[place.variant], stream_iv(place.column, place.kind, stripe_id), raw
            )
        if tail.codec == compression.NONE:
            continue
        try:
            _check_chunks(tail.codec, raw, tail.block_size)
        except compression.ChunkError as exc:
            raise fail(where, str(exc)) from exc


def _check_chunks(codec: int, data, block_size: int) -> None:
    """Every chunk of a compressed stream decompresses (its output is dropped, not kept)."""
    position, end = 0, len(data)
    while position < end:
        if position + 3 > end:
            raise compression.ChunkError(f"chunk header cut off at offset {position}")
        header = data[position] | (data[position + 1] << 8) | (data[position + 2] << 16)
        length, original = header >> 1, header & 1
        position += 3
        if position + length > end:
            raise compression.ChunkError(
                f"chunk of {length} bytes at offset {position} runs past the stream end"
            )
        if not original:
            plain = compression.decompress_chunk(codec, bytes(data[position : position + length]), block_size)
            if len(plain) > block_size:
                raise compression.ChunkError(
                    f"chunk at offset {position} inflates to {len(plain)} bytes, beyond the block size {block_size}"
                )
        position += length


def _decode(temp: str, expected: Expected, fail) -> None:
    """Decode every stripe through pyarrow (and the input's encrypted columns, which the output
    holds only encrypted)."""
    import pyarrow.orc as orc

    _decode_stripes(orc, temp, None, expected.stripe_rows, fail, "")
    if expected.source and expected.source_columns:
        _decode_stripes(
            orc, expected.source, expected.source_columns, expected.stripe_rows, fail, " of the input"
        )


def _decode_stripes(orc, path: str, columns: Sequence[str] | None, stripe_rows, fail, label: str) -> None:
    try:
        reader = orc.ORCFile(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid/OSError for bad files
        raise fail(f"decoding{label}", str(exc)) from exc
    for s, rows in enumerate(stripe_rows):
        try:
            batch = reader.read_stripe(s, columns=list(columns) if columns else None)
        except Exception as exc:
            name, cause = _failing_column(reader, s, columns or reader.schema.names, exc)
            raise fail(f"decoding{label} stripe {s}, column {name}", cause) from exc
        if batch.num_rows != rows:
            raise fail(f"decoding{label} stripe {s}", f"{batch.num_rows} rows decoded, expected {rows}")


def _failing_column(reader, s: int, names: Sequence[str], error: Exception) -> tuple[str, str]:
    """The first top-level column of stripe `s` that does not decode, with pyarrow's error (only
    on a failure: each column is decoded alone to find it)."""
    for name in names:
        try:
            reader.read_stripe(s, columns=[name])
        except Exception as exc:
            return name, _first_line(exc)
    return ", ".join(names), _first_line(error)


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
