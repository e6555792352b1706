"""Protection through the API on the real FalkorDB, Redis and KMS fixtures, with tables whose
locations hold real ORC files (pyarrow): the state and plan of a table, a plan over the catalog,
an apply started by an admin and followed to its end, rights, audit."""

from __future__ import annotations

import pytest

from tests.support.api_service import Api, ThreadServer
from tests.support.protection_service import held, wait_for
from watershed.graph.server import free_port


def test_rights_and_bad_input(protect_api):
    with protect_api.client() as anonymous:
        assert anonymous.get("/tables/sec.people/protection").status_code == 401
        assert anonymous.post("/protect/plan", json={}).status_code == 401
        assert anonymous.post("/protect/apply", json={}).status_code == 401
        assert anonymous.get("/protect/runs").status_code == 401
    with protect_api.client("viewer") as viewer, protect_api.client("steward") as steward:
        for client in (viewer, steward):
            answer = client.post("/protect/apply", json={"tables": ["sec.people"]})
            assert answer.status_code == 403 and answer.headers["content-type"] == "application/problem+json"
        missing = viewer.post("/protect/plan", json={"tables": ["sec.nope"]})
        assert missing.status_code == 404 and "sec.nope" in missing.json()["detail"]
        assert viewer.get("/tables/sec.nope/protection").status_code == 404
        assert viewer.post("/protect/plan", json={"limit": 501}).status_code == 422
        assert viewer.get("/protect/runs/protect-nope").status_code == 404
    with protect_api.client("ods_admin") as limited:
        # an admin of ods may not apply to sec, nor to every table
        assert limited.post("/protect/apply", json={"tables": ["sec.people"]}).status_code == 403
        assert limited.post("/protect/apply", json={}).status_code == 403
    with protect_api.client("admin") as admin:
        unknown = admin.post("/protect/apply", json={"tables": ["sec.nope"]})
        assert unknown.status_code == 404 and "sec.nope" in unknown.json()["detail"]


def test_plan_ids_are_canonical_and_its_files_bounded(protect_api):
    with protect_api.client("viewer") as viewer:
        answer = viewer.post(
            "/protect/plan", json={"tables": ["SEC.People", "sec.people"], "files": True, "files_limit": 1}
        )
        assert answer.status_code == 200, answer.text
        page = answer.json()
        [table] = page["plan"]["tables"]
        assert table["table"] == "sec.people" and len(table["files"]) == 1
        assert page["files_truncated"] == {"sec.people": 2}
        assert set(table["target"]) == {"ssn", "email"}
        whole = viewer.post("/protect/plan", json={"tables": ["sec.people"], "files": True}).json()
        assert len(whole["plan"]["tables"][0]["files"]) == 2 and whole["files_truncated"] == {}
        too_many = viewer.post("/protect/plan", json={"tables": ["sec.people"], "files_limit": 1001})
        assert too_many.status_code == 422


def test_an_apply_that_cannot_be_audited_does_not_run(protect_api):
    from watershed.orc_crypto.protect import records

    runner = protect_api.app.state.protect_runner
    policy = runner.svc.policy.protection
    started: list[str] = []

    def failing_audit(run_id: str) -> None:
        started.append(run_id)
        raise RuntimeError("audit store down")

    with pytest.raises(RuntimeError, match="audit store down"):
        runner.start(policy, ["sec.people"], "admin", before_start=failing_audit)
    [run_id] = started
    assert records.run(protect_api.graph, run_id) is None  # no run recorded, no thread started
    assert runner.current is None
    assert runner._lock.acquire(blocking=False)  # and the next apply may start
    runner._lock.release()


def test_pending_then_apply_then_encrypted(protect_api):
    files = protect_api.files
    with protect_api.client("viewer") as viewer:
        answer = viewer.get("/tables/sec.people_copy/protection", params={"files": "true"}).json()
        state = answer["protection"]
        assert state["status"] == "pending" and state["pending_columns"] == ["ssn_c"]
        (column,) = state["columns"]
        assert column["state"] == "pending" and column["want"] == {
            "key": "pii",
            "mask": "nullify",
            "version": None,
        }
        assert column["tag"] == "pii=L4" and "sec.people.ssn" in column["why"]
        assert answer["plan_files"] == 2 and {f["action"] for f in answer["plan"]["files"]} == {"encrypt"}
        assert "SET TBLPROPERTIES" in state["ddl"][0] and kms_port(protect_api) in state["ddl"][0]
        # a page of one file: bounded, and says so
        short = viewer.get("/tables/sec.people_copy/protection", params={"files": "true", "limit": 1}).json()
        assert len(short["plan"]["files"]) == 1 and short["files_truncated"] and short["plan_files"] == 2
        # the table page shows the same state without reading a file
        page = viewer.get("/tables/sec.people").json()
        assert page["protection"]["pending_columns"] == ["ssn", "email"]
        assert "CREATE TABLE" in page["ddl"] and "orc.encrypt" in page["ddl"]
        # the catalog, a page of one table at a time
        seen, cursor = [], None
        while True:
            body = {"limit": 1} | ({"cursor": cursor} if cursor else {})
            plan_page = viewer.post("/protect/plan", json=body).json()
            assert plan_page["examined"] <= 1
            seen += [t["table"] for t in plan_page["plan"]["tables"]]
            cursor = plan_page["next_cursor"]
            if cursor is None:
                break
        assert seen == ["sec.people", "sec.people_copy"]

    before = {p: p.read_bytes() for paths in files.values() for p in paths}
    with protect_api.client("admin") as admin:
        started = admin.post("/protect/apply", json={})
        assert started.status_code == 202, started.text
        run_id = started.json()["id"]
        assert started.json()["actor"] == "admin"
        run = wait_for(admin, run_id)
        assert run["status"] == "done", run
        assert run["files_done"] == 4 and run["files_planned"] == 4 and run["files_finished"] == 4
        # no Spark in the service: the tables' options are reported, not set
        assert {e["table"] for e in run["errors"]} == {"sec.people", "sec.people_copy"}
        assert all(e["error"].startswith("DDL not run") for e in run["errors"])
        listed = admin.get("/protect/runs", params={"limit": 1}).json()
        assert listed["items"][0]["id"] == run_id
        audit = admin.get("/audit", params={"action": "protect.apply"}).json()["items"]
        assert audit[0]["actor"] == "admin" and audit[0]["target"] == f"protection-run:{run_id}"

    for path in files["sec.people"]:
        assert path.read_bytes() != before[path]
        assert held(path) == {"ssn": ("pii", "nullify", 0), "email": ("pii", "nullify", 0)}
    for path in files["sec.people_copy"]:
        assert held(path) == {"ssn_c": ("pii", "nullify", 0)}

    with protect_api.client("viewer") as viewer:
        state = viewer.get("/tables/sec.people/protection").json()["protection"]
        columns = {c["name"]: c for c in state["columns"]}
        assert state["encrypted_columns"] == ["ssn", "email"] and state["pending_columns"] == []
        assert columns["ssn"] | {"since": None} == columns["ssn"] | {
            "state": "encrypted",
            "key": "pii",
            "mask": "nullify",
            "versions": [0],
            "files": 2,
            "since_run": run_id,
            "options_set": False,
            "since": None,
        }
        assert state["files_recorded"] == 2
        assert state["status"] == "pending" and state["ddl"]  # the options wait for Spark
        again = viewer.get("/tables/sec.people/protection", params={"files": "true"}).json()
        assert again["plan_files"] == 0  # the tails now hold what the policy asks

    # a second apply finds nothing to rewrite (its table named as the rights check canonicalises it)
    with protect_api.client("admin") as admin:
        answer = admin.post("/protect/apply", json={"tables": ["SEC.People"]})
        assert answer.status_code == 202, answer.text
        second = wait_for(admin, answer.json()["id"])
        assert second["status"] == "done" and second["files_done"] == 0 and second["files_planned"] == 0
        audit = admin.get("/audit", params={"action": "protect.apply"}).json()["items"]
        assert audit[0]["target"] == f"protection-run:{second['id']}"
        assert audit[0]["after"] == {"tables": ["sec.people"], "run": second["id"]}


def kms_port(api) -> str:
    return api.settings.protect_kms.rsplit(":", 1)[1].split("/")[0]


def test_one_apply_at_a_time(protect_api):
    # while the runner is busy (its lock held here, as a running apply holds it) a start is refused
    runner = protect_api.app.state.protect_runner
    assert runner._lock.acquire(blocking=False)
    runner._current = "protect-held-by-test"
    try:
        with protect_api.client("admin") as admin:
            busy = admin.post("/protect/apply", json={})
            assert busy.status_code == 409 and "protect-held-by-test" in busy.json()["detail"]
    finally:
        runner._current = None
        runner._lock.release()


def test_a_key_the_kms_lacks_fails_plan_and_apply(protect_api, tmp_path):
    from watershed.api.http.app import create_app
    from watershed.propagation.policy import DEFAULT_POLICY_YAML

    policy = tmp_path / "policy.yaml"
    policy.write_text(DEFAULT_POLICY_YAML.replace("key: pii,", "key: no-such-key,"))
    settings = protect_api.settings.model_copy(update={"policy_file": policy})
    port = free_port()
    server = ThreadServer(create_app(settings, protect_api.graph), port)
    server.start()
    try:
        other = Api(
            url=f"http://127.0.0.1:{port}",
            graph=protect_api.graph,
            settings=settings,
            tokens=protect_api.tokens,
        )
        with other.client("admin") as admin:
            before = admin.get("/protect/runs", params={"limit": 500}).json()["items"]
            for answer in (admin.post("/protect/plan", json={}), admin.post("/protect/apply", json={})):
                assert answer.status_code == 400, answer.text
                assert "no-such-key" in answer.json()["detail"]
            assert admin.get("/protect/runs", params={"limit": 500}).json()["items"] == before
    finally:
        server.stop()
