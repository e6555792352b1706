"""The API server and a worker as background services of `watershed services up|down|status`
(graph/background.py: recorded processes, a reused pid never signalled), under DATA_DIR/api
and DATA_DIR/worker."""

from __future__ import annotations

import sys

from watershed.graph.background import BackgroundProcess


def api_service(settings) -> BackgroundProcess:
    """`watershed serve` on the configured host and port, under DATA_DIR/api."""
    return BackgroundProcess(
        "api",
        [
            sys.executable,
            "-m",
            "watershed.api.cli",
            "serve",
            "--host",
            settings.api_host,
            "--port",
            str(settings.api_port),
        ],
        settings.data_dir / "api",
        settings.api_host,
        settings.api_port,
    )


def worker_service(settings, concurrency: int = 2) -> BackgroundProcess:
    """One Celery worker for propagation batches, under DATA_DIR/worker."""
    from watershed.api.celery_app import worker_argv

    return BackgroundProcess(
        "worker",
        worker_argv(concurrency, name=f"watershed-{settings.api_port}@%h"),
        settings.data_dir / "worker",
    )
