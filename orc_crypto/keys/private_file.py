"""Writing a secret file (keystore, KMS secret, token file) so that a crash never leaves half of one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def fsync_directory(directory: Path) -> None:
    """Make a rename in `directory` durable: without it a power loss can undo the rename."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_private(path: Path, data: bytes) -> None:
    """Temp file (0600 from its creation) + fsync + rename + directory fsync: the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)
