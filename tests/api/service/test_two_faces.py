"""Each use case both faces offer gives the same result through `watershed` (the CLI, in this
process) and the HTTP API (the `api` fixture's uvicorn server), on the same graph: harvest runs,
TTL advice, accounts, search and authorization decisions. (Tag changes, protection and
propagation runs have their own: tests/api/test_service_*.py.)

Each comparison is of what a face renders: a face that answered from its own code instead of
the use case, or rendered the model differently, fails it.
"""

from __future__ import annotations

import getpass
import json
import re
import threading

import pytest
from typer.testing import CliRunner

from tests.support.celery_workers import Workers
from watershed.api.cli import app
from watershed.api.service.accounts.store import AccountStore
from watershed.api.service.audit import entries
from watershed.graph.falkordb_store import FalkorDBStore

runner = CliRunner()
CLI_ACTOR = f"cli:{getpass.getuser()}"
QUERY = "SELECT user_id, email FROM ods.user_profile WHERE dt = '2024-01-31'"


@pytest.fixture
def cli(api, monkeypatch):
    """`watershed` pointed at the API's graph, broker and data directory."""
    port = api.graph.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", api.graph.graph_name)
    monkeypatch.setenv("WATERSHED_CELERY_BROKER", api.settings.celery_broker)
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(api.settings.data_dir))

    def invoke(*args: str, code: int = 0) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == code, result.output
        return result.output

    return invoke


def _all_pages(client, path: str, **params) -> list[dict]:
    items, cursor = [], None
    for _ in range(200):  # bounded: a cursor that went nowhere would repeat its page forever
        answer = client.get(path, params=params | ({"cursor": cursor} if cursor else {}))
        assert answer.status_code == 200, answer.text
        items += answer.json()["items"]
        cursor = answer.json()["next_cursor"]
        if cursor is None:
            return items
    raise AssertionError(f"{path}: more than 200 pages")


# ------------------------------------------------------------------ harvest runs


@pytest.mark.spark
def test_a_cli_harvest_is_the_run_the_api_lists(api, cli, spark, tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "two_faces_a.sql").write_text(
        "INSERT OVERWRITE TABLE dw.two_faces_a SELECT user_id, city FROM ods.user_profile WHERE dt = '2024-01-31';\n"
    )
    (tasks / "two_faces_b.sql").write_text("INSERT INTO TABLE dw.two_faces_b SELEC nothing FROM;\n")
    # --no-prune: the graph's sample tasks are not in this corpus
    output = " ".join(cli("harvest", "--tasks", str(tasks), "--no-prune").split())
    said = re.search(
        r"run (\S+): (\d+) tasks, (\d+) loaded, (\d+) unchanged, \d+ removed, (\d+) with errors", output
    )
    assert said, output
    run_id, counts = said.group(1), [int(n) for n in said.groups()[1:]]
    assert counts[0] == 2 and counts[3] == 1
    run_dir = re.search(r"errors and run record: (\S+)", output).group(1)

    with api.client("viewer") as viewer:
        listed = _all_pages(viewer, "/harvest/runs", limit=1)
        shown = viewer.get(f"/harvest/runs/{run_id}").json()
        problems = _all_pages(viewer, f"/harvest/runs/{run_id}/errors", limit=1)
    assert [r["id"] for r in listed] == [run_id]
    assert listed[0] == shown
    assert [shown[k] for k in ("tasks", "loaded", "unchanged", "errors")] == counts
    assert shown["inputs"] == [str(tasks)]
    # the API adds each record's sentence (`text`) to what errors.jsonl holds
    with open(f"{run_dir}/errors.jsonl", encoding="utf-8") as lines:
        assert [{k: v for k, v in p.items() if k != "text"} for p in problems] == [
            json.loads(line) for line in lines if line.strip()
        ]
    assert problems and problems[0]["task_id"] == "two_faces_b"
    assert problems[0]["text"].startswith("Task two_faces_b, statement 1, line 1, column 38: ")


# ------------------------------------------------------------------ TTL advice


def test_a_cli_ttl_run_is_the_advice_the_api_shows(
    api, cli, falkordb_server, celery_redis, tmp_path, monkeypatch
):
    # a database of the broker Redis no other test's worker serves: this worker advises the API's graph
    broker = f"redis://127.0.0.1:{celery_redis.port}/7"
    monkeypatch.setenv("WATERSHED_CELERY_BROKER", broker)
    workers = Workers(celery_redis.port, falkordb_server.port, tmp_path)
    workers.env.update({"WATERSHED_CELERY_BROKER": broker, "WATERSHED_GRAPH_NAME": api.graph.graph_name})
    workers.start(1, queues="ttl")
    try:
        summary = json.loads(
            cli("ttl", "run", "--run-id", "ttl-two-faces", "--wait", "180", "--format", "json")
        )
    finally:
        workers.stop_all()
    computed = json.loads(cli("ttl", "advise", "--top", "100000", "--format", "json"))

    with api.client("viewer") as viewer:
        shown = _all_pages(viewer, "/ttl/advice", limit=50)
        of_table = _all_pages(viewer, "/ttl/advice", table="ods.user_profile")
    assert summary["run_id"] == "ttl-two-faces"
    assert len(shown) == summary["columns"] == computed["columns"] > 0
    assert {k: summary[k] for k in computed["counts"]} == computed["counts"]
    by_column = {a["column"]: a for a in shown}
    assert computed["top"]
    for rec in computed["top"]:
        assert by_column[rec["column"]] == {
            "column": rec["column"],
            "table": rec["table"],
            "status": rec["status"],
            "ttl_days_recommended": rec["ttl_days"],
            "savings_bytes": None if rec["savings"] is None else rec["savings"]["bytes"],
            "days_cut": rec["days_cut"],
            "read_outside_by": rec["read_outside_by"],
            "evidence": rec["evidence"],
        }
    assert {a["column"] for a in shown if a["status"] in ("ttl", "unused")} == {
        r["column"] for r in computed["top"]
    }
    assert of_table == [a for a in shown if a["table"] == "ods.user_profile"]


# ------------------------------------------------------------------ accounts


def _without(value: dict, *keys: str) -> dict:
    return {k: v for k, v in value.items() if k not in keys}


def _same_entry(entry, name: str) -> dict:
    """An audit entry with what differs between the faces dropped (who, when, which user)."""
    text = json.dumps(_without(entry.model_dump(), "id", "at", "actor"))
    return json.loads(text.replace(name, "NAME"))


def test_a_user_and_a_grant_are_the_same_through_both_faces(api, cli):
    accounts = AccountStore(api.graph)
    with api.client("admin") as admin:
        made = admin.post("/users", json={"name": "http_ann", "role": "steward", "databases": ["ODS"]})
        assert made.status_code == 201, made.text
        http_add = entries(api.graph, action="user.add", limit=1)[0]
        cli("users", "add", "cli_ann", "--role", "steward", "--db", "ODS")
        cli_add = entries(api.graph, action="user.add", limit=1)[0]

        changed = admin.patch("/users/http_ann", json={"role": "admin", "databases": None})
        assert changed.status_code == 200, changed.text
        http_grant = entries(api.graph, action="user.grant", limit=1)[0]
        cli("users", "grant", "cli_ann", "--role", "admin", "--all-databases")
        cli_grant = entries(api.graph, action="user.grant", limit=1)[0]
        shown = admin.get("/users/cli_ann").json()

    stored = {name: accounts.get(name).model_dump() for name in ("http_ann", "cli_ann")}
    assert _without(stored["cli_ann"], "name", "created_at") == _without(
        stored["http_ann"], "name", "created_at"
    )
    assert stored["cli_ann"]["role"] == "admin" and stored["cli_ann"]["databases"] is None
    assert shown == stored["cli_ann"]
    assert (http_add.actor, cli_add.actor) == ("admin", CLI_ACTOR)
    assert _same_entry(cli_add, "cli_ann") == _same_entry(http_add, "http_ann")
    assert _same_entry(cli_grant, "cli_ann") == _same_entry(http_grant, "http_ann")
    assert cli_grant.before["databases"] == ["ods"] and cli_grant.after["databases"] is None


class KilledError(BaseException):
    """The CLI process ends here, as under SIGKILL: nothing after the write that raised it runs."""


def test_a_cli_user_killed_after_its_first_write_has_its_audit_entry(api, cli):
    """`watershed users add` then makes a token (a second write): the process dies after the first,
    and the user is there with its entry, since the user and its entry are that one write."""
    writes: list[str] = []
    main = threading.main_thread()

    def dying(method):
        def write_then_die(self, *args, **kwargs):
            result = method(self, *args, **kwargs)
            # only the CLI's writes (the API's server thread may touch a token meanwhile)
            if threading.current_thread() is main:
                writes.append(method.__name__)
                raise KilledError
            return result

        return write_then_die

    with pytest.MonkeyPatch.context() as patch:
        for name in ("execute", "write_all", "record"):
            patch.setattr(FalkorDBStore, name, dying(getattr(FalkorDBStore, name)))
        with pytest.raises(KilledError):
            runner.invoke(app, ["users", "add", "killed_kim", "--role", "viewer"], catch_exceptions=False)
    assert len(writes) == 1
    assert AccountStore(api.graph).get("killed_kim").role == "viewer"
    added = [e for e in entries(api.graph, action="user.add", limit=50) if e.target == "user:killed_kim"]
    assert [e.actor for e in added] == [CLI_ACTOR]
    assert not AccountStore(api.graph).tokens("killed_kim")


# ------------------------------------------------------------------ search


@pytest.mark.parametrize(
    "query",
    [{"q": "ods.user"}, {"q": "email"}, {"q": "", "kind": "table", "db": "dwd"}, {"q": "ods", "tag": "pii"}],
)
def test_a_search_finds_the_same_hits_in_the_same_order(api, cli, query):
    args = [query["q"]]
    for option in ("kind", "db", "tag"):
        if option in query:
            args += [f"--{option}", query[option]]
    with api.client("viewer") as viewer:
        http_pages, cli_pages, cursor = [], [], None
        while True:
            answer = viewer.get(
                "/search", params=query | {"limit": 3} | ({"cursor": cursor} if cursor else {})
            )
            assert answer.status_code == 200, answer.text
            http_pages.append(answer.json())
            page = json.loads(
                cli(
                    "graph",
                    "search",
                    *args,
                    "--limit",
                    "3",
                    "--format",
                    "json",
                    *(["--cursor", cursor] if cursor else []),
                )
            )
            cli_pages.append(page)
            cursor = answer.json()["next_cursor"]
            if cursor is None or len(http_pages) == 20:
                break
    assert cli_pages == http_pages
    assert http_pages[0]["items"], query


# ------------------------------------------------------------------ authorization decisions


@pytest.mark.parametrize(
    ("sql", "allowed"),
    [
        (QUERY, False),
        ("SELECT count(*) FROM ods.nope", False),
        ("SELECT user_id FROM ods.user_profile JOIN", False),
    ],
)
def test_an_authz_check_is_the_same_decision_through_both_faces(api, cli, tmp_path, sql, allowed):
    query = tmp_path / "q.sql"
    query.write_text(sql)
    with api.client("admin") as admin:
        answer = admin.post("/authz/check", json={"sql": sql, "user": "viewer"})
        assert answer.status_code == 200, answer.text
        http_entry = entries(api.graph, action="authz.", limit=1)[0]
        decided = json.loads(
            cli(
                "authz", "check", str(query), "--user", "viewer", "--format", "json", code=0 if allowed else 3
            )
        )
        cli_entry = entries(api.graph, action="authz.", limit=1)[0]
    assert decided == answer.json()
    assert decided["allowed"] is allowed and decided["user"] == "viewer"
    assert (http_entry.actor, cli_entry.actor) == ("admin", CLI_ACTOR)
    assert _without(cli_entry.model_dump(), "id", "at", "actor") == _without(
        http_entry.model_dump(), "id", "at", "actor"
    )
