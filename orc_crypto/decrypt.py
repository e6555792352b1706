"""Decrypt an encrypted ORC file into a plaintext ORC file (readable by any ORC reader)."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import BinaryIO

from watershed.orc_crypto.ciphers import FILE_STATISTICS_KIND, STRIPE_STATISTICS_KIND, aes_ctr, stream_iv
from watershed.orc_crypto.codec import compression
from watershed.orc_crypto.codec.stripes import (
    ENCRYPTED_DATA,
    ENCRYPTED_INDEX,
    INDEX_KINDS,
    read_stripe_footer,
    stream_places,
)
from watershed.orc_crypto.codec.tail import (
    OrcTail,
    column_subtree_max,
    decompress,
    parse_message,
    plaintext_tail,
    read_tail,
)
from watershed.orc_crypto.errors import OrcCryptoError, OrcFormatError, OrcKeyError
from watershed.orc_crypto.files import atomic_output, check_output, mapped_input
from watershed.orc_crypto.keys.base import KeyProvider, KeyProviderError
from watershed.orc_crypto.proto import orc_proto_pb2 as pb
from watershed.orc_crypto.verify import Expected, verify_written


def _unwrap(
    tail: OrcTail, provider: KeyProvider, variant_index: int, encrypted_key: bytes, cache: dict
) -> bytes:
    variant = tail.footer.encryption.variants[variant_index]
    keys = tail.footer.encryption.key
    if variant.key >= len(keys):
        raise OrcFormatError(
            tail.path, f"variant {variant_index} names key index {variant.key}, which does not exist"
        )
    key = keys[variant.key]
    cache_key = (key.keyName, key.keyVersion, bytes(encrypted_key))
    if cache_key not in cache:
        try:
            local = provider.decrypt_local_key(key.keyName, key.keyVersion, bytes(encrypted_key))
        except KeyProviderError as exc:
            raise OrcKeyError(tail.path, f"key {key.keyName}@{key.keyVersion}: {exc}") from exc
        expected = 16 if key.algorithm == 1 else 32
        if len(local) != expected:
            raise OrcKeyError(
                tail.path, f"key {key.keyName}: local key has {len(local)} bytes, expected {expected}"
            )
        cache[cache_key] = local
    return cache[cache_key]


def _decrypt_compressed(tail: OrcTail, key: bytes, iv: bytes, data: bytes, what: str) -> bytes:
    return decompress(tail.path, tail.codec, aes_ctr(key, iv, data), tail.block_size, what)


def decrypt_bytes(path: str, data: bytes, provider: KeyProvider) -> bytes:
    """The plaintext ORC file for the encrypted ORC file `data` (named `path` in errors)."""
    out = io.BytesIO()
    decrypt_to(path, data, out, provider)
    return out.getvalue()


def decrypt_to(path: str, data, out: BinaryIO, provider: KeyProvider) -> None:
    """Write the plaintext ORC file for the encrypted ORC file `data` to `out`, stripe by stripe."""
    try:
        _decrypt_to(path, data, out, provider)
    except OrcCryptoError:
        raise
    except (IndexError, KeyError, ValueError, OverflowError) as exc:
        # Inconsistent metadata (ids or counts out of range) in a damaged file.
        raise OrcFormatError(path, f"inconsistent file metadata: {exc!r}") from exc


def _decrypt_to(path: str, data, out: BinaryIO, provider: KeyProvider) -> None:
    tail = read_tail(path, data)
    if not tail.is_encrypted:
        out.write(data)
        return
    encryption = tail.footer.encryption
    types = tail.footer.types
    n_stripes = len(tail.footer.stripes)
    footer_stripe_id = n_stripes + 1
    cache: dict = {}
    roots: dict[int, tuple[int, int]] = {}  # variant -> (root, max column)
    encrypted_columns: dict[int, int] = {}  # column -> variant
    for v, variant in enumerate(encryption.variants):
        if variant.root >= len(types):
            raise OrcFormatError(path, f"variant {v} root column {variant.root} does not exist")
        last = column_subtree_max(types, variant.root)
        roots[v] = (variant.root, last)
        for column in range(variant.root, last + 1):
            encrypted_columns[column] = v
    footer_keys = [
        _unwrap(tail, provider, v, var.encryptedKey, cache) for v, var in enumerate(encryption.variants)
    ]

    footer = pb.Footer()
    footer.CopyFrom(tail.footer)
    metadata = pb.Metadata()
    metadata.CopyFrom(tail.metadata)
    # True statistics: file statistics, then each variant's stripe statistics streams.
    stats_offset = 0
    for v, variant in enumerate(encryption.variants):
        root, last = roots[v]
        key = footer_keys[v]
        if variant.fileStatistics:
            plain = _decrypt_compressed(
                tail,
                key,
                stream_iv(root, FILE_STATISTICS_KIND, footer_stripe_id),
                variant.fileStatistics,
                "file statistics",
            )
            file_stats = parse_message(pb.FileStatistics(), plain, path, f"variant {v} file statistics")
            for i, stats in enumerate(file_stats.column):
                if root + i < len(footer.statistics) and root + i <= last:
                    footer.statistics[root + i].CopyFrom(stats)
        for stream in variant.stripeStatistics:
            raw = tail.encrypted_stripe_statistics[stats_offset : stats_offset + stream.length]
            if len(raw) != stream.length:
                raise OrcFormatError(path, "encrypted stripe statistics run past their area")
            stats_offset += stream.length
            plain = _decrypt_compressed(
                tail,
                key,
                stream_iv(stream.column, STRIPE_STATISTICS_KIND, footer_stripe_id),
                raw,
                "stripe statistics",
            )
            columnar = parse_message(
                pb.ColumnarStripeStatistics(), plain, path, f"variant {v} stripe statistics"
            )
            for s, stats in enumerate(columnar.colStats):
                if s < len(metadata.stripeStats) and stream.column < len(metadata.stripeStats[s].colStats):
                    metadata.stripeStats[s].colStats[stream.column].CopyFrom(stats)

    out.write(b"ORC")
    position = 3
    stripe_id = 0
    stripe_keys: list[bytes] = []
    for s, stripe in enumerate(tail.footer.stripes):
        stripe_id = stripe.encryptStripeId if stripe.HasField("encryptStripeId") else stripe_id + 1
        if stripe.encryptedLocalKeys:
            if len(stripe.encryptedLocalKeys) != len(encryption.variants):
                raise OrcFormatError(path, f"stripe {s} has {len(stripe.encryptedLocalKeys)} local keys")
            stripe_keys = [
                _unwrap(tail, provider, v, k, cache) for v, k in enumerate(stripe.encryptedLocalKeys)
            ]
        keys = stripe_keys or footer_keys
        stripe_footer = read_stripe_footer(tail, data, s)
        if len(stripe_footer.encryption) != len(encryption.variants):
            raise OrcFormatError(
                path, f"stripe {s} footer has {len(stripe_footer.encryption)} encryption variants"
            )
        new_footer = pb.StripeFooter()
        new_footer.CopyFrom(stripe_footer)
        del new_footer.streams[:]
        del new_footer.encryption[:]
        index_streams, data_streams = [], []
        for place in stream_places(tail, s, stripe_footer):
            if place.variant is None and place.column in encrypted_columns:
                continue  # the masked copy is replaced by the decrypted one
            stream = pb.Stream(kind=place.kind, column=place.column, length=place.length)
            (index_streams if place.kind in INDEX_KINDS else data_streams).append(stream)
        new_footer.streams.extend(
            sorted(index_streams, key=lambda st: (st.column, st.kind))
            + sorted(data_streams, key=lambda st: (st.column, st.kind))
        )
        # Lay out the areas in the order of the new (sorted) stream list.
        index_area, data_area = _reorder(
            tail, s, stripe_footer, encrypted_columns, keys, stripe_id, data, new_footer
        )
        for v, variant_footer in enumerate(stripe_footer.encryption):
            root, last = roots[v]
            for c, encoding in enumerate(variant_footer.encoding):
                if root + c <= last and root + c < len(new_footer.columns):
                    new_footer.columns[root + c].CopyFrom(encoding)
        footer_bytes = compression.compress(tail.codec, new_footer.SerializeToString(), tail.block_size)
        info = footer.stripes[s]
        info.offset = position
        info.indexLength = len(index_area)
        info.dataLength = len(data_area)
        info.footerLength = len(footer_bytes)
        info.ClearField("encryptStripeId")
        del info.encryptedLocalKeys[:]
        out.writelines((index_area, data_area, footer_bytes))
        position += len(index_area) + len(data_area) + len(footer_bytes)
    footer.contentLength = position
    footer.ClearField("encryption")
    out.writelines(plaintext_tail(tail, metadata, footer))


def _reorder(tail, s, stripe_footer, encrypted_columns, keys, stripe_id, data, new_footer):
    places = {}
    for place in stream_places(tail, s, stripe_footer):
        if place.variant is None and place.column in encrypted_columns:
            continue
        raw = data[place.offset : place.offset + place.length]
        if place.variant is not None:
            raw = aes_ctr(keys[place.variant], stream_iv(place.column, place.kind, stripe_id), raw)
        places[(place.column, place.kind)] = raw
    index_area, data_area = bytearray(), bytearray()
    for stream in new_footer.streams:
        if stream.kind in (ENCRYPTED_INDEX, ENCRYPTED_DATA):
            continue
        target = index_area if stream.kind in INDEX_KINDS else data_area
        target += places[(stream.column, stream.kind)]
    return bytes(index_area), bytes(data_area)


def decrypt_file(
    source: str | Path,
    target: str | Path,
    provider: KeyProvider,
    *,
    in_place: bool = False,
    verify: str = "auto",
) -> None:
    """Write the plaintext form of the encrypted ORC file `source` to `target`: a temp file beside
    the target, read back and checked (`orc_crypto.verify`), then renamed over it. The target is
    checked before any work; it may be `source` itself only with `in_place`.

    The source is mapped, not read, and the output written stripe by stripe, so a large file
    never sits in memory whole.
    """
    source = str(source)
    destination = check_output(source, target, in_place=in_place)
    mode = os.stat(source).st_mode if in_place else None
    with mapped_input(source, OrcFormatError) as data:
        rows = [stripe.numberOfRows for stripe in read_tail(source, data).footer.stripes]
        expected = Expected(stripe_rows=rows, source=source)
        with atomic_output(
            destination, mode=mode, verify=lambda temp: verify_written(target, temp, expected, verify)
        ) as out:
            decrypt_to(source, data, out, provider)


def read_table(source: str | Path, provider: KeyProvider | None = None):
    """A pyarrow Table of the decrypted file, or of the masked view when `provider` is None."""
    import pyarrow.orc as orc

    source = str(source)
    try:
        data = Path(source).read_bytes()
    except OSError as exc:
        raise OrcFormatError(source, f"cannot read: {exc.strerror or exc}") from exc
    payload = data if provider is None else decrypt_bytes(source, data, provider)
    if provider is None:
        read_tail(source, data)
    try:
        return orc.ORCFile(io.BytesIO(payload)).read()
    except Exception as exc:  # pyarrow raises ArrowInvalid/OSError for bad files
        raise OrcFormatError(source, f"cannot decode: {exc}") from exc


__all__ = ["OrcCryptoError", "decrypt_bytes", "decrypt_file", "decrypt_to", "read_table"]
