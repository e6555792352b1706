"""Stopping the process groups tests start (workers, the API, `watershed demo`)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess


def stop_group(process: subprocess.Popen, timeout: float = 30.0) -> None:
    """SIGTERM the process's group, SIGKILL it if it is still there after `timeout` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
