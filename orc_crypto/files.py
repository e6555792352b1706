"""Input files mapped instead of read; output files written so that a failure never leaves a partial one."""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


@contextmanager
def atomic_output(target: str | Path) -> Iterator[BinaryIO]:
    """A temp file beside `target`; on success it is fsynced and renamed over `target`.

    On an exception (or a crash) the temp file goes and whatever `target` held before
    stays as it was.
    """
    target = Path(target)
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


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
