"""Rewrite a plaintext ORC file so that chosen column subtrees are encrypted as ORC Java writes them.

Untouched columns' streams are copied byte for byte without decoding. Each encrypted
subtree's original streams move, AES-CTR encrypted under a fresh local key, into its
encryption variant (with its row index, and its true stripe and file statistics in
the encrypted tail); the unencrypted masked copy the mask asks for takes their place
(`orc_crypto.masking.copy`), with the masked statistics in the clear footer.

Stripes are rewritten in a small pool of threads (the heavy parts, the ORC library,
hashing, compression and the file writes, run without the GIL) and written out in
order as they are ready, into a temp file that is renamed over the target at the end.
"""

from __future__ import annotations

import io
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from watershed.orc_crypto.ciphers import (
    FILE_STATISTICS_KIND,
    KEY_LENGTHS,
    STRIPE_STATISTICS_KIND,
    aes_ctr,
    stream_iv,
)
from watershed.orc_crypto.codec import compression, kinds
from watershed.orc_crypto.codec.kinds import (
    BLOOM_FILTER,
    BLOOM_FILTER_UTF8,
    ENCRYPTED_DATA,
    ENCRYPTED_INDEX,
    INDEX_KINDS,
)
from watershed.orc_crypto.codec.statistics import merge_statistics
from watershed.orc_crypto.codec.stripes import read_stripe_footer, stream_places
from watershed.orc_crypto.codec.tail import OrcTail, column_subtree_max, read_tail
from watershed.orc_crypto.errors import OrcCryptoError, OrcFormatError, OrcKeyError, UnsupportedOrcError
from watershed.orc_crypto.files import atomic_output, check_output, mapped_input
from watershed.orc_crypto.keys.base import KeyProvider, KeyProviderError
from watershed.orc_crypto.masking.copy import MaskedCopy, MaskedStripe
from watershed.orc_crypto.masking.values import NULLIFY, MaskError, SubtreeMasker
from watershed.orc_crypto.options import (
    MaskSpec,
    OptionError,
    parse_encrypt_option,
    parse_mask,
    parse_mask_option,
    split_field,
)
from watershed.orc_crypto.proto import orc_proto_pb2 as pb
from watershed.orc_crypto.verify import Expected, verify_written

__all__ = [
    "encrypt_bytes",
    "encrypt_file",
    "parse_encrypt_option",
    "parse_mask_option",
    "resolve_column",
]

HADOOP_KEY_PROVIDER = 1
ORC_CPP_WRITER = 1
#: sanity bound against damaged row counts
MAX_STRIPE_ROWS = 1 << 31

Progress = Callable[[int, int], None]


@dataclass
class _Variant:
    key_index: int
    root: int
    last: int
    encrypted_key: bytes
    local_key: bytes
    masked: MaskedCopy


@dataclass
class _Plan:
    keys: list[pb.EncryptionKey]
    variants: list[_Variant]
    masks: list[pb.DataMask]
    #: column -> index of the variant whose subtree holds it
    variant_of: dict[int, int]


@dataclass
class _RewrittenStripe:
    chunks: list  # bytes and views of the source, in file order
    index_length: int
    data_length: int
    footer_length: int
    masked: list[MaskedStripe] = field(default_factory=list)


def resolve_column(tail: OrcTail, name: str) -> int:
    """Column id of a field as ORC's options name it: a column number, or a dotted path of
    struct field names (back-quoted where needed), `_elem` of a list, `_key`/`_value` of a
    map, or a union's child number."""
    types = tail.footer.types
    text = name.strip()
    if text.isdigit():
        column = int(text)
        if column >= len(types):
            raise UnsupportedOrcError(tail.path, f"column number {column} does not exist")
        return column
    try:
        parts = split_field(text)
    except OptionError as exc:
        raise UnsupportedOrcError(tail.path, str(exc)) from exc
    column = 0
    for part in parts:
        node = types[column]
        children = list(node.subtypes)
        if node.kind == kinds.STRUCT and part in node.fieldNames:
            column = children[list(node.fieldNames).index(part)]
        elif node.kind == kinds.LIST and part == "_elem" and children:
            column = children[0]
        elif node.kind == kinds.MAP and part in ("_key", "_value") and len(children) == 2:
            column = children[part == "_value"]
        elif node.kind == kinds.UNION and part.isdigit() and int(part) < len(children):
            column = children[int(part)]
        else:
            raise UnsupportedOrcError(tail.path, f"column {name!r} does not exist (no field {part!r})")
    return column


def _plan(
    path: str,
    data,
    tail: OrcTail,
    provider: KeyProvider,
    encrypt: dict[str, list[str]],
    masks: dict[str, str],
    random_bytes: Callable[[int], bytes],
) -> _Plan:
    """Keys, variants and masks in ORC Java's order: keys by name, variants by key then root,
    masks by their text."""
    types = tail.footer.types
    keys: list[pb.EncryptionKey] = []
    roots_by_key: list[list[int]] = []
    owner: dict[int, str] = {}
    for key_name in sorted(encrypt):
        roots = sorted({resolve_column(tail, name) for name in encrypt[key_name]})
        for root in roots:
            if root == 0:
                raise UnsupportedOrcError(path, "the root struct cannot be encrypted")
            for column in range(root, column_subtree_max(types, root) + 1):
                if column in owner:
                    raise UnsupportedOrcError(
                        path,
                        f"column {column} is encrypted twice (nested encryption: {owner[column]}, {key_name})",
                    )
                owner[column] = key_name
        try:
            info = provider.key_info(key_name)
        except KeyProviderError as exc:
            raise OrcKeyError(path, f"key {key_name!r}: {exc}") from exc
        algorithm = 1 if info.bit_length == 128 else 2
        keys.append(pb.EncryptionKey(keyName=key_name, keyVersion=info.version, algorithm=algorithm))
        roots_by_key.append(roots)

    specs: dict[int, MaskSpec] = {}
    for field_name, mask_text in masks.items():
        column = resolve_column(tail, field_name)
        if column not in owner:
            continue  # ORC ignores masks on columns that are not encrypted
        try:
            specs[column] = parse_mask(mask_text)
        except OptionError as exc:
            raise UnsupportedOrcError(path, f"mask on {field_name!r}: {exc}") from exc

    variants: list[_Variant] = []
    mask_columns: dict[str, list[int]] = {}
    spec_by_text: dict[str, MaskSpec] = {}
    for key_index, roots in enumerate(roots_by_key):
        key = keys[key_index]
        for root in roots:
            last = column_subtree_max(types, root)
            subtree_masks = {c: s for c, s in specs.items() if root <= c <= last}
            subtree_masks.setdefault(root, NULLIFY)
            for column, spec in subtree_masks.items():
                mask_columns.setdefault(spec.text, []).append(column)
                spec_by_text[spec.text] = spec
            try:
                masker = SubtreeMasker(types, root, subtree_masks)
            except MaskError as exc:
                raise UnsupportedOrcError(path, f"column {root}: {exc}") from exc
            masked = MaskedCopy(path, data, tail, root, masker)
            encrypted_key = random_bytes(KEY_LENGTHS[key.algorithm])
            try:
                local = provider.decrypt_local_key(key.keyName, key.keyVersion, encrypted_key)
            except KeyProviderError as exc:
                raise OrcKeyError(path, f"key {key.keyName!r}: {exc}") from exc
            variants.append(_Variant(key_index, root, last, encrypted_key, local, masked))
    records = [
        pb.DataMask(
            name=spec_by_text[text].name,
            maskParameters=spec_by_text[text].parameters,
            columns=sorted(mask_columns[text]),
        )
        for text in sorted(mask_columns)
    ]
    variant_of = {c: v for v, var in enumerate(variants) for c in range(var.root, var.last + 1)}
    return _Plan(keys, variants, records, variant_of)


def _rewrite_stripe(plan: _Plan, tail: OrcTail, data, s: int) -> _RewrittenStripe:
    """Stripe `s` with its encrypted columns moved into their variants and masked copies in place."""
    stripe_id = s + 1  # row counts were checked up front (_check_row_counts)
    source_footer = read_stripe_footer(tail, data, s)
    view = memoryview(data)
    # Streams as (column, kind, pieces): views of the source, encrypted bytes, compressed pieces.
    plain_index: list[tuple[int, int, list]] = []
    plain_data: list[tuple[int, int, list]] = []
    variant_index: list[list[tuple[int, int, list]]] = [[] for _ in plan.variants]
    variant_data: list[list[tuple[int, int, list]]] = [[] for _ in plan.variants]
    for place in stream_places(tail, s, source_footer):
        raw = view[place.offset : place.offset + place.length]
        v = plan.variant_of.get(place.column)
        is_index = place.kind in INDEX_KINDS
        if v is None:
            (plain_index if is_index else plain_data).append((place.column, place.kind, [raw]))
        elif place.kind not in (BLOOM_FILTER, BLOOM_FILTER_UTF8):
            # Bloom filters of encrypted columns are dropped: ORC Java would keep them in the clear.
            encrypted = aes_ctr(
                plan.variants[v].local_key, stream_iv(place.column, place.kind, stripe_id), raw
            )
            (variant_index[v] if is_index else variant_data[v]).append(
                (place.column, place.kind, [encrypted])
            )

    new_footer = pb.StripeFooter()
    new_footer.CopyFrom(source_footer)
    del new_footer.streams[:]
    masked_stripes = []
    for v, variant in enumerate(plan.variants):
        masked = variant.masked.stripe(s)
        masked_stripes.append(masked)
        for column, kind, raw in masked.streams:
            (plain_index if kind in INDEX_KINDS else plain_data).append((column, kind, raw))
        sev = new_footer.encryption.add()
        for column in range(variant.root, variant.last + 1):
            sev.encoding.add().CopyFrom(source_footer.columns[column])
            new_footer.columns[column].CopyFrom(masked.encodings[column])
        order = sorted(variant_index[v], key=_stream_order) + sorted(variant_data[v], key=_stream_order)
        sev.streams.extend(
            pb.Stream(kind=kind, column=column, length=_size(parts)) for column, kind, parts in order
        )

    plain_index.sort(key=_stream_order)
    plain_data.sort(key=_stream_order)
    enc_index = [x for streams in variant_index for x in sorted(streams, key=_stream_order)]
    enc_data = [x for streams in variant_data for x in sorted(streams, key=_stream_order)]
    new_footer.streams.extend(pb.Stream(kind=k, column=c, length=_size(p)) for c, k, p in plain_index)
    if enc_index:
        new_footer.streams.add(kind=ENCRYPTED_INDEX, length=sum(_size(p) for _, _, p in enc_index))
    new_footer.streams.extend(pb.Stream(kind=k, column=c, length=_size(p)) for c, k, p in plain_data)
    if enc_data:
        new_footer.streams.add(kind=ENCRYPTED_DATA, length=sum(_size(p) for _, _, p in enc_data))
    index_chunks = [piece for _, _, parts in plain_index + enc_index for piece in parts]
    data_chunks = [piece for _, _, parts in plain_data + enc_data for piece in parts]
    footer_bytes = compression.compress(tail.codec, new_footer.SerializeToString(), tail.block_size)
    return _RewrittenStripe(
        chunks=[*index_chunks, *data_chunks, footer_bytes],
        index_length=sum(len(b) for b in index_chunks),
        data_length=sum(len(b) for b in data_chunks),
        footer_length=len(footer_bytes),
        masked=masked_stripes,
    )


def _stream_order(item: tuple[int, int, list]) -> tuple[int, int]:
    return item[0], item[1]


def _size(parts: list) -> int:
    return sum(len(piece) for piece in parts)


def _tail(plan: _Plan, tail: OrcTail, stripes: list[_RewrittenStripe]) -> list[bytes]:
    """Encrypted stripe statistics, Metadata, Footer and PostScript of the rewritten file."""
    codec, block = tail.codec, tail.block_size
    footer_stripe_id = len(tail.footer.stripes) + 1
    footer = pb.Footer()
    footer.CopyFrom(tail.footer)
    metadata = pb.Metadata()
    metadata.CopyFrom(tail.metadata)
    position = 3
    for s, rewritten in enumerate(stripes):
        info = footer.stripes[s]
        info.offset = position
        info.indexLength, info.dataLength = rewritten.index_length, rewritten.data_length
        info.footerLength = rewritten.footer_length
        position += rewritten.index_length + rewritten.data_length + rewritten.footer_length
        if s == 0:
            info.encryptStripeId = 1
            info.encryptedLocalKeys.extend(var.encrypted_key for var in plan.variants)
        if s < len(metadata.stripeStats):
            column_stats = metadata.stripeStats[s].colStats
            for masked in rewritten.masked:
                for column, statistics in masked.statistics.items():
                    if column < len(column_stats):
                        column_stats[column].CopyFrom(statistics)

    encryption = footer.encryption
    encryption.keyProvider = HADOOP_KEY_PROVIDER
    encryption.key.extend(plan.keys)
    encryption.mask.extend(plan.masks)
    stripe_stats_area: list[bytes] = []
    for v, variant in enumerate(plan.variants):
        # The true statistics go into the variant, encrypted; the clear ones describe the masked copy.
        message = encryption.variants.add(
            root=variant.root, key=variant.key_index, encryptedKey=variant.encrypted_key
        )
        file_stats = pb.FileStatistics()
        file_stats.column.extend(tail.footer.statistics[variant.root : variant.last + 1])
        packed = compression.compress(codec, file_stats.SerializeToString(), block)
        message.fileStatistics = aes_ctr(
            variant.local_key, stream_iv(variant.root, FILE_STATISTICS_KIND, footer_stripe_id), packed
        )
        for column in range(variant.root, variant.last + 1):
            columnar = pb.ColumnarStripeStatistics()
            columnar.colStats.extend(
                st.colStats[column] for st in tail.metadata.stripeStats if column < len(st.colStats)
            )
            packed = compression.compress(codec, columnar.SerializeToString(), block)
            sealed = aes_ctr(
                variant.local_key, stream_iv(column, STRIPE_STATISTICS_KIND, footer_stripe_id), packed
            )
            message.stripeStatistics.add(kind=STRIPE_STATISTICS_KIND, column=column, length=len(sealed))
            stripe_stats_area.append(sealed)
            if column >= len(footer.statistics):
                continue
            if not stripes:
                footer.statistics[column].CopyFrom(pb.ColumnStatistics(numberOfValues=0, hasNull=False))
            else:
                per_stripe = [rewritten.masked[v].statistics[column] for rewritten in stripes]
                # the masked copy's statistics come from the ORC C++ writer (pyarrow)
                merged = merge_statistics(
                    per_stripe, column_type=tail.footer.types[column], writer=ORC_CPP_WRITER
                )
                on_disk = sum(st.bytesOnDisk for st in per_stripe)
                if on_disk:
                    merged.bytesOnDisk = on_disk
                footer.statistics[column].CopyFrom(merged)
    footer.contentLength = position
    encrypted_stats = b"".join(stripe_stats_area)
    metadata_bytes = compression.compress(codec, metadata.SerializeToString(), block)
    footer_bytes = compression.compress(codec, footer.SerializeToString(), block)
    postscript = pb.PostScript()
    postscript.CopyFrom(tail.postscript)
    postscript.metadataLength = len(metadata_bytes)
    postscript.footerLength = len(footer_bytes)
    postscript.stripeStatisticsLength = len(encrypted_stats)
    ps_bytes = postscript.SerializeToString()
    if len(ps_bytes) > 255:
        raise OrcFormatError(tail.path, "PostScript too long")
    return [encrypted_stats, metadata_bytes, footer_bytes, ps_bytes, bytes([len(ps_bytes)])]


def _in_order(
    work: Callable[[int], _RewrittenStripe], count: int, workers: int
) -> Iterator[_RewrittenStripe]:
    """work(0..count-1) run by `workers` threads, yielded in order, at most workers + 1 ahead."""
    if workers <= 1:
        yield from map(work, range(count))
        return
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="orc-encrypt")
    try:
        pending: deque = deque()
        submitted = 0
        while submitted < min(count, workers + 1):
            pending.append(pool.submit(work, submitted))
            submitted += 1
        while pending:
            result = pending.popleft().result()
            if submitted < count:
                pending.append(pool.submit(work, submitted))
                submitted += 1
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def encrypt_to(
    path: str,
    data,
    out: BinaryIO,
    provider: KeyProvider,
    encrypt: dict[str, list[str]],
    masks: dict[str, str] | None = None,
    *,
    random_bytes: Callable[[int], bytes] = os.urandom,
    workers: int | None = None,
    progress: Progress | None = None,
) -> Expected:
    """Write the encrypted form of the plaintext ORC file `data` (named `path` in errors) to `out`;
    returns what was written, for `verify_written`."""
    try:
        return _encrypt_to(path, data, out, provider, encrypt, masks or {}, random_bytes, workers, progress)
    except OrcCryptoError:
        raise
    except (IndexError, KeyError, ValueError, OverflowError) as exc:
        raise OrcFormatError(path, f"inconsistent file metadata: {exc!r}") from exc


def _encrypt_to(path, data, out, provider, encrypt, masks, random_bytes, workers, progress) -> Expected:
    tail = read_tail(path, data)
    if tail.is_encrypted:
        raise UnsupportedOrcError(path, "the file is already encrypted")
    if not encrypt:
        raise UnsupportedOrcError(path, "no columns to encrypt")
    _check_row_counts(tail)
    plan = _plan(path, data, tail, provider, encrypt, masks, random_bytes)
    count = len(tail.footer.stripes)
    workers = workers or min(4, os.cpu_count() or 1)
    rewritten: list[_RewrittenStripe] = []
    out.write(b"ORC")
    try:
        for done, stripe in enumerate(
            _in_order(lambda s: _rewrite_stripe(plan, tail, data, s), count, workers), 1
        ):
            out.writelines(stripe.chunks)
            stripe.chunks = []  # the source views and encrypted bytes are written; keep only statistics
            rewritten.append(stripe)
            if progress:
                progress(done, count)
        for chunk in _tail(plan, tail, rewritten):
            out.write(chunk)
    finally:
        for variant in plan.variants:
            variant.masked.close()
    return Expected(
        stripe_rows=[stripe.numberOfRows for stripe in tail.footer.stripes],
        local_keys=[variant.local_key for variant in plan.variants],
        source=path,
        source_columns=_top_level_names(tail, [variant.root for variant in plan.variants]),
    )


def _top_level_names(tail: OrcTail, roots: list[int]) -> list[str]:
    """The top-level fields holding these columns (what pyarrow can select to decode them)."""
    types = tail.footer.types
    top = types[0]
    names = []
    for name, child in zip(top.fieldNames, top.subtypes, strict=False):
        last = column_subtree_max(types, child)
        if any(child <= root <= last for root in roots):
            names.append(name)
    return names


def _check_row_counts(tail: OrcTail) -> None:
    """The masked copies are sized by the stripes' row counts: they must agree with the file's
    other records of them (a damaged count would otherwise size a huge copy)."""
    footer = tail.footer
    total = 0
    for s, stripe in enumerate(footer.stripes):
        rows = stripe.numberOfRows
        if rows > MAX_STRIPE_ROWS:
            raise OrcFormatError(tail.path, f"stripe {s} claims {rows} rows")
        stats = tail.metadata.stripeStats[s].colStats if s < len(tail.metadata.stripeStats) else []
        counted = stats[0].numberOfValues if stats and stats[0].HasField("numberOfValues") else rows
        if counted != rows:
            raise OrcFormatError(tail.path, f"stripe {s} has {rows} rows but its statistics count {counted}")
        total += rows
    if footer.HasField("numberOfRows") and footer.numberOfRows != total:
        raise OrcFormatError(
            tail.path, f"the stripes hold {total} rows, the footer says {footer.numberOfRows}"
        )


def encrypt_bytes(
    path: str,
    data: bytes,
    provider: KeyProvider,
    encrypt: dict[str, list[str]],
    masks: dict[str, str] | None = None,
    random_bytes: Callable[[int], bytes] = os.urandom,
) -> bytes:
    """The encrypted ORC file for the plaintext ORC file `data` (named `path` in errors)."""
    out = io.BytesIO()
    encrypt_to(path, data, out, provider, encrypt, masks, random_bytes=random_bytes, workers=1)
    return out.getvalue()


def encrypt_file(
    source: str | Path,
    target: str | Path,
    provider: KeyProvider,
    encrypt: dict[str, list[str]],
    masks: dict[str, str] | None = None,
    *,
    workers: int | None = None,
    progress: Progress | None = None,
    in_place: bool = False,
    verify: str = "auto",
) -> None:
    """Encrypt `source` into `target`: a temp file beside the target, read back and checked
    (`orc_crypto.verify`, `verify` "auto", "fast" or "full"), then renamed over it. The target is checked
    before any work; it may be `source` itself only with `in_place` (the output then keeps the
    input's mode, and the input stays as it was until the new file is verified)."""
    source = str(source)
    destination = check_output(source, target, in_place=in_place)
    mode = os.stat(source).st_mode if in_place else None
    written: list[Expected] = []
    with (
        mapped_input(source, OrcFormatError) as data,
        atomic_output(
            destination, mode=mode, verify=lambda temp: verify_written(target, temp, written[0], verify)
        ) as out,
    ):
        written.append(
            encrypt_to(source, data, out, provider, encrypt, masks, workers=workers, progress=progress)
        )
