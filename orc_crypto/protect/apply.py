"""One file of a protection plan rewritten in place, safely.

The rewrite goes to a temp file beside the target under a name Spark and Hive skip (a leading
`.`, see `orc_crypto.files`), is fsynced, read back (tail, row counts per stripe, every stream
decompresses) and only then renamed over the target; the directory is fsynced after. Whatever
fails, the input stays byte-identical and no temp file is left behind (a killed writer's temp is
removed by the next run for the same file).

A file is never clobbered: if its size or modification time differ from the plan's it is
skipped and reported. A file whose tail already holds exactly what the plan asks for (a repeated
or resumed apply) is left alone and reported unchanged, without writing.
"""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, Literal

from watershed.graph.protection import ColumnKey, FilePlan, FileProblem, ProtectedFile
from watershed.orc_crypto.codec.tail import OrcTail, read_tail
from watershed.orc_crypto.decrypt import decrypt_to
from watershed.orc_crypto.encrypt import encrypt_to, resolve_column
from watershed.orc_crypto.errors import OrcCryptoError, OrcFormatError
from watershed.orc_crypto.files import atomic_output, mapped_input, remove_stale_temps
from watershed.orc_crypto.keys.base import KeyProvider, KeyProviderError
from watershed.orc_crypto.options import OptionError, parse_mask
from watershed.orc_crypto.protect.tails import file_protection
from watershed.orc_crypto.rewrap_journal import recover_rewrap
from watershed.orc_crypto.verify import Expected, verify_written

FileStatus = Literal["done", "unchanged", "skipped", "failed"]


@dataclass
class FileOutcome:
    """What happened to one planned file: `record` for done and unchanged, `problem` otherwise."""

    status: FileStatus
    path: str
    table: str
    record: ProtectedFile | None = None
    problem: FileProblem | None = None
    #: bytes written (the new file's size) when done
    bytes_written: int = 0


class FileChangedError(OrcCryptoError):
    """The file is not the one that was planned (size or modification time differ)."""


def _same_mask(left: str, right: str) -> bool:
    try:
        a, b = parse_mask(left), parse_mask(right)
    except OptionError:
        return left.strip() == right.strip()
    return (a.name.lower(), a.parameters) == (b.name.lower(), b.parameters)


def holds_exactly(tail: OrcTail, wanted: dict[str, ColumnKey]) -> bool:
    """The file's encryption is what `wanted` asks: the same columns, keys and masks (and key
    versions, where `wanted` names one)."""
    have = {resolve_column(tail, name): key for name, key in file_protection(tail).items()}
    want = {resolve_column(tail, name): key for name, key in wanted.items()}
    if have.keys() != want.keys():
        return False
    for column, key in want.items():
        current = have[column]
        if key.key != current.key or not _same_mask(key.mask, current.mask):
            return False
        if key.version is not None and key.version != current.version:
            return False
    return True


class _HashingWriter:
    """Counts and hashes what goes through to the temp file, so the record's checksum needs no re-read."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, chunk) -> int:
        self.digest.update(chunk)
        self.size += len(chunk)
        return self.handle.write(chunk)

    def writelines(self, chunks) -> None:
        for chunk in chunks:
            self.write(chunk)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def protect_file(
    file: FilePlan, provider: KeyProvider, *, run: str, table: str, known: ProtectedFile | None = None
) -> FileOutcome:
    """Rewrite one planned file so it holds `file.columns` encrypted (an empty map: plaintext).

    Never raises for a bad file: a file that changed since the plan is `skipped`, any other
    failure is `failed` with the cause, and the file is left as it was. `known` is the graph's
    record of the file, if any: an unchanged file of the same size and mtime keeps its checksum
    instead of being read whole again.
    """
    path = file.path
    remove_stale_temps(path)  # a killed run's temp for this file
    try:
        return _protect(file, provider, run=run, table=table, known=known)
    except FileChangedError as exc:
        return FileOutcome(
            "skipped", path, table, problem=FileProblem(path=path, table=table, error=exc.cause)
        )
    except (OrcCryptoError, KeyProviderError, OSError) as exc:
        message = str(exc) if isinstance(exc, OrcCryptoError) else f"{path}: {exc}"
        return FileOutcome("failed", path, table, problem=FileProblem(path=path, table=table, error=message))


def _check_unchanged(file: FilePlan, what: str) -> None:
    try:
        now = os.stat(file.path)
    except FileNotFoundError as exc:
        raise FileChangedError(file.path, f"{what}: the file no longer exists") from exc
    if (now.st_size, now.st_mtime_ns) != (file.size, file.mtime_ns):
        raise FileChangedError(
            file.path,
            f"{what}: changed since the plan (size {file.size} -> {now.st_size}, "
            f"mtime_ns {file.mtime_ns} -> {now.st_mtime_ns}); left alone",
        )


def _protect(
    file: FilePlan, provider: KeyProvider, *, run: str, table: str, known: ProtectedFile | None
) -> FileOutcome:
    path = file.path
    if not os.path.exists(path):
        raise FileChangedError(path, "the file no longer exists")
    # A rewrap killed half-way through its in-place writes is finished first (its journal is
    # complete) or dropped (it is not): either way the file is whole again before it is read. If
    # that changed the file, the size/mtime check below reports it as changed since the plan.
    recover_rewrap(path)
    with mapped_input(path, OrcFormatError) as data:
        tail = read_tail(path, data)
        if holds_exactly(tail, file.columns):
            stat = os.stat(path)
            same = known is not None and (known.path, known.size, known.mtime_ns) == (
                path,
                stat.st_size,
                stat.st_mtime_ns,
            )
            record = ProtectedFile(
                path=path,
                table=table,
                columns=file_protection(tail),
                size=stat.st_size,
                mtime_ns=stat.st_mtime_ns,
                sha256=known.sha256 if same else hashlib.sha256(data).hexdigest(),
                at=_now(),
                run=run,
            )
            return FileOutcome("unchanged", path, table, record=record)
        _check_unchanged(file, "before the rewrite")
        mode = os.stat(path).st_mode
        rows = [stripe.numberOfRows for stripe in tail.footer.stripes]
        written: list[Expected] = []

        def verify(temp: Path) -> None:
            verify_written(path, temp, written[0] if written else Expected(stripe_rows=rows))
            # the narrowest window we can give a concurrent writer: checked again just before the swap
            _check_unchanged(file, "at the swap")
            _drop_hadoop_checksum(path)

        with atomic_output(path, mode=mode, verify=verify) as handle:
            out = _HashingWriter(handle)
            written.extend(_rewrite(path, data, tail, out, provider, file.columns))
    stat = os.stat(path)
    with mapped_input(path, OrcFormatError) as result:
        columns = file_protection(read_tail(path, result))
    record = ProtectedFile(
        path=path,
        table=table,
        columns=columns,
        size=stat.st_size,
        mtime_ns=stat.st_mtime_ns,
        sha256=out.digest.hexdigest(),
        at=_now(),
        run=run,
    )
    return FileOutcome("done", path, table, record=record, bytes_written=out.size)


def _drop_hadoop_checksum(path: str) -> None:
    """Remove the `.NAME.crc` Hadoop's local filesystem keeps beside a file it wrote: it describes
    the old bytes, and Spark would refuse the new ones (ChecksumException). Without it Hadoop reads
    the file unchecked; the record's sha256 stands in. Removed before the swap, so no crash can
    leave the new file beside the old checksum."""
    target = Path(path)
    Path(target.parent, f".{target.name}.crc").unlink(missing_ok=True)


def _rewrite(path: str, data, tail: OrcTail, out, provider: KeyProvider, columns: dict[str, ColumnKey]):
    """Write the file as `columns` asks to `out`; returns what to verify (none: default checks).

    An encrypted input is decrypted first, in memory (plaintext of sensitive columns never
    touches the disk), then encrypted as wanted: columns that stay encrypted get fresh local
    keys under their key's current version.
    """
    encrypt: dict[str, list[str]] = {}
    masks: dict[str, str] = {}
    for name, key in sorted(columns.items()):
        encrypt.setdefault(key.key, []).append(name)
        masks[name] = key.mask
    if not tail.is_encrypted:
        return [encrypt_to(path, data, out, provider, encrypt, masks, workers=1)]
    if not encrypt:
        decrypt_to(path, data, out, provider)
        return []
    plain = io.BytesIO()
    decrypt_to(path, data, plain, provider)
    expected = encrypt_to(path, plain.getbuffer(), out, provider, encrypt, masks, workers=1)
    expected.source, expected.source_columns = None, []  # the plaintext is in memory only
    return [expected]


def rewrap_recorded_file(record: ProtectedFile, provider: KeyProvider, *, run: str) -> FileOutcome:
    """Move a protected file's local keys to its master keys' current versions (`orc_crypto.rewrap`:
    only encrypted bytes change) and renew its record. A file already there is `unchanged`; one
    gone or changed meanwhile is `skipped`; any other failure is `failed` and the file left as it was."""
    from watershed.orc_crypto.errors import OrcOutputError
    from watershed.orc_crypto.rewrap import rewrap_file

    path, table = record.path, record.table
    remove_stale_temps(path)
    try:
        if not os.path.exists(path):
            raise FileChangedError(path, "the file no longer exists")
        result = rewrap_file(path, provider)
        stat = os.stat(path)
        same = (stat.st_size, stat.st_mtime_ns) == (record.size, record.mtime_ns)
        if not result.changed and same:
            return FileOutcome("unchanged", path, table, record=record)
        with mapped_input(path, OrcFormatError) as data:
            columns = file_protection(read_tail(path, data))
            digest = hashlib.sha256(data).hexdigest()
    except (FileChangedError, OrcOutputError) as exc:
        return FileOutcome(
            "skipped", path, table, problem=FileProblem(path=path, table=table, error=exc.cause)
        )
    except (OrcCryptoError, KeyProviderError, OSError) as exc:
        message = str(exc) if isinstance(exc, OrcCryptoError) else f"{path}: {exc}"
        return FileOutcome("failed", path, table, problem=FileProblem(path=path, table=table, error=message))
    renewed = ProtectedFile(
        path=path,
        table=table,
        columns=columns,
        size=stat.st_size,
        mtime_ns=stat.st_mtime_ns,
        sha256=digest,
        at=_now(),
        run=run,
    )
    status: FileStatus = "done" if result.changed else "unchanged"
    return FileOutcome(status, path, table, record=renewed, bytes_written=result.bytes_rekeyed)
