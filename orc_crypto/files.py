"""Writing output files so that a failure or a crash never leaves a partial one."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
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


def write_atomically(target: str | Path, payload) -> None:
    """Write `payload` (bytes, or an iterable of byte chunks) to `target` through `atomic_output`."""
    with atomic_output(target) as handle:
        if isinstance(payload, (bytes, bytearray, memoryview)):
            handle.write(payload)
        else:
            handle.writelines(payload)
