"""Rewrite a plaintext ORC file so that chosen column subtrees are encrypted as ORC Java writes them.

Untouched columns' streams are copied byte for byte. Each encrypted subtree's original
streams move (encrypted) into its variant; an unencrypted masked copy takes their place.
Masks: nullify (every encrypted column without a mask gets it), and sha256 and redact on
top-level string (redact: also integer) columns, built by `orc_crypto.masks`.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass
from pathlib import Path

from orc_crypto.ciphers import FILE_STATISTICS_KIND, KEY_LENGTHS, STRIPE_STATISTICS_KIND, aes_ctr, stream_iv
from orc_crypto.codec import compression
from orc_crypto.codec.stripes import (
    ENCRYPTED_DATA,
    ENCRYPTED_INDEX,
    INDEX_KINDS,
    read_stripe_footer,
    stream_places,
)
from orc_crypto.codec.tail import OrcTail, column_subtree_max, read_tail
from orc_crypto.decrypt import write_atomically
from orc_crypto.errors import OrcCryptoError, OrcFormatError, OrcKeyError, UnsupportedOrcError
from orc_crypto.keys.base import KeyProvider, KeyProviderError
from orc_crypto.masks import VALUE_MASKS, ColumnMasker, check_mask
from orc_crypto.proto import orc_proto_pb2 as pb

PRESENT = 0
HADOOP_KEY_PROVIDER = 1
#: sanity bound against damaged row counts (the masked PRESENT stream is sized by it)
MAX_STRIPE_ROWS = 1 << 31
SUPPORTED_MASKS = {"nullify", *VALUE_MASKS}
_BYTES_STATS = (
    "intStatistics",
    "doubleStatistics",
    "bucketStatistics",
    "decimalStatistics",
    "dateStatistics",
    "binaryStatistics",
    "timestampStatistics",
    "collectionStatistics",
)


@dataclass
class _Variant:
    key_index: int
    root: int
    last: int
    encrypted_key: bytes
    local_key: bytes


def parse_encrypt_option(text: str) -> dict[str, list[str]]:
    """`key:col,col;key2:col` -> {key: [columns]} (the orc.encrypt syntax, unquoted names)."""
    result: dict[str, list[str]] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        if ":" not in part:
            raise ValueError(f"bad encrypt entry {part!r}: expected key:column[,column]")
        key, columns = part.split(":", 1)
        result.setdefault(key.strip(), []).extend(c.strip() for c in columns.split(",") if c.strip())
    return result


def parse_mask_option(text: str) -> dict[str, str]:
    """`mask[,param]:col,col;mask2:col` -> {column: full mask string}."""
    result: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in (text or "").split(";"))):
        if ":" not in part:
            raise ValueError(f"bad mask entry {part!r}: expected mask[,params]:column[,column]")
        mask, columns = part.rsplit(":", 1)
        for column in filter(None, (c.strip() for c in columns.split(","))):
            result[column] = mask.strip()
    return result


def resolve_column(tail: OrcTail, name: str) -> int:
    """Column id of a top-level name, a dotted path of struct fields, or a column number."""
    types = tail.footer.types
    if name.isdigit():
        column = int(name)
        if column >= len(types):
            raise UnsupportedOrcError(tail.path, f"column number {column} does not exist")
        return column
    column = 0
    for part in name.split("."):
        node = types[column]
        if part not in node.fieldNames:
            raise UnsupportedOrcError(tail.path, f"column {name!r} does not exist (no field {part!r})")
        column = node.subtypes[list(node.fieldNames).index(part)]
    return column


def _boolean_rle_all_false(rows: int) -> bytes:
    """ORC boolean RLE (byte RLE over packed bits) of `rows` false values."""
    remaining = (rows + 7) // 8
    out = bytearray()
    while remaining >= 3:
        run = min(remaining, 130)
        out += bytes([run - 3, 0])
        remaining -= run
    if remaining:
        out += bytes([256 - remaining]) + bytes(remaining)
    return bytes(out)


def _masked_stats(original: pb.ColumnStatistics, bytes_on_disk: int) -> pb.ColumnStatistics:
    stats = pb.ColumnStatistics(numberOfValues=0, hasNull=True)
    if original.HasField("stringStatistics"):
        stats.stringStatistics.SetInParent()
    for name in _BYTES_STATS:
        if original.HasField(name):
            setattr(stats, name, b"")
    if bytes_on_disk:
        stats.bytesOnDisk = bytes_on_disk
    return stats


def encrypt_bytes(
    path: str,
    data: bytes,
    provider: KeyProvider,
    encrypt: dict[str, list[str]],
    masks: dict[str, str] | None = None,
    random_bytes=os.urandom,
) -> bytes:
    """The encrypted ORC file for the plaintext ORC file `data` (named `path` in errors)."""
    return b"".join(encrypt_parts(path, data, provider, encrypt, masks, random_bytes))


def encrypt_parts(
    path: str,
    data: bytes,
    provider: KeyProvider,
    encrypt: dict[str, list[str]],
    masks: dict[str, str] | None = None,
    random_bytes=os.urandom,
) -> list:
    """The encrypted file as a list of byte chunks, in order (unchanged streams are views of `data`)."""
    try:
        return _encrypt_bytes(path, data, provider, encrypt, masks or {}, random_bytes)
    except OrcCryptoError:
        raise
    except (IndexError, KeyError, ValueError, OverflowError) as exc:
        raise OrcFormatError(path, f"inconsistent file metadata: {exc!r}") from exc


def _encrypt_bytes(path, data, provider, encrypt, masks, random_bytes) -> bytes:
    tail = read_tail(path, data)
    if tail.is_encrypted:
        raise UnsupportedOrcError(path, "the file is already encrypted")
    types = tail.footer.types
    codec, block = tail.codec, tail.block_size
    masks = masks or {}

    # Keys sorted by name; variants grouped by key and sorted by root (ORC Java's order).
    key_messages: list[pb.EncryptionKey] = []
    roots_by_key: list[list[int]] = []
    seen_columns: dict[int, str] = {}
    for key_name in sorted(encrypt):
        try:
            info = provider.key_info(key_name)
        except KeyProviderError as exc:
            raise OrcKeyError(path, f"key {key_name!r}: {exc}") from exc
        algorithm = 1 if info.bit_length == 128 else 2
        key_messages.append(pb.EncryptionKey(keyName=key_name, keyVersion=info.version, algorithm=algorithm))
        roots = sorted({resolve_column(tail, name) for name in encrypt[key_name]})
        roots_by_key.append(roots)
        for root in roots:
            if root == 0:
                raise UnsupportedOrcError(path, "the root struct cannot be encrypted")
            for column in range(root, column_subtree_max(types, root) + 1):
                if column in seen_columns:
                    raise UnsupportedOrcError(path, f"column {column} is encrypted twice (nested encryption)")
                seen_columns[column] = key_name
    mask_by_root: dict[int, str] = {}
    for column_name, mask in masks.items():
        column = resolve_column(tail, column_name)
        if column not in seen_columns:
            continue  # ORC ignores masks on unencrypted columns
        if mask.split(",", 1)[0] not in SUPPORTED_MASKS:
            raise UnsupportedOrcError(path, f"mask {mask!r} on {column_name!r} is not implemented yet")
        if mask.split(",", 1)[0] in VALUE_MASKS and not any(column in roots for roots in roots_by_key):
            raise UnsupportedOrcError(
                path, f"mask {mask!r} on {column_name!r}: mask the encrypted column itself"
            )
        check_mask(path, tail, column, column_name, mask)
        mask_by_root[column] = mask
    maskers = {
        column: ColumnMasker(path, data, tail, column, mask)
        for column, mask in mask_by_root.items()
        if mask.split(",", 1)[0] in VALUE_MASKS
    }

    variants: list[_Variant] = []
    for key_index, roots in enumerate(roots_by_key):
        key = key_messages[key_index]
        for root in roots:
            encrypted_key = random_bytes(KEY_LENGTHS[key.algorithm])
            try:
                local = provider.decrypt_local_key(key.keyName, key.keyVersion, encrypted_key)
            except KeyProviderError as exc:
                raise OrcKeyError(path, f"key {key.keyName!r}: {exc}") from exc
            variants.append(_Variant(key_index, root, column_subtree_max(types, root), encrypted_key, local))
    variant_of = {c: v for v, var in enumerate(variants) for c in range(var.root, var.last + 1)}

    n_stripes = len(tail.footer.stripes)
    footer_stripe_id = n_stripes + 1
    footer = pb.Footer()
    footer.CopyFrom(tail.footer)
    metadata = pb.Metadata()
    metadata.CopyFrom(tail.metadata)
    masked_bytes_file: dict[int, int] = {}
    # The output is kept as chunks: copying a large file's streams into one buffer, piece by
    # piece, cost more than encrypting them. Untouched streams are views of the input.
    view = memoryview(data)
    out: list = [b"ORC"]
    position = 3
    for s, stripe in enumerate(tail.footer.stripes):
        stripe_id = s + 1
        if stripe.numberOfRows > MAX_STRIPE_ROWS:
            raise OrcFormatError(path, f"stripe {s} claims {stripe.numberOfRows} rows")
        stripe_footer = read_stripe_footer(tail, data, s)
        new_footer = pb.StripeFooter()
        new_footer.CopyFrom(stripe_footer)
        del new_footer.streams[:]
        plain_index, plain_data = [], []  # (Stream, bytes)
        variant_index = [[] for _ in variants]
        variant_data = [[] for _ in variants]
        present_columns = set()
        for place in stream_places(tail, s, stripe_footer):
            raw = view[place.offset : place.offset + place.length]
            stream = pb.Stream(kind=place.kind, column=place.column, length=place.length)
            v = variant_of.get(place.column)
            if v is None:
                (plain_index if place.kind in INDEX_KINDS else plain_data).append((stream, raw))
                continue
            if place.kind in (7, 8):
                raise UnsupportedOrcError(
                    path, f"column {place.column} has bloom filters; encrypting it would leak them"
                )
            encrypted = aes_ctr(variants[v].local_key, stream_iv(place.column, place.kind, stripe_id), raw)
            (variant_index[v] if place.kind in INDEX_KINDS else variant_data[v]).append((stream, encrypted))
            if place.kind not in INDEX_KINDS and place.kind != PRESENT:
                present_columns.add((place.column, place.kind))
        # The masked copy: for sha256/redact, the masked values as the ORC library writes them;
        # for nullify, an all-false PRESENT on the root and empty streams elsewhere.
        masked_stripe_stats: dict[int, int | pb.ColumnStatistics] = {}
        for var in variants:
            masker = maskers.get(var.root)
            if masker is not None:
                masked = masker.stripe(s)
                for kind, raw in masked.streams:
                    stream = pb.Stream(kind=kind, column=var.root, length=len(raw))
                    (plain_index if kind in INDEX_KINDS else plain_data).append((stream, raw))
                new_footer.columns[var.root].CopyFrom(masked.encoding)
                size = sum(len(raw) for _, raw in masked.streams)
                masked_bytes_file[var.root] = masked_bytes_file.get(var.root, 0) + size
                masked.statistics.bytesOnDisk = size
                masked_stripe_stats[var.root] = masked.statistics
                continue
            present = compression.compress(codec, _boolean_rle_all_false(stripe.numberOfRows), block)
            plain_data.append((pb.Stream(kind=PRESENT, column=var.root, length=len(present)), present))
            for column, kind in sorted(k for k in present_columns if var.root <= k[0] <= var.last):
                plain_data.append((pb.Stream(kind=kind, column=column, length=0), b""))
            for column in range(var.root, var.last + 1):
                size = len(present) if column == var.root else 0
                masked_bytes_file[column] = masked_bytes_file.get(column, 0) + size
                masked_stripe_stats[column] = size
        encryption_footers = []
        for v, var in enumerate(variants):
            sev = pb.StripeEncryptionVariant()
            sev.streams.extend(
                st for st, _ in sorted(variant_index[v], key=lambda x: (x[0].column, x[0].kind))
            )
            sev.streams.extend(
                st for st, _ in sorted(variant_data[v], key=lambda x: (x[0].column, x[0].kind))
            )
            for column in range(var.root, var.last + 1):
                sev.encoding.add().CopyFrom(stripe_footer.columns[column])
                masked = new_footer.columns[column]
                if masked.HasField("dictionarySize"):
                    masked.dictionarySize = 0
            encryption_footers.append(sev)
        order = lambda item: (item[0].column, item[0].kind)  # noqa: E731
        plain_index.sort(key=order)
        plain_data.sort(key=order)
        enc_index = [x for v in range(len(variants)) for x in sorted(variant_index[v], key=order)]
        enc_data = [x for v in range(len(variants)) for x in sorted(variant_data[v], key=order)]
        new_footer.streams.extend(st for st, _ in plain_index)
        if enc_index:
            new_footer.streams.add(kind=ENCRYPTED_INDEX, length=sum(len(b) for _, b in enc_index))
        new_footer.streams.extend(st for st, _ in plain_data)
        if enc_data:
            new_footer.streams.add(kind=ENCRYPTED_DATA, length=sum(len(b) for _, b in enc_data))
        new_footer.encryption.extend(encryption_footers)
        index_chunks = [b for _, b in plain_index + enc_index]
        data_chunks = [b for _, b in plain_data + enc_data]
        footer_bytes = compression.compress(codec, new_footer.SerializeToString(), block)
        info = footer.stripes[s]
        info.offset = position
        info.indexLength = sum(len(b) for b in index_chunks)
        info.dataLength = sum(len(b) for b in data_chunks)
        info.footerLength = len(footer_bytes)
        if s == 0:
            info.encryptStripeId = 1
            info.encryptedLocalKeys.extend(var.encrypted_key for var in variants)
        out += [*index_chunks, *data_chunks, footer_bytes]
        position += info.indexLength + info.dataLength + info.footerLength
        if s < len(metadata.stripeStats):
            stats = metadata.stripeStats[s].colStats
            for column, size in masked_stripe_stats.items():
                if column < len(stats):
                    if isinstance(size, int):
                        size = _masked_stats(tail.metadata.stripeStats[s].colStats[column], size)
                    stats[column].CopyFrom(size)
    content_length = position

    # True statistics, encrypted; the clear footer and metadata get the masked ones.
    encryption = footer.encryption
    encryption.keyProvider = HADOOP_KEY_PROVIDER
    encryption.key.extend(key_messages)
    mask_columns: dict[str, list[int]] = {}
    for var in variants:
        mask_columns.setdefault(mask_by_root.get(var.root, "nullify"), []).append(var.root)
    for mask in sorted(mask_columns):
        name, *params = mask.split(",")
        encryption.mask.add(name=name, maskParameters=params, columns=sorted(mask_columns[mask]))
    stripe_stats_area = bytearray()
    for var in variants:
        message = encryption.variants.add(root=var.root, key=var.key_index, encryptedKey=var.encrypted_key)
        file_stats = pb.FileStatistics()
        file_stats.column.extend(tail.footer.statistics[var.root : var.last + 1])
        packed = compression.compress(codec, file_stats.SerializeToString(), block)
        message.fileStatistics = aes_ctr(
            var.local_key, stream_iv(var.root, FILE_STATISTICS_KIND, footer_stripe_id), packed
        )
        for column in range(var.root, var.last + 1):
            columnar = pb.ColumnarStripeStatistics()
            columnar.colStats.extend(
                st.colStats[column] for st in tail.metadata.stripeStats if column < len(st.colStats)
            )
            packed = compression.compress(codec, columnar.SerializeToString(), block)
            sealed = aes_ctr(
                var.local_key, stream_iv(column, STRIPE_STATISTICS_KIND, footer_stripe_id), packed
            )
            message.stripeStatistics.add(kind=STRIPE_STATISTICS_KIND, column=column, length=len(sealed))
            stripe_stats_area += sealed
        for column in range(var.root, var.last + 1):
            if column >= len(footer.statistics):
                continue
            if column in maskers:
                masked_file_stats = maskers[column].file_statistics()
                masked_file_stats.bytesOnDisk = masked_bytes_file.get(column, 0)
                footer.statistics[column].CopyFrom(masked_file_stats)
            else:
                footer.statistics[column].CopyFrom(
                    _masked_stats(tail.footer.statistics[column], masked_bytes_file.get(column, 0))
                )
    out.append(bytes(stripe_stats_area))
    footer.contentLength = content_length
    metadata_bytes = compression.compress(codec, metadata.SerializeToString(), block)
    footer_bytes = compression.compress(codec, footer.SerializeToString(), block)
    postscript = pb.PostScript()
    postscript.CopyFrom(tail.postscript)
    postscript.metadataLength = len(metadata_bytes)
    postscript.footerLength = len(footer_bytes)
    postscript.stripeStatisticsLength = len(stripe_stats_area)
    ps_bytes = postscript.SerializeToString()
    if len(ps_bytes) > 255:
        raise OrcFormatError(path, "PostScript too long")
    out += [metadata_bytes, footer_bytes, ps_bytes, bytes([len(ps_bytes)])]
    return out


def encrypt_file(
    source: str | Path,
    target: str | Path,
    provider: KeyProvider,
    encrypt: dict[str, list[str]],
    masks: dict[str, str] | None = None,
) -> None:
    """Encrypt `source` into `target` (temp file + rename; `source` is never modified).

    The source is mapped, not read: the streams that stay as they are go from
    the page cache to the output without a copy in between.
    """
    source = str(source)
    try:
        handle = open(source, "rb")  # noqa: SIM115 - closed below, after the mapping
    except OSError as exc:
        raise OrcFormatError(source, f"cannot read: {exc.strerror or exc}") from exc
    with handle:
        if os.fstat(handle.fileno()).st_size == 0:
            write_atomically(target, encrypt_parts(source, b"", provider, encrypt, masks))
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            parts = encrypt_parts(source, mapped, provider, encrypt, masks)
            try:
                write_atomically(target, parts)
            finally:
                parts.clear()  # views into the mapping must go before it closes
