"""How to start a propagation worker process (the CLI, the demo, the benchmark and the tests do)."""

from __future__ import annotations

import sys


def worker_argv(
    concurrency: int = 2, *, name: str | None = None, loglevel: str = "WARNING", pool: str | None = None
) -> list[str]:
    """The command line of a Celery worker for `propagation.celery_app`, run by this Python."""
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "watershed.propagation.celery_app",
        "worker",
        f"--concurrency={concurrency}",
        f"--loglevel={loglevel}",
        # no gossip or mingle: workers need not know each other, and start faster without
        "--without-gossip",
        "--without-mingle",
    ]
    if pool is not None:
        argv.append(f"--pool={pool}")
    if name is not None:
        argv += ["-n", name]
    return argv
