"""The steward service's pieces the tests share: the bundled sample warehouse loaded and propagated,
the service's settings on the session's servers, uvicorn in a thread, and the users every API test
can act as (the `api` fixture, tests/api/conftest.py, puts them together)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import httpx
import uvicorn

SAMPLE_DATE = "2024-01-31"


def load_sample_warehouse(store) -> None:
    from watershed.graph.catalog import Catalog
    from watershed.graph.lineage import SqlTask
    from watershed.ingest.extract import extract_lineage

    samples = resources.files("watershed.ingest") / "samples" / "warehouse"
    catalog = Catalog.from_dict(
        __import__("json").loads((samples / "catalog.json").read_text()), source="catalog.json"
    )
    store.upsert_catalog(catalog)
    items = []
    for script in sorted(p for p in samples.iterdir() if p.name.endswith(".sql")):
        task = SqlTask(
            task_id=script.name.removesuffix(".sql"), sql=script.read_text(), vars={"date": SAMPLE_DATE}
        )
        items.append((task, extract_lineage(task, catalog)))
    store.upsert_tasks(items, catalog)


def propagate_locally(store, settings) -> None:
    from watershed.propagation.coordinator import local_runner, propagate
    from watershed.propagation.policy import default_policy
    from watershed.propagation.run_state import RunState

    state = RunState.from_url(settings.broker_url(), settings.graph_name)
    propagate(store, default_policy(), state, local_runner, full=True, settings=settings)


class ThreadServer:
    """uvicorn in a thread of the test process (no signal handlers), stopped by `stop()`."""

    def __init__(self, app, port: int) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=port, access_log=False, log_level="warning")
        self.server = uvicorn.Server(config)
        self.server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the API server did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@dataclass
class Api:
    url: str
    graph: object
    settings: object
    tokens: dict[str, str] = field(default_factory=dict)

    def client(self, who: str | None = None, **kwargs) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"} if who else {}
        return httpx.Client(base_url=self.url + "/api/v1", headers=headers, timeout=60, **kwargs)


#: the users every API test can act as: name -> (role, databases)
USERS = {
    "admin": ("admin", None),
    "steward": ("steward", None),
    "viewer": ("viewer", None),
    "ods_steward": ("steward", ["ods"]),
    "ods_admin": ("admin", ["ods"]),
}


def make_settings(falkordb_server, celery_redis, graph_name: str, data_dir: Path):
    from watershed.api.http.settings import ApiSettings

    return ApiSettings(
        falkordb_port=falkordb_server.port,
        graph_name=graph_name,
        celery_broker=f"redis://127.0.0.1:{celery_redis.port}/0",
        data_dir=data_dir,
        propagation_stall_seconds=30,
    )
