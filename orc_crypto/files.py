"""Input files mapped instead of read; output files written so that a failure never leaves a partial one.

Outputs go to a temp file beside the target, named `.<target>.<pid>.<random>.tmp` so that a
later run can tell a temp file of ours whose writer died (and remove it) from one still being
written. The temp file is created with mode 0666 masked by the umask, like any new file, or
with the input's mode when the input itself is replaced (`--in-place`).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from watershed.orc_crypto.errors import OrcOutputError


def _temp_pattern(target: Path) -> re.Pattern[str]:
    return re.compile(rf"^\.{re.escape(target.name)}\.(\d+)\.[0-9a-f]{{16}}\.tmp$")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive
    return True


def remove_stale_temps(target: str | Path) -> list[Path]:
    """Remove temp files of our naming for `target` whose writing process is gone; returns them."""
    target = Path(target)
    pattern = _temp_pattern(target)
    removed: list[Path] = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.match(entry.name)
        if match and not _alive(int(match[1])):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
    return removed


def check_output(source: str | Path, target: str | Path, *, in_place: bool = False) -> Path:
    """The path to write for `target`, checked before any work: its directory exists, it is not a
    directory, and it is not the input (same device and inode, so `./x`, absolute paths, hard
    and symbolic links all count) unless `in_place`; then the input's real path is returned
    (replacing a symlink to the input would leave the input as it was)."""
    target = Path(target)
    try:
        target_stat = os.stat(target)
    except FileNotFoundError:
        target_stat = None
    except OSError as exc:
        raise OrcOutputError(target, f"cannot write the output: {exc.strerror or exc}") from exc
    if target_stat is not None and stat.S_ISDIR(target_stat.st_mode):
        raise OrcOutputError(target, "is a directory; give the output file's path")
    parent = target.parent
    if not parent.is_dir():
        raise OrcOutputError(target, f"cannot write the output: directory {parent} does not exist")
    try:
        source_stat = os.stat(source)
    except OSError:
        source_stat = None  # reported as the input's error when it is opened
    same = (
        target_stat is not None
        and source_stat is not None
        and (target_stat.st_dev, target_stat.st_ino) == (source_stat.st_dev, source_stat.st_ino)
    )
    if same and not in_place:
        raise OrcOutputError(
            target, f"is the input file {source}; give another output or --in-place to replace the input"
        )
    if in_place and not same:
        raise OrcOutputError(target, f"--in-place needs the output to be the input file {source}")
    return Path(os.path.realpath(target)) if same else target


@contextmanager
def atomic_output(
    target: str | Path,
    *,
    mode: int | None = None,
    verify: Callable[[Path], None] | None = None,
) -> Iterator[BinaryIO]:
    """A temp file beside `target`; on success it is fsynced, checked by `verify(temp path)`, and
    renamed over `target` (then the directory is fsynced).

    On an exception (or a crash) the temp file goes (a crashed run's is removed by the next
    run for the same target) and whatever `target` held before stays as it was. `mode` is the
    new file's mode; by default 0666 masked by the umask.
    """
    target = Path(target)
    parent = target.parent
    remove_stale_temps(target)
    temp = parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(8)}.tmp"
    try:
        # O_EXCL: never write through a file (or a planted link) that is already there
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        raise OrcOutputError(target, f"cannot write the output: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), stat.S_IMODE(mode))
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if verify is not None:
            verify(temp)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_directory(parent)


def fsync_directory(directory: Path) -> None:
    """Make a rename (or a removal) in `directory` durable; file systems that cannot fsync a
    directory are tolerated."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse to fsync a directory
    finally:
        os.close(fd)


@contextmanager
def mapped_input(source: str, error: Callable[[str, str], Exception]) -> Iterator[mmap.mmap | bytes]:
    """The file's bytes, memory-mapped (b"" for an empty file): streams copied from it go from
    the page cache to the output without a copy in between. `error(path, cause)` builds the
    exception for a file that cannot be opened."""
    try:
        handle = open(source, "rb")  # noqa: SIM115 - closed below, after the mapping
    except OSError as exc:
        raise error(source, f"cannot read: {exc.strerror or exc}") from exc
    with handle:
        if os.fstat(handle.fileno()).st_size == 0:
            yield b""
            return
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            yield mapped
        finally:
            # A view of the mapping may still be referenced (an exception's traceback can hold
            # one); the mapping is then closed when the last view goes.
            with contextlib.suppress(BufferError):
                mapped.close()


def write_atomically(target: str | Path, payload) -> None:
    """Write `payload` (bytes, or an iterable of byte chunks) to `target` through `atomic_output`."""
    with atomic_output(target) as handle:
        if isinstance(payload, (bytes, bytearray, memoryview)):
            handle.write(payload)
        else:
            handle.writelines(payload)
