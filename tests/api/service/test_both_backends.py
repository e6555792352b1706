"""The product's story on both backends from one parametrized suite: FalkorDB and the live Neo4j
(tests/support/neo4j.py), through the same commands, services and HTTP routes, configured only by
settings (WATERSHED_BACKEND and where the graph is).

- harvest (Spark, in this process) -> re-harvest changes nothing -> a deleted task is pruned ->
  propagation on a Celery worker -> why -> a seed removed retracts what it supported -> TTL advice
  on the worker -> the protection plan;
- the API's steward story: users, tokens, a browser session, a tag change with its audit entry,
  data roles and grants, the gateway's check and masked rewrite;
- the nightly chain twice for one date: the second run changes nothing.

Each test records what it found per backend; on the second backend it must equal the first's
(the same tags, provenance, TTL and counts). Which tests run on both, and why the rest need not:
docs/graph.md "Both backends in the suite".
"""

from __future__ import annotations

import itertools
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.api_service import USERS, ThreadServer, load_sample_warehouse, propagate_locally
from tests.support.celery_workers import Workers
from tests.support.neo4j import BACKENDS
from tests.support.nightly_state import graph_state, plan_state
from watershed.api.cli import app
from watershed.api.http.deps import CSRF_HEADER as CSRF
from watershed.graph.backends import open_answering
from watershed.graph.neo4j_store import STAMP_LABEL
from watershed.graph.server import free_port
from watershed.graph.settings import GraphSettings

pytestmark = [pytest.mark.spark, pytest.mark.services]

_graphs = itertools.count()
#: test name -> backend -> what it found, compared across backends
_found: dict[str, dict[str, object]] = {}


def same_on_both(test: str, backend: str, found: object) -> None:
    """Record `found` for `backend`; equal to what the other backend gave when that one ran."""
    seen = _found.setdefault(test, {})
    seen[backend] = found
    others = [value for name, value in seen.items() if name != backend]
    for other in others:
        assert found == other, (
            f"{test}: {backend} differs from the other backend: {_difference(found, other)}"
        )


def _difference(found: object, other: object) -> str:
    """Where two findings first differ (a path of keys, and what each side has alone there)."""
    if isinstance(found, dict) and isinstance(other, dict):
        for key in sorted(set(found) | set(other), key=str):
            if found.get(key) != other.get(key):
                return f"[{key!r}]" + _difference(found.get(key), other.get(key))
    if isinstance(found, list) and isinstance(other, list):
        alone = [row for row in found if row not in other][:5]
        missing = [row for row in other if row not in found][:5]
        return f": only here {alone}, only there {missing}"
    return f": {found!r} != {other!r}"


#: each stack's Redis database on the session's Redis (test_two_faces has 7)
BROKER_DB = {"falkordb": 11, "neo4j": 12}


@dataclass
class Stack:
    backend: str
    env: dict[str, str]
    workers: Workers

    def settings(self) -> GraphSettings:
        return GraphSettings()  # from the environment the stack set


@pytest.fixture(scope="module", params=BACKENDS)
def stack(request, celery_redis, tmp_path_factory):
    """The settings of one backend in the environment, and a Celery worker (propagation and TTL
    queues) started with the same settings."""
    backend = request.param
    env = {
        "WATERSHED_BACKEND": backend,
        "WATERSHED_GRAPH_NAME": f"both_{next(_graphs)}",
        # a Redis database of the stack's own: the session's workers, started with whatever
        # settings the test that first needed them had, serve database 0 and would take its batches
        "WATERSHED_CELERY_BROKER": f"redis://127.0.0.1:{celery_redis.port}/{BROKER_DB[backend]}",
        "WATERSHED_DATA_DIR": str(tmp_path_factory.mktemp(f"both-{backend}")),
    }
    # the workers' FalkorDB setting, unused on Neo4j (any valid port)
    falkordb_port = 6379
    if backend == "falkordb":
        falkordb_port = request.getfixturevalue("falkordb_server").port
        env["WATERSHED_FALKORDB_PORT"] = str(falkordb_port)
    else:
        neo4j = request.getfixturevalue("neo4j_server")
        env["WATERSHED_NEO4J_URI"] = neo4j.uri
        # a secret file, as for a Neo4j elsewhere: the data directory here is the test's own
        env["WATERSHED_NEO4J_PASSWORD_FILE"] = str(neo4j.data_dir / "neo4j" / "password")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        pool = Workers(celery_redis.port, falkordb_port, tmp_path_factory.mktemp(f"both-workers-{backend}"))
        pool.env.update(env)
        pool.start(1, queues="propagation,ttl")
        try:
            yield Stack(backend, env, pool)
        finally:
            pool.stop_all()


@pytest.fixture
def graph(stack):
    """The stack's graph, empty before and after the test."""
    store = open_answering(stack.settings(), schema=True)
    store.clear()
    yield store
    store.clear()
    store.close()


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    from watershed.ingest.generator import generate_warehouse

    root = tmp_path_factory.mktemp("both-warehouse")
    generate_warehouse(root, tasks=30, seed=5, broken=1)
    return root


def cli(*args: str) -> dict | str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    if "-f" in args or "--format" in args:
        return json.loads(result.output[result.output.index("{") :])
    return result.output


def _tags(store) -> list[tuple]:
    rows = store.read(
        "MATCH (n)-[g:TAGGED]->(t:Tag) RETURN n.id, t.key, t.value, g.origin, g.hops, g.`from`, g.via_task, g.rule"
    )
    return sorted(tuple("" if v is None else v for v in row) for row in rows)


def test_harvest_propagate_why_retract_ttl_and_plan(stack, graph, spark, warehouse, tmp_path):
    tasks = tmp_path / "tasks"
    shutil.copytree(warehouse / "tasks", tasks)
    harvest = ["harvest", "--tasks", str(tasks), "--catalog", str(warehouse / "catalog.json")]
    harvest += ["--out", str(tmp_path / "runs")]
    cli(*harvest)
    stats = graph.stats()
    assert stats.tasks == 30 and stats.column_edges > 100
    cli(*harvest)  # the same corpus again: nothing changes
    assert graph.stats() == stats
    victim = sorted(tasks.rglob("*.sql"))[-1]
    victim.unlink()
    cli(*harvest)
    assert graph.stats().tasks == 29
    assert graph.read("MATCH ()-[r]->() WHERE r.task = $t RETURN count(r)", {"t": victim.stem}) == [[0]]

    # the built-in policy's seeds (name rules) propagate on the Celery worker
    first = cli("propagate", "--full", "--wait", "30", "-f", "json")
    assert first["status"] == "done" and first["layers"], first
    tagged = _tags(graph)
    propagated = [row for row in tagged if row[3] == "propagated" and row[1] == "pii"]
    assert propagated, tagged
    node, key = propagated[0][0], propagated[0][1]
    why = CliRunner().invoke(app, ["tag", "why", node, key, "-f", "json"])
    assert why.exit_code == 0, why.output
    paths = json.loads(why.output)

    # a steward blocks the key one hop up the first path: what it passed on is retracted
    assert paths["paths"] >= 1 and paths["tree"]["sources"], paths
    above = paths["tree"]["sources"][0]["node"]
    cli("tag", "block", above, key, "--by", "steward")
    second = cli("propagate", "--wait", "30", "-f", "json")
    assert second["status"] == "done", second
    after_block = _tags(graph)
    assert [row for row in tagged if row[0] == above and row[1] == key]
    assert not [row for row in after_block if row[0] == above and row[1] == key]
    assert not [row for row in after_block if row[1] == key and above in str(row[5])]

    ttl = cli("ttl", "run", "--run-id", "ttl-both", "--wait", "60", "-f", "json")
    assert ttl["columns"] > 0, ttl
    cli("protect", "plan", "--out", str(tmp_path / "plan.json"))
    plan = plan_state(tmp_path / "plan.json")
    same_on_both(
        "story",
        stack.backend,
        {
            "stats": graph.stats(),
            "tags": tagged,
            "why": paths,
            "after_block": after_block,
            "ttl": graph_state(graph)["ttl"],
            "plan": plan,
        },
    )


SQL = "SELECT user_id, email, ssn FROM ods.user_profile WHERE dt = '2024-01-31' ORDER BY user_id"


@pytest.fixture
def api(stack, graph):
    """The steward service (uvicorn in a thread) on the propagated sample warehouse in the stack's
    graph, a user and token per entry of USERS; yields its URL and the tokens."""
    from watershed.api.http.app import create_app
    from watershed.api.http.settings import ApiSettings
    from watershed.api.service.accounts.store import AccountStore

    settings = ApiSettings(propagation_stall_seconds=30)
    load_sample_warehouse(graph)
    propagate_locally(graph, settings)
    accounts = AccountStore(graph)
    tokens = {}
    for user, (role, databases) in USERS.items():
        accounts.add(user, role, databases, actor="test")
        tokens[user] = accounts.create_token(user, "test").token
    port = free_port()
    server = ThreadServer(create_app(settings, graph), port)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}/api/v1", tokens
    finally:
        server.stop()


def test_the_steward_story_and_the_gateways_decisions(stack, api):
    import httpx

    url, tokens = api

    def client(who: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {tokens[who]}"} if who else {}
        return httpx.Client(base_url=url, headers=headers, timeout=60)

    with client("admin") as admin, client("steward") as steward, client("viewer") as viewer:
        # accounts: a user, its token, a browser session on it, then logged out
        assert admin.post("/users", json={"name": "dora", "role": "viewer"}).status_code == 201
        assert admin.post("/users", json={"name": "dora", "role": "viewer"}).status_code == 409
        created = admin.post("/users/dora/tokens", json={})
        assert created.status_code == 201, created.text
        with client() as browser:
            me = browser.post("/session", json={"token": created.json()["token"]})
            assert me.status_code == 200 and me.json()["name"] == "dora", me.text
            assert browser.get("/me").json()["role"] == "viewer"
            assert browser.delete("/session", headers={CSRF: "1"}).status_code == 204
            assert browser.get("/me").status_code == 401

        # a steward's tag change, audited with before and after
        path = "/nodes/dws.region_daily_users.region/tags/pii"
        assert steward.put(path, json={"values": ["L2"]}).status_code == 200
        assert steward.put(path, json={"values": ["L4"]}).status_code == 200
        tags = steward.get("/nodes/dws.region_daily_users.region/tags").json()

        # the gateway: a data role and grant, a check allowed and one denied, the masked rewrite
        assert admin.post("/authz/roles", json={"name": "analyst"}).status_code == 201
        member = admin.post("/authz/roles/analyst/members", json={"kind": "user", "name": "viewer"})
        assert member.json() == {"changed": True}
        grant = {"role": "analyst", "actions": ["select"], "table": "ods.user_profile"}
        grant["condition"] = "dt >= '2024-01-01'"
        assert admin.post("/authz/grants", json=grant).status_code == 201
        allowed = viewer.post("/authz/check", json={"sql": SQL}).json()
        assert allowed["allowed"], allowed
        denied = viewer.post("/authz/check", json={"sql": SQL.replace("= '2024-01-31'", ">= '2023-06-01'")})
        assert not denied.json()["allowed"]
        by_gateway = admin.post("/authz/check", json={"sql": SQL, "user": "viewer"}).json()
        rewrite = viewer.post("/authz/rewrite", json={"sql": SQL}).json()
        masked = {o["name"]: o["masked"] for o in rewrite["outputs"]}
        assert masked == {"user_id": False, "email": True, "ssn": True}

        audit = admin.get("/audit", params={"limit": 500}).json()["items"]
        mine = [e for e in audit if e["target"] == "dws.region_daily_users.region:pii"]
        assert [e["action"] for e in mine] == ["tag.set", "tag.set"]
        assert [v["value"] for v in mine[0]["before"]] == ["L2"]
        actions = sorted({e["action"] for e in audit})
        assert {"user.add", "authz.grant", "authz.decision"} <= set(actions), actions

    def without_times(view: dict) -> dict:
        return (
            json.loads(json.dumps(view).replace(view["set_here"][0]["at"], "AT"))
            if view["set_here"]
            else view
        )

    same_on_both(
        "steward",
        stack.backend,
        {
            "tags": without_times(tags),
            "decisions": [allowed, denied.json(), by_gateway],
            "rewrite": rewrite,
            "actions": actions,
        },
    )


def test_nightly_twice_for_one_date(stack, graph, spark, warehouse, monkeypatch):
    monkeypatch.setenv("WATERSHED_NIGHTLY_TASKS", str(warehouse / "tasks"))
    monkeypatch.setenv("WATERSHED_NIGHTLY_CATALOG", str(warehouse / "catalog.json"))
    day = "2024-01-31"
    first = cli("nightly", "--date", day, "--local", "-f", "json")
    assert first["status"] == "complete" and first["missing"] == [], first
    steps = {s["step"]: s for s in first["steps"]}
    assert steps["harvest"]["counts"]["loaded"] == 30 and steps["propagate"]["counts"]["tags_changed"] > 0
    after_first = graph_state(graph)
    assert after_first["tags"] and after_first["ttl"]
    # the backend's own bookkeeping (Neo4j's change stamps) is no part of what the chain made
    after_first["nodes"] = [row for row in after_first["nodes"] if row[0] != STAMP_LABEL]

    second = cli("nightly", "--date", day, "--local", "-f", "json")
    assert second["status"] == "complete", second
    again = {s["step"]: s for s in second["steps"]}
    assert again["harvest"]["counts"]["loaded"] == 0 and again["propagate"]["counts"]["tags_changed"] == 0
    again_state = graph_state(graph)
    again_state["nodes"] = [row for row in again_state["nodes"] if row[0] != STAMP_LABEL]
    assert again_state == after_first
    plan = plan_state(Path(stack.env["WATERSHED_DATA_DIR"]) / "nightly" / day / "protection-plan.json")
    # the coverage step's snapshot: the same counts on both, the date's snapshot replaced, not doubled
    assert again["coverage"]["counts"] == steps["coverage"]["counts"]
    assert [row[0] for row in graph.read("MATCH (s:CoverageSnapshot) RETURN s.id")] == [day]
    coverage = steps["coverage"]["counts"]
    same_on_both("nightly", stack.backend, {"state": after_first, "plan": plan, "coverage": coverage})
