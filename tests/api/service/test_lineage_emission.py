"""OpenLineage out through the client's transports: a consumer's HTTP endpoint (the test's own
receiver) gets every event with the API key from a file as its bearer token; a refused send names
the target and how many went; a bad target or task is named before anything is sent."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from bench.propagation_bench import load_generated
from tests.support.openlineage_emission import KEY, receiving
from watershed.api.service import lineage_emission as service
from watershed.ingest.generator import generate_warehouse
from watershed.ingest.openlineage.events import parse_event
from watershed.propagation.policy import Policy, default_policy

WHEN = datetime(2024, 1, 31, 2, 0, tzinfo=UTC)


@pytest.fixture
def receiver():
    with receiving() as state:
        yield state


@pytest.fixture
def warehouse(backend_store, tmp_path):
    generate_warehouse(tmp_path / "w", tasks=12, seed=3)
    load_generated(backend_store, tmp_path / "w")
    return backend_store


def test_every_event_reaches_the_consumer_with_the_key_from_a_file(warehouse, receiver, tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    settings = service.LineageEmissionSettings(openlineage_emit_batch=5)
    transport = service.http_target(receiver.url, settings, service.api_key(settings, key_file))
    report = service.emit(
        warehouse, transport, receiver.url, default_policy(), settings=settings, event_time=WHEN
    )
    assert report.sent == report.tasks == 12 and not report.skipped
    assert {(path, auth) for path, auth, _ in receiver.posts} == {("/api/v1/lineage", f"Bearer {KEY}")}
    received = [body for _, _, body in receiver.posts]
    assert all(parse_event(body).eventType == "COMPLETE" for body in received)

    # the same events as the file transport writes, line by line
    out = tmp_path / "events.jsonl"
    service.emit(
        warehouse, service.file_target(out), str(out), default_policy(), settings=settings, event_time=WHEN
    )
    assert [json.loads(line) for line in out.read_text().splitlines()] == received
    # a second emission to the same file replaces the first
    service.emit(warehouse, service.file_target(out), str(out), default_policy(), event_time=WHEN)
    assert len(out.read_text().splitlines()) == 12


def test_a_refused_send_names_the_target_and_how_many_went(warehouse, receiver):
    receiver.refuse_from = 4
    settings = service.LineageEmissionSettings()
    transport = service.http_target(receiver.url, settings, None)
    with pytest.raises(service.EmissionError) as caught:
        service.emit(warehouse, transport, receiver.url, default_policy(), settings=settings)
    message = str(caught.value)
    assert message.startswith(f"sending to {receiver.url} failed after 4 of 12 events (job ")
    assert message.endswith("HTTP 401 Unauthorized")
    assert len(receiver.posts) == 4


def test_bad_targets_and_tasks_are_named_before_anything_is_sent(warehouse, receiver, tmp_path):
    settings = service.LineageEmissionSettings()
    with pytest.raises(service.EmissionError, match="'localhost:99' is not an http"):
        service.http_target("localhost:99", settings, None)
    with pytest.raises(service.EmissionError, match=f"API key file {tmp_path / 'none'}: cannot read it"):
        service.api_key(settings, tmp_path / "none")
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(service.EmissionError, match="empty"):
        service.api_key(settings, tmp_path / "empty")
    with pytest.raises(service.EmissionError, match=f"{tmp_path}: cannot write events there"):
        service.file_target(tmp_path)
    transport = service.http_target(receiver.url, settings, None)
    some = warehouse.task_ids()[0]
    with pytest.raises(service.EmissionError, match="no task nope_1, nope_2 in the graph"):
        service.emit(
            warehouse, transport, receiver.url, default_policy(), task_ids=[some, "nope_2", "nope_1"]
        )
    assert receiver.posts == []
    report = service.emit(warehouse, transport, receiver.url, default_policy(), task_ids=[some])
    assert report.sent == 1 and receiver.posts[0][2]["job"]["name"] == some


def test_masking_is_the_policy_s_function_effect_table():
    masks = service.masks_of(default_policy())
    assert [
        f for f in ("md5", "sha2", "count", "mask_hash", "upper", "cast", "sum", "my_udf") if masks(f)
    ] == [
        "md5",
        "sha2",
        "count",
        "mask_hash",
    ]
    own = service.masks_of(Policy.from_data({"functions": {"my_udf": "drop", "md5": "keep"}}))
    assert own("my_udf") and not own("md5")


def test_the_api_key_comes_from_a_setting_when_no_file_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("WATERSHED_OPENLINEAGE_API_KEY", KEY)
    assert service.api_key(service.LineageEmissionSettings()) == KEY
    key_file = tmp_path / "k"
    key_file.write_text("from-file")
    monkeypatch.setenv("WATERSHED_OPENLINEAGE_API_KEY_FILE", str(key_file))
    assert service.api_key(service.LineageEmissionSettings()) == "from-file"
    assert KEY not in repr(service.LineageEmissionSettings())


def test_the_nightly_step_is_off_without_a_url_and_sends_the_same_events_on_a_re_run(
    graph_store, falkordb_server, receiver, tmp_path, monkeypatch
):
    from watershed.api.service.nightly import NightlySettings, steps

    generate_warehouse(tmp_path / "w", tasks=5, seed=2)
    load_generated(graph_store, tmp_path / "w")
    settings = NightlySettings(
        falkordb_port=falkordb_server.port, graph_name=graph_store.graph_name, data_dir=tmp_path / "var"
    )
    monkeypatch.delenv("WATERSHED_OPENLINEAGE_EMIT_URL", raising=False)
    off = steps.emit("2024-01-30", settings)
    assert off.status == "skipped" and "WATERSHED_OPENLINEAGE_EMIT_URL" in off.message

    key_file = tmp_path / "key"
    key_file.write_text(KEY)
    monkeypatch.setenv("WATERSHED_OPENLINEAGE_EMIT_URL", receiver.url)
    monkeypatch.setenv("WATERSHED_OPENLINEAGE_API_KEY_FILE", str(key_file))
    first = steps.emit("2024-01-30", settings)
    assert first.status == "done" and first.counts == {"tasks": 5, "sent": 5, "skipped": 0}
    assert steps.results_of(settings, "2024-01-30")["emit"] == first
    sent = [body for _, _, body in receiver.posts]
    assert {body["eventTime"] for body in sent} == {"2024-01-31T00:00:00+00:00"}
    assert {auth for _, auth, _ in receiver.posts} == {f"Bearer {KEY}"}
    steps.emit("2024-01-30", settings)
    assert [body for _, _, body in receiver.posts[5:]] == sent

    receiver.refuse_from = 0
    with pytest.raises(
        steps.NightlyError, match=f"emit 2024-01-30: sending to {receiver.url} failed after 0"
    ):
        steps.emit("2024-01-30", settings)
