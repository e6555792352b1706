"""The redo journal of an in-place rewrap: every (offset, bytes) write and the file's new length,
durable before the first byte of the file is touched, so a crash at any point is repaired by
writing the same bytes again.

Layout of `.NAME.rewrap-journal` (the leading dot: Spark and Hive skip it):

    MAGIC, records (u64 offset, u64 length, bytes)..., u64 END, u32 header length, header JSON,
    sha256 of everything before it

The header (identity of the file before and after) comes last because the new tail is only
known once the records are out. A journal whose checksum does not match was being written when
the process died: the file was not touched yet, and the journal is simply dropped.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import mmap
import os
import struct
import sys
import time
from pathlib import Path

from pydantic import BaseModel

from watershed.orc_crypto.errors import OrcOutputError
from watershed.orc_crypto.files import fsync_directory

MAGIC = b"WSRWJ\x01\n\x00"
_RECORD = struct.Struct(">QQ")
_END = 0xFFFFFFFFFFFFFFFF
_HEADER_LENGTH = struct.Struct(">I")
_DIGEST = 32
#: test hook: stop (and wait to be killed) before the N-th in-place write, N counted from 0
CRASH_HOOK = "WATERSHED_REWRAP_CRASH_AFTER_WRITES"


class FileState(BaseModel):
    """What the file looks like, to tell it apart from a replaced one."""

    size: int
    #: where the rewritten tail starts, and the sha256 of the file from there to its end
    tail_start: int
    tail_sha256: str


class JournalHeader(BaseModel):
    dev: int
    inode: int
    mtime_ns: int
    before: FileState
    after: FileState


def journal_path(path: str | Path) -> Path:
    target = Path(os.path.realpath(path))
    return target.with_name(f".{target.name}.rewrap-journal")


class JournalWriter:
    """Writes the journal record by record (nothing is held in memory); `seal` makes it durable.
    The journal is flock'ed while it is written, so a concurrent recovery does not mistake it
    for a crashed one."""

    def __init__(self, target: str, journal: Path) -> None:
        self.target, self.path = target, journal
        try:
            fd = os.open(journal, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        except FileExistsError as exc:
            raise OrcOutputError(target, "another rewrap of this file is under way") from exc
        except OSError as exc:
            raise OrcOutputError(target, f"cannot write the rewrap journal: {exc.strerror or exc}") from exc
        self.handle = os.fdopen(fd, "wb")
        fcntl.flock(fd, fcntl.LOCK_EX)
        self.digest = hashlib.sha256()
        self.position = 0
        #: (offset in the file, start in the journal, length) of every record, for `apply_journal`
        self.records: list[tuple[int, int, int]] = []
        self.header: JournalHeader | None = None
        self._write(MAGIC)

    def _write(self, chunk) -> None:
        self.digest.update(chunk)
        self.handle.write(chunk)
        self.position += len(chunk)

    def add(self, offset: int, data) -> None:
        self._write(_RECORD.pack(offset, len(data)))
        self.records.append((offset, self.position, len(data)))
        self._write(data)

    def seal(self, header: JournalHeader) -> None:
        self.header = header
        encoded = header.model_dump_json().encode()
        self._write(_RECORD.pack(_END, 0) + _HEADER_LENGTH.pack(len(encoded)) + encoded)
        self.handle.write(self.digest.digest())
        self.handle.flush()
        os.fsync(self.handle.fileno())
        fsync_directory(self.path.parent)

    def discard(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.handle.close()


def _parse(data) -> tuple[JournalHeader, list[tuple[int, int, int]]] | None:
    """(header, [(offset in the file, start in the journal, length)]), or None if incomplete."""
    if len(data) < len(MAGIC) + _RECORD.size + _HEADER_LENGTH.size + _DIGEST or data[: len(MAGIC)] != MAGIC:
        return None
    with memoryview(data) as view:
        if hashlib.sha256(view[:-_DIGEST]).digest() != data[-_DIGEST:]:
            return None
    records, position = [], len(MAGIC)
    while True:
        offset, length = _RECORD.unpack_from(data, position)
        position += _RECORD.size
        if offset == _END:
            break
        records.append((offset, position, length))
        position += length
    (header_length,) = _HEADER_LENGTH.unpack_from(data, position)
    position += _HEADER_LENGTH.size
    header = JournalHeader.model_validate_json(bytes(data[position : position + header_length]))
    return header, records


def _crash_hook(count: int) -> None:
    stop = os.environ.get(CRASH_HOOK)
    if stop is not None and int(stop) == count:
        print("rewrap-stopped", flush=True)
        sys.stdout.flush()
        while True:  # the test kills the process here
            time.sleep(60)


def apply_journal(target: str, journal: Path, fd: int, sealed: JournalWriter | None = None) -> None:
    """Write every record of the (sealed, valid) journal into the file open at `fd`, truncate it
    to its new length and fsync it. Idempotent: the same bytes land at the same places.
    `sealed`: the writer that just wrote the journal (its records need no second check)."""
    with open(journal, "rb") as handle:
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            if sealed is not None and sealed.header is not None:
                header, records = sealed.header, sealed.records
            else:
                parsed = _parse(data)
                if parsed is None:
                    raise OrcOutputError(target, "the rewrap journal is incomplete")
                header, records = parsed
            view = memoryview(data)
            try:
                for count, (offset, start, length) in enumerate(records):
                    _crash_hook(count)
                    chunk = view[start : start + length]
                    while chunk:
                        written = os.pwrite(fd, chunk, offset)
                        chunk, offset = chunk[written:], offset + written
                _crash_hook(len(records))
            finally:
                view.release()
        finally:
            with contextlib.suppress(BufferError):
                data.close()
    os.ftruncate(fd, header.after.size)
    os.fsync(fd)


def remove_journal(journal: Path, *, durable: bool = True) -> None:
    """`durable=False` after a successful apply: if the removal is lost in a crash, the next
    rewrap replays the journal onto the file it already describes, which changes nothing."""
    journal.unlink(missing_ok=True)
    if durable:
        fsync_directory(journal.parent)


def recover_rewrap(path: str | Path) -> bool:
    """Finish (or drop) the in-place rewrap a crash interrupted; True if a journal was replayed.

    A complete journal for this very file (same device and inode) is replayed; an incomplete one
    means the crash came before the file was touched, and a journal for another file (the path
    was replaced since) no longer applies: both are removed and the file is left alone."""
    path = str(path)
    journal = journal_path(path)
    try:
        handle = open(journal, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise OrcOutputError(path, f"cannot read the rewrap journal: {exc.strerror or exc}") from exc
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise OrcOutputError(path, "another rewrap of this file is under way") from exc
        raw = handle.read()
        parsed = _parse(raw)
        if parsed is None:
            remove_journal(journal)
            return False
        header = parsed[0]
        try:
            fd = os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            remove_journal(journal)
            return False
        except OSError as exc:
            raise OrcOutputError(path, f"cannot open to finish its rewrap: {exc.strerror or exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            now = os.fstat(fd)
            if (now.st_dev, now.st_ino) != (header.dev, header.inode):
                remove_journal(journal)
                return False
            apply_journal(path, journal, fd)
        finally:
            os.close(fd)
        remove_journal(journal)
        return True
