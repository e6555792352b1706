"""The steward service on a two-table warehouse of real ORC files (pyarrow) with the test KMS: the
`protect_api` fixture of the protection tests over HTTP (tests/api/http/test_protection_api.py) and
in the browser (tests/web/test_protection_ui.py). A pytest plugin: tests/conftest.py registers it."""

from __future__ import annotations

import itertools
import time

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from tests.support.api_service import USERS, Api, ThreadServer, make_settings, propagate_locally
from watershed.graph.server import free_port

_graphs = itertools.count()
ROWS = 30
TASKS = {"t_copy": "INSERT OVERWRITE TABLE sec.people_copy SELECT id, ssn AS ssn_c, name FROM sec.people"}


def _rows() -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "ssn": [f"{100000000 + i * 7919:09d}" for i in range(ROWS)],
            "email": [f"user{i}@example.com" for i in range(ROWS)],
            "name": [f"name-{i}" for i in range(ROWS)],
        }
    )


def write_warehouse(root) -> dict[str, list]:
    """sec.people (id, ssn, email, name) and sec.people_copy (id, ssn_c, name), two ORC partitions each."""
    files: dict[str, list] = {"sec.people": [], "sec.people_copy": []}
    copy = _rows().select(["id", "ssn", "name"]).rename_columns(["id", "ssn_c", "name"])
    for table, data in (("sec.people", _rows()), ("sec.people_copy", copy)):
        for dt in ("2024-01-01", "2024-01-02"):
            directory = root / table.replace(".", "/") / f"dt={dt}"
            directory.mkdir(parents=True)
            path = directory / "part-0.orc"
            orc.write_table(data, path)
            files[table].append(path)
    return files


def catalog(root) -> dict:
    def table(columns):
        return {"columns": columns, "format": "orc"}

    people = table({"id": "bigint", "ssn": "string", "email": "string", "name": "string"})
    copy = table({"id": "bigint", "ssn_c": "string", "name": "string"})
    people["location"] = str(root / "sec" / "people")
    copy["location"] = str(root / "sec" / "people_copy")
    return {"tables": {"sec.people": people, "sec.people_copy": copy}}


@pytest.fixture(scope="module")
def protect_api(falkordb_server, celery_redis, kms_server, tmp_path_factory):
    """The service on a two-table warehouse of real ORC files, its KMS the test KMS."""
    from watershed.api.http.app import create_app
    from watershed.api.service.accounts.store import AccountStore
    from watershed.graph.catalog import Catalog
    from watershed.graph.falkordb_store import FalkorDBStore
    from watershed.graph.lineage import SqlTask
    from watershed.ingest.extract import extract_lineage

    name = f"protect_api_{next(_graphs)}"
    store = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=name)
    store.ensure_schema()
    root = tmp_path_factory.mktemp("warehouse")
    files = write_warehouse(root)
    settings = make_settings(falkordb_server, celery_redis, name, tmp_path_factory.mktemp("protect-data"))
    settings = settings.model_copy(update={"protect_kms": kms_server.provider_path})
    cat = Catalog.from_dict(catalog(root))
    store.upsert_catalog(cat)
    store.upsert_tasks(
        [
            (SqlTask(task_id=t, sql=sql), extract_lineage(SqlTask(task_id=t, sql=sql), cat))
            for t, sql in TASKS.items()
        ],
        cat,
    )
    propagate_locally(store, settings)
    accounts = AccountStore(store)
    tokens = {}
    for user, (role, databases) in USERS.items():
        accounts.add(user, role, databases, actor="test")
        tokens[user] = accounts.create_token(user, "test").token
    port = free_port()
    app = create_app(settings, store)
    server = ThreadServer(app, port)
    server.start()
    try:
        api = Api(url=f"http://127.0.0.1:{port}", graph=store, settings=settings, tokens=tokens)
        api.files, api.app = files, app  # type: ignore[attr-defined]
        yield api
    finally:
        server.stop()
        store.clear()
        store.close()


def wait_for(client, run_id: str, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = client.get(f"/protect/runs/{run_id}").json()
        if run["status"] != "running":
            return run
        time.sleep(0.1)
    raise AssertionError(f"protection run {run_id} did not end within {timeout} s")


def held(path) -> dict[str, tuple[str, str, int]]:
    from watershed.orc_crypto.codec.tail import read_tail
    from watershed.orc_crypto.protect.tails import file_protection

    return {n: (k.key, k.mask, k.version) for n, k in file_protection(read_tail(path)).items()}
