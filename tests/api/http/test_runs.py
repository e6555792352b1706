"""Propagation runs through the API, on a real Celery worker: start (queued to the workers), status, audit, cancel."""

from __future__ import annotations

import time

import pytest

from watershed.propagation.run_state import RunRecord, RunState


def _wait_done(client, run_id: str) -> dict:
    deadline = time.monotonic() + 60
    while True:
        record = client.get(f"/propagation/runs/{run_id}").json()
        if record["status"] in ("done", "failed"):
            return record
        assert time.monotonic() < deadline, record
        time.sleep(0.1)


def test_a_steward_starts_a_run_on_the_workers(api, workers):
    with api.client("steward") as steward:
        steward.put("/nodes/ods.user_profile.city/tags/pii", json={"values": ["L1"]})
        started = steward.post("/propagation/runs", json={"full": False})
        assert started.status_code == 202, started.text
        record = started.json()
        assert record["mode"] == "incremental" and record["status"] in ("starting", "running", "done")
        done = _wait_done(steward, record["run_id"])
        assert done["status"] == "done" and done["layers"] and done["error"] is None
        assert done["run_id"] in {r["run_id"] for r in steward.get("/propagation/runs").json()["items"]}
        # the steward's tag reached the derived column
        city = steward.get("/columns/dwd.user_contact_df.city").json()
        assert {t["key"]: t["values"] for t in city["tags"]}.get("pii") == ["L1"]
        steward.delete("/nodes/ods.user_profile.city/tags/pii")
    with api.client("admin") as admin:
        entry = admin.get("/audit", params={"action": "propagation.start"}).json()["items"][0]
        assert entry["actor"] == "steward" and entry["target"] == f"run:{record['run_id']}"


def test_cancel_ends_a_run_nobody_coordinates(api):
    state = RunState.from_url(api.settings.broker_url(), api.settings.graph_name)
    before = state.current()
    orphan = RunRecord(run_id="prop-orphan", token=10**6, mode="full", status="running", graph_started_at=0)
    state.save(orphan)
    try:
        with api.client("steward") as steward:
            cancelled = steward.post("/propagation/runs/prop-orphan/cancel")
            assert cancelled.status_code == 202, cancelled.text
            assert cancelled.json()["status"] == "failed"
            assert cancelled.json()["error"] == "RunCancelledError: cancelled by steward"
            again = steward.post("/propagation/runs/prop-orphan/cancel")
            assert again.status_code == 409 and "failed" in again.json()["detail"]
            assert steward.post("/propagation/runs/prop-other/cancel").status_code == 409
    finally:
        if before is not None:
            state.save(before)


def test_an_unreachable_broker_is_named_without_its_password():
    from watershed.api.http.problems import ApiProblem
    from watershed.api.http.runs import RunLauncher
    from watershed.api.http.settings import ApiSettings
    from watershed.graph.server import free_port
    from watershed.propagation.policy import default_policy

    settings = ApiSettings(celery_broker=f"redis://:s3cret-pw@127.0.0.1:{free_port()}/0")
    with pytest.raises(ApiProblem) as raised:
        RunLauncher(settings, default_policy()).current()
    assert raised.value.status == 503
    assert "127.0.0.1" in str(raised.value) and "s3cret-pw" not in str(raised.value)
