"""Projected, stripe-selective reading of (encrypted) ORC files.

Only the byte ranges that the chosen columns need in the chosen stripes are read: the tail,
the chosen stripes' footers and the data-area streams of the chosen columns (and of their
ancestors, whose PRESENT streams say where a parent is null). An encrypted column is read from
its encryption variant and decrypted with the local key when the provider gives it; each range
is decrypted from the AES-CTR counter block of its own offset (`ciphers.decrypt_range`), never
from the start of the file. Without a key (no provider, or the provider refuses the key, as
ORC Java does) the column's unencrypted masked copy is read instead.

Decoding reuses the ORC library: the chosen ranges are laid out as a small plaintext ORC
image (only the chosen stripes, only the chosen streams, no index area) that pyarrow reads.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

from watershed.orc_crypto.ciphers import decrypt_range, stream_iv
from watershed.orc_crypto.codec import compression
from watershed.orc_crypto.codec.kinds import INDEX_KINDS
from watershed.orc_crypto.codec.stripes import StreamPlace, read_stripe_footer, stream_places
from watershed.orc_crypto.codec.tail import (
    OrcTail,
    column_ancestors,
    column_subtree_max,
    plaintext_tail,
    read_tail,
)
from watershed.orc_crypto.errors import OrcCryptoError, OrcFormatError, OrcKeyError, UnsupportedOrcError
from watershed.orc_crypto.files import mapped_input
from watershed.orc_crypto.keys.base import (
    KeyAccessDeniedError,
    KeyProvider,
    KeyProviderError,
    UnknownKeyError,
)
from watershed.orc_crypto.proto import orc_proto_pb2 as pb

__all__ = ["ReadStats", "parse_stripes", "read_orc", "read_stream_range"]


@dataclass
class ReadStats:
    """What a read cost: bytes taken from the file and bytes run through AES."""

    bytes_read: int = 0
    bytes_decrypted: int = 0
    #: encryption variants read as their masked copy (no provider, or the key was refused)
    masked_variants: list[int] = field(default_factory=list)


@dataclass
class _FileKeys:
    """Per-stripe encrypt stripe ids and local keys (inherited from earlier stripes, doc §3.5)."""

    stripe_ids: list[int]
    #: stripe -> variant -> local key (None: read the masked copy)
    keys: list[list[bytes | None]]


def parse_stripes(text: str) -> list[int]:
    """`0,2-3` -> [0, 2, 3]; raises ValueError naming the bad part."""
    chosen: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise ValueError(f"stripe selection {text!r}: {part!r} is not N or N-M")
        first, last = int(low), int(high) if dash else int(low)
        if last < first:
            raise ValueError(f"stripe selection {text!r}: range {part!r} runs backwards")
        chosen.extend(range(first, last + 1))
    return sorted(set(chosen))


def _top_level(tail: OrcTail, columns: list[str] | None) -> list[tuple[str, int]]:
    root = tail.footer.types[0]
    fields = dict(zip(root.fieldNames, root.subtypes, strict=False))
    if columns is None:
        return list(fields.items())
    chosen = []
    for name in columns:
        if name not in fields:
            raise UnsupportedOrcError(
                tail.path, f"no top-level column {name!r} (the file has {', '.join(fields) or 'none'})"
            )
        chosen.append((name, fields[name]))
    return chosen


def _unwrap(tail: OrcTail, provider: KeyProvider, v: int, encrypted: bytes, cache: dict) -> bytes | None:
    """The local key of variant `v`, or None when the provider refuses it (access denied or unknown
    key: read masked); any other provider failure is an OrcKeyError."""
    keys = tail.footer.encryption.key
    variant = tail.footer.encryption.variants[v]
    if variant.key >= len(keys):
        raise OrcFormatError(tail.path, f"variant {v} names key index {variant.key}, which does not exist")
    key = keys[variant.key]
    name = (key.keyName, key.keyVersion)
    if name in cache and cache[name] is None:
        return None  # like ORC Java: a refused key is not asked for again
    try:
        local = provider.decrypt_local_key(key.keyName, key.keyVersion, bytes(encrypted))
    except (KeyAccessDeniedError, UnknownKeyError):
        # the KMS refused: like ORC Java, the masked copy is what this reader may see
        cache[name] = None
        return None
    except KeyProviderError as exc:
        # an unreachable KMS or a failing one is not a refusal: masked data would pass for the answer
        raise OrcKeyError(
            tail.path, f"key {key.keyName} version {key.keyVersion}: the key provider failed: {exc}"
        ) from exc
    expected = 16 if key.algorithm == 1 else 32
    if len(local) != expected:
        raise OrcKeyError(
            tail.path, f"key {key.keyName}: local key has {len(local)} bytes, expected {expected}"
        )
    cache[name] = local
    return local


def _file_keys(tail: OrcTail, provider: KeyProvider | None, wanted: set[int]) -> _FileKeys:
    """Stripe ids for every stripe, and the local keys of the `wanted` variants per stripe."""
    variants = tail.footer.encryption.variants if tail.is_encrypted else []
    stripe_ids: list[int] = []
    keys: list[list[bytes | None]] = []
    stripe_id = 0
    current: list[bytes | None] = [None] * len(variants)
    cache: dict = {}
    unwrapped: dict[tuple[int, bytes], bytes | None] = {}
    for s, stripe in enumerate(tail.footer.stripes):
        stripe_id = stripe.encryptStripeId if stripe.HasField("encryptStripeId") else stripe_id + 1
        if stripe.encryptedLocalKeys:
            if len(stripe.encryptedLocalKeys) != len(variants):
                raise OrcFormatError(tail.path, f"stripe {s} has {len(stripe.encryptedLocalKeys)} local keys")
            current = list(stripe.encryptedLocalKeys)
        elif s == 0:
            current = [variant.encryptedKey for variant in variants]
        row: list[bytes | None] = []
        for v, encrypted in enumerate(current):
            if provider is None or v not in wanted or encrypted is None:
                row.append(None)
                continue
            if (v, bytes(encrypted)) not in unwrapped:
                unwrapped[(v, bytes(encrypted))] = _unwrap(tail, provider, v, encrypted, cache)
            row.append(unwrapped[(v, bytes(encrypted))])
        stripe_ids.append(stripe_id)
        keys.append(row)
    return _FileKeys(stripe_ids, keys)


def read_orc(
    path: str | Path,
    columns: list[str] | None = None,
    stripes: list[int] | None = None,
    provider: KeyProvider | None = None,
    stats: ReadStats | None = None,
):
    """A pyarrow Table of the top-level `columns` (None: all) of the `stripes` (None: all, by
    index from 0), plaintext where `provider` gives the key and the masked copy elsewhere."""
    path = str(path)
    stats = stats if stats is not None else ReadStats()
    with mapped_input(path, OrcFormatError) as data:
        try:
            image, names = _image(path, data, columns, stripes, provider, stats)
        except OrcCryptoError:
            raise
        except (IndexError, KeyError, ValueError, OverflowError) as exc:
            raise OrcFormatError(path, f"inconsistent file metadata: {exc!r}") from exc
    import pyarrow.orc as orc

    try:
        table = orc.ORCFile(io.BytesIO(image)).read(columns=names)
    except Exception as exc:  # pyarrow raises ArrowInvalid/OSError for bad files
        raise OrcFormatError(path, f"cannot decode: {exc}") from exc
    return table.select(names)  # in the order asked for, not the file's


def _image(path, data, columns, stripes, provider, stats: ReadStats) -> tuple[bytes, list[str]]:
    tail = read_tail(path, data)
    stats.bytes_read += tail.file_length - tail.stripe_statistics_offset
    types = tail.footer.types
    count = len(tail.footer.stripes)
    chosen_stripes = list(range(count)) if stripes is None else list(stripes)
    for s in chosen_stripes:
        if not 0 <= s < count:
            raise UnsupportedOrcError(path, f"no stripe {s} (the file has stripes 0..{count - 1})")
    top = _top_level(tail, columns)
    needed: set[int] = {0}
    for _, column in top:
        needed.update(range(column, column_subtree_max(types, column) + 1))
        needed.update(column_ancestors(types, column))
    variant_of: dict[int, int] = {}
    if tail.is_encrypted:
        for v, variant in enumerate(tail.footer.encryption.variants):
            for column in range(variant.root, column_subtree_max(types, variant.root) + 1):
                variant_of[column] = v
    wanted = {variant_of[c] for c in needed if c in variant_of}
    file_keys = _file_keys(tail, provider, wanted)
    stats.masked_variants = sorted(
        v for v in wanted if any(file_keys.keys[s][v] is None for s in chosen_stripes)
    )

    out = bytearray(b"ORC")
    footer = pb.Footer()
    footer.CopyFrom(tail.footer)
    del footer.stripes[:]
    footer.ClearField("encryption")
    metadata = pb.Metadata()
    for s in chosen_stripes:
        info = tail.footer.stripes[s]
        stripe_footer = read_stripe_footer(tail, data, s)
        stats.bytes_read += info.footerLength
        keys = file_keys.keys[s]
        decrypted = {c for c, v in variant_of.items() if keys[v] is not None}
        new_footer = pb.StripeFooter()
        new_footer.CopyFrom(stripe_footer)
        del new_footer.streams[:]
        new_footer.ClearField("encryption")
        start = len(out)
        for place in stream_places(tail, s, stripe_footer):
            if place.kind in INDEX_KINDS or place.column not in needed:
                continue  # the index area only serves seeks and filters, which this read does not do
            if (place.variant is not None) != (place.column in decrypted):
                continue  # the other copy of an encrypted column
            out += _stream_bytes(tail, data, place, keys, file_keys.stripe_ids[s], stats)
            new_footer.streams.append(pb.Stream(kind=place.kind, column=place.column, length=place.length))
        for v, variant_footer in enumerate(stripe_footer.encryption):
            if keys[v] is None:
                continue
            root = tail.footer.encryption.variants[v].root
            for c, encoding in enumerate(variant_footer.encoding):
                new_footer.columns[root + c].CopyFrom(encoding)
        footer_bytes = compression.compress(tail.codec, new_footer.SerializeToString(), tail.block_size)
        footer.stripes.append(
            pb.StripeInformation(
                offset=start,
                indexLength=0,
                dataLength=len(out) - start,
                footerLength=len(footer_bytes),
                numberOfRows=info.numberOfRows,
            )
        )
        out += footer_bytes
        if s < len(tail.metadata.stripeStats):
            metadata.stripeStats.append(tail.metadata.stripeStats[s])
    footer.contentLength = len(out)
    footer.numberOfRows = sum(stripe.numberOfRows for stripe in footer.stripes)
    # Statistics of the whole file would describe rows this image does not hold.
    del footer.statistics[:]
    out += b"".join(plaintext_tail(tail, metadata, footer))
    return bytes(out), [name for name, _ in top]


def _stream_bytes(tail: OrcTail, data, place: StreamPlace, keys, stripe_id: int, stats: ReadStats) -> bytes:
    if place.offset + place.length > tail.stripe_statistics_offset:
        raise OrcFormatError(tail.path, f"column {place.column} stream runs past the stripes")
    raw = data[place.offset : place.offset + place.length]
    stats.bytes_read += place.length
    if place.variant is None:
        return raw
    stats.bytes_decrypted += place.length
    return decrypt_range(keys[place.variant], stream_iv(place.column, place.kind, stripe_id), raw, 0)


def read_stream_range(
    path: str | Path,
    stripe: int,
    column: int,
    kind: int,
    start: int,
    length: int,
    provider: KeyProvider,
    stats: ReadStats | None = None,
) -> bytes:
    """Bytes `start`..`start+length` of one encrypted stream (still compressed), decrypted from the
    counter block of `start` (doc §2: a seek adds start // 16 to the IV): what a reader positioned
    by the row index inside a stream reads, without touching the stream's earlier bytes."""
    path = str(path)
    stats = stats if stats is not None else ReadStats()
    with mapped_input(path, OrcFormatError) as data:
        tail = read_tail(path, data)
        stats.bytes_read += tail.file_length - tail.stripe_statistics_offset
        if not 0 <= stripe < len(tail.footer.stripes):
            raise UnsupportedOrcError(path, f"no stripe {stripe}")
        stripe_footer = read_stripe_footer(tail, data, stripe)
        stats.bytes_read += tail.footer.stripes[stripe].footerLength
        for place in stream_places(tail, stripe, stripe_footer):
            if place.variant is not None and (place.column, place.kind) == (column, kind):
                break
        else:
            raise UnsupportedOrcError(
                path, f"stripe {stripe} has no encrypted stream {kind} of column {column}"
            )
        if start < 0 or length < 0 or start + length > place.length:
            raise UnsupportedOrcError(
                path, f"range {start}+{length} lies outside the {place.length}-byte stream"
            )
        file_keys = _file_keys(tail, provider, {place.variant})
        key = file_keys.keys[stripe][place.variant]
        if key is None:
            raise OrcKeyError(path, f"no key for encryption variant {place.variant}")
        raw = data[place.offset + start : place.offset + start + length]
        stats.bytes_read += length
        stats.bytes_decrypted += length
        iv = stream_iv(column, kind, file_keys.stripe_ids[stripe])
        return decrypt_range(key, iv, raw, start)
