"""Key rotation for encrypted ORC files: move each variant to its master key's current version.

Why not only the tail. ORC has no separate wrapping IV: the local key is AES-CTR(master,
IV = E[0:16]) over the stored bytes E (doc §1, §5), so E is both the IV and the ciphertext.
Keeping a variant's local key under a new master version would need an E' with
E'[0:16] XOR AES(master', E'[0:16]) = local[0:16], a preimage of a one-way function. So a new
master version always means a new local key, and the bytes that key encrypts change with it.

What a rewrap does instead is the least an ORC-compatible file allows: a fresh local key per
rotated variant under the current master version, and every encrypted stream, encrypted stripe
statistics stream and the file statistics re-keyed in place (AES-CTR out with the old key, in
with the new one: same lengths, same offsets, no decompression, decoding or masking). All other
bytes are copied untouched: the header, every unencrypted stream (plain columns and the masked
copies), every stripe footer and the Metadata. The Footer changes only in the key versions,
the stored local keys and the file statistics; the stripe layout in it is the same.

By default only the changed bytes are written, into the file itself: the re-keyed streams and the
tail from its first changed byte (the file is truncated to the new length). A redo journal beside
it (`rewrap_journal`) holds all of them, durably, before the first is written, so a crash is
repaired by the next rewrap writing the same bytes again. `in_place=False` instead writes a whole
new file (temp beside it, fsync, verify, rename): readers then never see a mix, at the cost of
copying every byte. Either way the file is only written if it did not change meanwhile, and a
file whose keys are all at the wanted versions is left alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import mmap
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from pydantic import BaseModel

from watershed.orc_crypto.ciphers import FILE_STATISTICS_KIND, STRIPE_STATISTICS_KIND, aes_ctr, stream_iv
from watershed.orc_crypto.codec import compression
from watershed.orc_crypto.codec.stripes import read_stripe_footer, stream_places
from watershed.orc_crypto.codec.tail import OrcTail, decompress, parse_message, read_tail
from watershed.orc_crypto.errors import (
    OrcCryptoError,
    OrcFormatError,
    OrcKeyError,
    OrcOutputError,
    OrcVerifyError,
    UnsupportedOrcError,
)
from watershed.orc_crypto.files import atomic_output, mapped_input
from watershed.orc_crypto.keys.base import KeyProvider, KeyProviderError
from watershed.orc_crypto.proto import orc_proto_pb2 as pb
from watershed.orc_crypto.rewrap_journal import (
    FileState,
    JournalHeader,
    JournalWriter,
    apply_journal,
    journal_path,
    recover_rewrap,
    remove_journal,
)
from watershed.orc_crypto.verify import Expected, verify_written

__all__ = ["RewrapResult", "recover_rewrap", "rewrap_file", "rewrap_needed", "rewrap_to"]


class RewrapResult(BaseModel):
    """What a rewrap of one file did."""

    path: str
    #: False: every key was already at the wanted version (or the file is not encrypted)
    changed: bool
    #: key name -> version, before and after
    versions_before: dict[str, int]
    versions_after: dict[str, int]
    #: bytes re-keyed (encrypted streams, encrypted statistics) and the file's size
    bytes_rekeyed: int = 0
    file_bytes: int = 0
    seconds: float = 0.0


@dataclass
class Written:
    """What a rewrap wrote, to check the temp file against before it replaces the input."""

    expected: Expected
    #: (offset, length, iv, re-keying) of every stripe stream that was re-keyed
    rekeyed: list[tuple[int, int, bytes, _Rekey]] = field(default_factory=list)
    #: where the stripes end (the same in both files)
    content_end: int = 0


class _Rekey:
    """Old and new local key of one rotated variant."""

    def __init__(self, old: bytes, new: bytes, new_encrypted: bytes) -> None:
        self.old, self.new, self.new_encrypted = old, new, new_encrypted

    def apply(self, iv: bytes, data) -> bytes:
        return aes_ctr(self.new, iv, aes_ctr(self.old, iv, bytes(data)))


def _unwrap(path: str, provider: KeyProvider, name: str, version: int, encrypted: bytes, size: int) -> bytes:
    try:
        local = provider.decrypt_local_key(name, version, bytes(encrypted))
    except KeyProviderError as exc:
        raise OrcKeyError(path, f"key {name}@{version}: {exc}") from exc
    if len(local) != size:
        raise OrcKeyError(path, f"key {name}@{version}: local key has {len(local)} bytes, expected {size}")
    return local


def _wanted_versions(
    tail: OrcTail, provider: KeyProvider, key_versions: dict[str, int] | None
) -> dict[str, tuple[int, int]]:
    """key name -> (wanted version, algorithm) for every key the file names."""
    wanted = {}
    for key in tail.footer.encryption.key:
        try:
            info = provider.key_info(key.keyName)
        except KeyProviderError as exc:
            raise OrcKeyError(tail.path, f"key {key.keyName}: {exc}") from exc
        version = info.version if key_versions is None else key_versions.get(key.keyName, key.keyVersion)
        if not 0 <= version <= info.version:
            raise OrcKeyError(tail.path, f"key {key.keyName} has no version {version} (0..{info.version})")
        wanted[key.keyName] = (version, 1 if info.bit_length == 128 else 2)
    return wanted


def _single_local_keys(tail: OrcTail) -> None:
    """One local key per variant and stripe ids 1..n, as one ORC writer writes a file. A merged
    file (ids restarting, several keys per variant) is refused, not half-handled."""
    variants = tail.footer.encryption.variants
    stripe_id = 0
    for s, stripe in enumerate(tail.footer.stripes):
        stripe_id = stripe.encryptStripeId if stripe.HasField("encryptStripeId") else stripe_id + 1
        if stripe_id != s + 1:
            raise UnsupportedOrcError(
                tail.path, "merged file (encrypt stripe ids restart); rewrap handles one writer's files"
            )
        if stripe.encryptedLocalKeys and (
            s > 0
            or [bytes(k) for k in stripe.encryptedLocalKeys] != [bytes(v.encryptedKey) for v in variants]
        ):
            raise UnsupportedOrcError(
                tail.path, "several local keys per variant; rewrap handles one writer's files"
            )


class _Copier:
    """Copies byte ranges of the input to the output unchanged: in the kernel (copy_file_range,
    which also shares blocks on file systems that can) when both are files, else by writing."""

    def __init__(self, data, out, source_fd: int | None) -> None:
        self.data, self.out, self.source_fd = data, out, source_fd
        try:
            self.out_fd = out.fileno() if source_fd is not None and hasattr(os, "copy_file_range") else None
        except (AttributeError, OSError, ValueError):
            self.out_fd = None

    def __call__(self, start: int, end: int) -> None:
        if self.out_fd is not None:
            self.out.flush()
            try:
                while start < end:
                    copied = os.copy_file_range(self.source_fd, self.out_fd, end - start, start)
                    if copied <= 0:
                        break
                    start += copied
            except OSError:
                self.out_fd = None  # e.g. across file systems on old kernels: write instead
        if start < end:
            self.out.write(memoryview(self.data)[start:end])


def rewrap_needed(
    path: str, data, provider: KeyProvider, *, key_versions: dict[str, int] | None = None
) -> RewrapResult:
    """Whether the file needs a rewrap (`changed`), from its tail and the keys' metadata only."""
    tail = read_tail(path, data)
    if not tail.is_encrypted:
        return RewrapResult(path=path, changed=False, versions_before={}, versions_after={})
    before = {key.keyName: key.keyVersion for key in tail.footer.encryption.key}
    wanted = _wanted_versions(tail, provider, key_versions)
    algorithms = {key.keyName: key.algorithm for key in tail.footer.encryption.key}
    return RewrapResult(
        path=path,
        changed=any(wanted[name] != (before[name], algorithms[name]) for name in before),
        versions_before=before,
        versions_after={name: version for name, (version, _) in wanted.items()},
    )


class _FileSink:
    """The whole-file form: unchanged ranges copied through, new bytes written where they go."""

    def __init__(self, out, copy: _Copier) -> None:
        self.out, self.copy, self.position = out, copy, 0

    def stream(self, offset: int, new: bytes) -> None:
        self.copy(self.position, offset)
        self.out.write(new)
        self.position = offset + len(new)

    def tail(self, start: int, new_tail: bytes) -> None:
        self.copy(self.position, start)
        self.out.write(new_tail)


class _JournalSink:
    """The in-place form: only the changed bytes, into the redo journal. The tail is written from
    its first changed byte on (the stripe statistics and Metadata before it often stay)."""

    def __init__(self, data, writer: JournalWriter) -> None:
        self.data, self.writer = data, writer
        self.new_tail = b""
        self.tail_start = self.new_size = 0

    def stream(self, offset: int, new: bytes) -> None:
        self.writer.add(offset, new)

    def tail(self, start: int, new_tail: bytes) -> None:
        old = self.data[start:]
        same = _common_prefix(old, new_tail)
        self.tail_start, self.new_size = start + same, start + len(new_tail)
        self.old_tail_sha256 = hashlib.sha256(old[same:]).hexdigest()
        self.new_tail_sha256 = hashlib.sha256(new_tail[same:]).hexdigest()
        self.new_tail = new_tail
        if same < len(new_tail):
            self.writer.add(start + same, new_tail[same:])


def _common_prefix(a: bytes, b: bytes, step: int = 1 << 16) -> int:
    n, i = min(len(a), len(b)), 0
    while i < n and a[i : min(i + step, n)] == b[i : min(i + step, n)]:
        i += step
    if i >= n:
        return n
    return next(j for j in range(i, min(i + step, n)) if a[j] != b[j])


def rewrap_to(
    path: str,
    data,
    out: BinaryIO,
    provider: KeyProvider,
    *,
    key_versions: dict[str, int] | None = None,
    random_bytes: Callable[[int], bytes] = os.urandom,
    source_fd: int | None = None,
) -> tuple[RewrapResult, Written | None]:
    """Write the rewrapped form of the encrypted ORC file `data` to `out` (nothing is written when
    the file needs no change); returns the result and what was written, for `verify_written`."""
    try:
        sink = _FileSink(out, _Copier(data, out, source_fd))
        return _rewrap_to(path, data, sink, provider, key_versions, random_bytes)
    except OrcCryptoError:
        raise
    except (IndexError, KeyError, ValueError, OverflowError) as exc:
        raise OrcFormatError(path, f"inconsistent file metadata: {exc!r}") from exc


def _rewrap_to(path, data, sink, provider, key_versions, random_bytes):
    result = rewrap_needed(path, data, provider, key_versions=key_versions)
    if not result.changed:
        return result, None
    result.changed = False
    tail = read_tail(path, data)
    encryption = tail.footer.encryption
    wanted = _wanted_versions(tail, provider, key_versions)
    _single_local_keys(tail)
    sizes = {1: 16, 2: 32}
    # Variant -> its re-keying (rotated keys) or its unchanged local key (for the check).
    rekeys: dict[int, _Rekey] = {}
    local_keys: list[bytes] = []
    for v, variant in enumerate(encryption.variants):
        key = encryption.key[variant.key]
        old = _unwrap(path, provider, key.keyName, key.keyVersion, variant.encryptedKey, sizes[key.algorithm])
        _check_key(tail, v, old)
        version, algorithm = wanted[key.keyName]
        if version == key.keyVersion and algorithm == key.algorithm:
            local_keys.append(old)
            continue
        encrypted = random_bytes(sizes[algorithm])
        new = _unwrap(path, provider, key.keyName, version, encrypted, sizes[algorithm])
        rekeys[v] = _Rekey(old, new, encrypted)
        local_keys.append(new)

    written = Written(
        expected=Expected(
            stripe_rows=[stripe.numberOfRows for stripe in tail.footer.stripes],
            local_keys=local_keys,
            source=path,
        ),
        content_end=tail.stripe_statistics_offset,
    )
    # Stripes: kept, except the rotated variants' streams, re-keyed where they lie.
    for s in range(len(tail.footer.stripes)):
        stripe_footer = read_stripe_footer(tail, data, s)
        for place in stream_places(tail, s, stripe_footer):
            rekey = rekeys.get(place.variant) if place.variant is not None else None
            if rekey is None or place.length == 0:
                continue
            iv = stream_iv(place.column, place.kind, s + 1)
            sink.stream(place.offset, rekey.apply(iv, data[place.offset : place.offset + place.length]))
            written.rekeyed.append((place.offset, place.length, iv, rekey))
            result.bytes_rekeyed += place.length

    footer = pb.Footer()
    footer.CopyFrom(tail.footer)
    footer_stripe_id = len(tail.footer.stripes) + 1
    stats_area = bytearray()
    offset = 0
    for v, variant in enumerate(footer.encryption.variants):
        rekey = rekeys.get(v)
        for stream in variant.stripeStatistics:
            raw = tail.encrypted_stripe_statistics[offset : offset + stream.length]
            offset += stream.length
            if rekey is not None:
                raw = rekey.apply(stream_iv(stream.column, STRIPE_STATISTICS_KIND, footer_stripe_id), raw)
                result.bytes_rekeyed += len(raw)
            stats_area += raw
        if rekey is None:
            continue
        variant.encryptedKey = rekey.new_encrypted
        if variant.fileStatistics:
            iv = stream_iv(variant.root, FILE_STATISTICS_KIND, footer_stripe_id)
            variant.fileStatistics = rekey.apply(iv, variant.fileStatistics)
            result.bytes_rekeyed += len(variant.fileStatistics)
    if offset != len(tail.encrypted_stripe_statistics):
        raise OrcFormatError(path, "encrypted stripe statistics do not add up to their area")
    for key in footer.encryption.key:
        key.keyVersion, key.algorithm = wanted[key.keyName]
    first = footer.stripes[0] if footer.stripes else None
    if first is not None and first.encryptedLocalKeys:
        del first.encryptedLocalKeys[:]
        first.encryptedLocalKeys.extend(var.encryptedKey for var in footer.encryption.variants)
    metadata_start = tail.stripe_statistics_offset + len(tail.encrypted_stripe_statistics)
    metadata_bytes = data[metadata_start : metadata_start + tail.postscript.metadataLength]
    footer_bytes = compression.compress(tail.codec, footer.SerializeToString(), tail.block_size)
    postscript = pb.PostScript()
    postscript.CopyFrom(tail.postscript)
    postscript.footerLength = len(footer_bytes)
    ps_bytes = postscript.SerializeToString()
    sink.tail(
        tail.stripe_statistics_offset,
        b"".join((bytes(stats_area), metadata_bytes, footer_bytes, ps_bytes, bytes([len(ps_bytes)]))),
    )
    result.changed = True
    return result, written


def _check_key(tail: OrcTail, v: int, local: bytes) -> None:
    """The file statistics decrypt and parse with the local key: the provider gave the key this
    file was written with (re-keying with a wrong one would destroy the data)."""
    variant = tail.footer.encryption.variants[v]
    if not variant.fileStatistics:
        return
    iv = stream_iv(variant.root, FILE_STATISTICS_KIND, len(tail.footer.stripes) + 1)
    try:
        plain = decompress(
            tail.path,
            tail.codec,
            aes_ctr(local, iv, variant.fileStatistics),
            tail.block_size,
            "file statistics",
        )
        parse_message(pb.FileStatistics(), plain, tail.path, "file statistics")
    except OrcFormatError as exc:
        raise OrcKeyError(
            tail.path, f"variant {v}: the key does not decrypt the file's statistics (wrong key material?)"
        ) from exc


def _same(a, b, start: int, end: int, step: int = 8 << 20) -> bool:
    """a[start:end] == b[start:end], compared in slices (memoryview comparison goes byte by byte)."""
    return all(a[i : min(i + step, end)] == b[i : min(i + step, end)] for i in range(start, end, step))


def _verify_rewrapped(path: str, data, temp: Path, written: Written) -> None:
    """The temp file against the input, cheaper than decompressing every stream and stronger for
    what a rewrap changes: its tail parses with the same stripes and rows, every byte of the
    stripes outside the re-keyed streams is the input's, each re-keyed stream decrypts under the
    new key to exactly what the old key gave, and each variant's file statistics open."""

    def fail(cause: str) -> OrcVerifyError:
        return OrcVerifyError(path, f"verification failed, file left untouched: {cause}")

    with mapped_input(str(temp), OrcVerifyError) as new:
        try:
            tail = read_tail(str(temp), new)
        except OrcCryptoError as exc:
            raise fail(f"file tail: {exc.cause}") from exc
        if [s.numberOfRows for s in tail.footer.stripes] != written.expected.stripe_rows:
            raise fail("row counts differ from the input's")
        if tail.stripe_statistics_offset != written.content_end:
            raise fail("the stripes moved")
        position = 0
        for offset, length, iv, rekey in written.rekeyed:
            if not _same(data, new, position, offset):
                raise fail(f"bytes {position}..{offset} differ from the input's")
            old_plain = aes_ctr(rekey.old, iv, data[offset : offset + length])
            if aes_ctr(rekey.new, iv, new[offset : offset + length]) != old_plain:
                raise fail(f"the stream at {offset} does not decrypt to the input's plaintext")
            position = offset + length
        if not _same(data, new, position, written.content_end):
            raise fail(f"bytes {position}..{written.content_end} differ from the input's")
        for v, local in enumerate(written.expected.local_keys):
            try:
                _check_key(tail, v, local)
            except OrcKeyError as exc:
                raise fail(exc.cause) from exc


def _drop_stale_checksum(path: str) -> None:
    """Hadoop's local file system checks the `.NAME.crc` it wrote beside a file; once the bytes
    change that checksum is stale and Spark refuses the file ("Checksum error"). Without one,
    Hadoop reads the file unchecked. Removed just before the new bytes replace the old."""
    target = Path(path)
    try:
        target.with_name(f".{target.name}.crc").unlink(missing_ok=True)
    except OSError as exc:
        raise OrcOutputError(
            path, f"cannot remove the stale Hadoop checksum file: {exc.strerror or exc}"
        ) from exc


class _TailImage:
    """The rewrapped file as `read_tail` sees it, without building it: the header magic and the
    new tail (all `read_tail` reads)."""

    def __init__(self, data, tail_start: int, new_tail: bytes) -> None:
        self.head, self.start, self.new_tail = bytes(data[:3]), tail_start, new_tail

    def __len__(self) -> int:
        return self.start + len(self.new_tail)

    def __getitem__(self, key):
        if isinstance(key, int):
            return self.new_tail[key - self.start if key >= 0 else key]
        start, stop, _ = key.indices(len(self))
        if stop <= 3:
            return self.head[start:stop]
        if start < self.start:
            raise IndexError(f"bytes {start}..{stop} are not in the new tail")
        return self.new_tail[start - self.start : stop - self.start]


def _verify_new_tail(path: str, data, sink: _JournalSink, written: Written) -> None:
    """Before the file is touched: the new tail parses with the same stripes and rows, and each
    variant's file statistics open with its (new) local key."""

    def fail(cause: str) -> OrcVerifyError:
        return OrcVerifyError(path, f"verification failed, file left untouched: {cause}")

    content_end = written.content_end
    image = _TailImage(data, content_end, sink.new_tail)
    try:
        tail = read_tail(path, image)
    except (OrcCryptoError, IndexError) as exc:
        raise fail(f"file tail: {getattr(exc, 'cause', exc)}") from exc
    if [s.numberOfRows for s in tail.footer.stripes] != written.expected.stripe_rows:
        raise fail("row counts differ from the input's")
    if tail.stripe_statistics_offset != content_end:
        raise fail("the stripes moved")
    for v, local in enumerate(written.expected.local_keys):
        try:
            _check_key(tail, v, local)
        except OrcKeyError as exc:
            raise fail(exc.cause) from exc


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _rewrap_in_place(
    path, data, before, provider, key_versions, random_bytes
) -> tuple[RewrapResult, Written]:
    """Journal every changed byte, then write them into the file under a lock (see
    rewrap_journal); the file is never copied. Closes `data`."""
    journal = journal_path(path)
    writer = JournalWriter(path, journal)
    try:
        sink = _JournalSink(data, writer)
        try:
            result, written = _rewrap_to(path, data, sink, provider, key_versions, random_bytes)
        except OrcCryptoError:
            raise
        except (IndexError, KeyError, ValueError, OverflowError) as exc:
            raise OrcFormatError(path, f"inconsistent file metadata: {exc!r}") from exc
        _verify_new_tail(path, data, sink, written)
        writer.seal(
            JournalHeader(
                dev=before.st_dev,
                inode=before.st_ino,
                mtime_ns=before.st_mtime_ns,
                before=FileState(
                    size=before.st_size, tail_start=sink.tail_start, tail_sha256=sink.old_tail_sha256
                ),
                after=FileState(
                    size=sink.new_size, tail_start=sink.tail_start, tail_sha256=sink.new_tail_sha256
                ),
            )
        )
    except BaseException:
        writer.discard()
        raise
    # From here a crash leaves a sealed journal: the next rewrap of this file replays it.
    with contextlib.suppress(BufferError):
        data.close()  # the file may shrink: no mapping may outlive the truncate
    try:
        try:
            fd = os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise OrcOutputError(path, "removed while it was being rewrapped") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _identity(os.fstat(fd)) != _identity(before):
                raise OrcOutputError(path, "changed while it was being rewrapped; left as it is now")
            _drop_stale_checksum(os.path.realpath(path))
            try:
                apply_journal(path, journal, fd, writer)
            except OSError as exc:
                raise OrcOutputError(
                    path, f"in-place write failed ({exc.strerror or exc}); the next rewrap finishes it"
                ) from exc
        finally:
            os.close(fd)
    except OrcOutputError as exc:
        if "changed while" in exc.cause or "removed while" in exc.cause:
            writer.discard()
        raise
    finally:
        writer.close()
    remove_journal(journal, durable=False)
    return result, written


def rewrap_file(
    path: str | Path,
    provider: KeyProvider,
    *,
    key_versions: dict[str, int] | None = None,
    verify: str = "rekeyed",
    in_place: bool = True,
    random_bytes: Callable[[int], bytes] = os.urandom,
) -> RewrapResult:
    """Move every encryption variant of the ORC file at `path` to its key's current version (or
    the version `key_versions` names); a file already there is left alone.

    `in_place` (the default) writes only the re-keyed bytes and the new tail into the file,
    through a redo journal that makes it crash-safe (a reader opening the file during those
    writes may see a mix of old and new bytes); `in_place=False` writes a whole new file and
    renames it over (readers see old or new, at the cost of copying every byte). A journal a
    crash left behind is replayed (or dropped) first. The file must not change while this runs:
    if it did, it is left as the other writer left it and OrcOutputError is raised."""
    import time

    path = str(path)
    started = time.monotonic()
    recover_rewrap(path)
    try:
        source = open(path, "rb")  # noqa: SIM115 - closed below, after the mapping
    except OSError as exc:
        raise OrcFormatError(path, f"cannot read: {exc.strerror or exc}") from exc
    outcome: list = []
    with source:
        # The mapping, the kernel copies and the change check all go by this one open file.
        before = os.fstat(source.fileno())
        if before.st_size == 0:
            raise OrcFormatError(path, "not an ORC file (empty)")
        data = mmap.mmap(source.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            result = rewrap_needed(path, data, provider, key_versions=key_versions)
            if not result.changed:
                result.file_bytes = len(data)
                result.seconds = time.monotonic() - started
                return result
            if in_place:
                result, written = _rewrap_in_place(path, data, before, provider, key_versions, random_bytes)
                if verify != "rekeyed":  # a full check can only read the file once it is written
                    verify_written(path, path, written.expected, verify)
                result.file_bytes = os.stat(path).st_size
                result.seconds = time.monotonic() - started
                return result

            def check(temp: Path) -> None:
                if verify == "rekeyed":
                    _verify_rewrapped(path, data, temp, outcome[0][1])
                else:
                    verify_written(path, temp, outcome[0][1].expected, verify)
                try:
                    now = os.stat(path)
                except OSError as exc:
                    raise OrcOutputError(path, "removed while it was being rewrapped") from exc
                if _identity(now) != _identity(before):
                    raise OrcOutputError(path, "changed while it was being rewrapped; left as it is now")
                _drop_stale_checksum(os.path.realpath(path))

            with atomic_output(os.path.realpath(path), mode=before.st_mode, verify=check) as out:
                outcome.append(
                    rewrap_to(
                        path,
                        data,
                        out,
                        provider,
                        key_versions=key_versions,
                        random_bytes=random_bytes,
                        source_fd=source.fileno(),
                    )
                )
        finally:
            with contextlib.suppress(BufferError):
                data.close()
    result = outcome[0][0]
    result.file_bytes = os.stat(path).st_size
    result.seconds = time.monotonic() - started
    return result
