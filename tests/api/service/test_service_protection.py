"""Which KMS a protection run talks to is one rule (graph/protection.kms_uri): the CLI and the HTTP
API, given the same policy and the same KMS (the CLI's --kms, the service's WATERSHED_PROTECT_KMS),
plan with the same provider path, on a catalog with a table to protect and on an empty one.

Real FalkorDB, Redis (the propagation run state) and KMS fixtures; the CLI through its Typer app,
the API through the app itself (FastAPI's test client, a real request cycle).
"""

from __future__ import annotations

import itertools

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from typer.testing import CliRunner

from tests.api.conftest import make_settings, propagate_locally
from watershed.graph.protection import KmsUriError, ddl_provider_path, kms_uri
from watershed.propagation.policy import DEFAULT_POLICY_YAML

_graphs = itertools.count()
JCEKS = "jceks://file/etc/watershed/keys.jceks"
CATALOG = {"tables": {"sec.people": {"columns": {"id": "bigint", "ssn": "string"}, "format": "orc"}}}


def test_the_rule_explicit_then_the_policys_kms_then_none():
    kms = "kms://http@127.0.0.1:9600/kms"
    other = "kms://http@10.0.0.1:9600/kms"
    assert kms_uri(kms, other) == kms
    assert kms_uri(None, other) == other
    assert kms_uri("", other) == other
    # a keystore file is not a KMS to ask; the DDL may still name it
    assert kms_uri(None, JCEKS) is None and ddl_provider_path(None, JCEKS) == JCEKS
    assert kms_uri(None, None) is None and ddl_provider_path(None, None) is None
    assert ddl_provider_path(kms, JCEKS) == kms
    with pytest.raises(KmsUriError, match=f"WATERSHED_PROTECT_KMS {JCEKS}: expected a kms://"):
        kms_uri(JCEKS, other, given_as="WATERSHED_PROTECT_KMS")


def test_the_service_setting_is_refused_unless_it_names_a_kms():
    from watershed.api.service.settings import ApiSettings

    with pytest.raises(ValidationError, match="protect_kms"):
        ApiSettings(protect_kms=JCEKS)


@pytest.fixture(scope="module")
def graphs(falkordb_server, celery_redis, tmp_path_factory):
    """Two graphs: `people` (sec.people with ssn, tagged pii=L4 by propagation) and `empty`."""
    from watershed.graph.catalog import Catalog
    from watershed.graph.falkordb_store import FalkorDBStore

    made = {}
    for kind in ("people", "empty"):
        store = FalkorDBStore(
            falkordb_server.host, falkordb_server.port, graph=f"kms_rule_{kind}_{next(_graphs)}"
        )
        store.ensure_schema()
        made[kind] = store
    settings = make_settings(
        falkordb_server, celery_redis, made["people"].graph_name, tmp_path_factory.mktemp("d")
    )
    made["people"].upsert_catalog(Catalog.from_dict(CATALOG))
    propagate_locally(made["people"], settings)
    try:
        yield made
    finally:
        for store in made.values():
            store.clear()
            store.close()


def _policy_file(tmp_path, provider_path: str | None):
    text = DEFAULT_POLICY_YAML
    if provider_path is not None:
        text = text.replace("protection:\n", f"protection:\n  key_provider_path: {provider_path}\n", 1)
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


def _cli_plan(monkeypatch, store, policy_file, kms: str | None, tables: list[str] | None) -> dict:
    import json

    from watershed.api.cli import app

    port = store.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", store.graph_name)
    args = ["protect", "plan", "--policy", str(policy_file), "--format", "json"]
    args += ["--kms", kms] if kms else []
    for table in tables or []:
        args += ["--table", table]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _api_plan(falkordb_server, celery_redis, store, policy_file, kms, tables, tmp_path) -> dict:
    from watershed.api.http.app import create_app
    from watershed.api.service.accounts.store import AccountStore

    settings = make_settings(falkordb_server, celery_redis, store.graph_name, tmp_path / "api")
    settings = settings.model_copy(update={"policy_file": policy_file, "protect_kms": kms})
    accounts = AccountStore(store)
    name = f"viewer{next(_graphs)}"
    accounts.add(name, "viewer", None, actor="test")
    token = accounts.create_token(name, "test").token
    with TestClient(create_app(settings, store), base_url="http://127.0.0.1") as client:
        answer = client.post(
            "/api/v1/protect/plan",
            json={} if tables is None else {"tables": tables},
            headers={"Authorization": f"Bearer {token}"},
        )
    assert answer.status_code == 200, answer.text
    return answer.json()["plan"]


@pytest.mark.parametrize("graph", ["people", "empty"])
@pytest.mark.parametrize(
    ("policy_path", "explicit"),
    [("kms", None), (JCEKS, None), (JCEKS, "kms"), (None, "kms"), (None, None)],
    ids=["policy-kms", "policy-jceks", "explicit-over-jceks", "explicit-only", "none"],
)
def test_the_cli_and_the_api_choose_the_same_kms(
    graphs,
    graph,
    policy_path,
    explicit,
    kms_server,
    falkordb_server,
    celery_redis,
    tmp_path,
    monkeypatch,
):
    kms = kms_server.provider_path
    policy_path = kms if policy_path == "kms" else policy_path
    explicit = kms if explicit == "kms" else explicit
    policy_file = _policy_file(tmp_path, policy_path)
    store = graphs[graph]
    tables = ["sec.people"] if graph == "people" else None

    by_cli = _cli_plan(monkeypatch, store, policy_file, explicit, tables)
    by_api = _api_plan(falkordb_server, celery_redis, store, policy_file, explicit, tables, tmp_path)

    expected = explicit or policy_path
    assert by_cli["key_provider_path"] == by_api["key_provider_path"] == expected
    assert [t["ddl"] for t in by_cli["tables"]] == [t["ddl"] for t in by_api["tables"]]
    if graph == "people":
        statements = by_cli["tables"][0]["ddl"]
        assert statements
        for ddl in statements:
            assert (f"'hadoop.security.key.provider.path'='{expected}'" in ddl) == (expected is not None), ddl
