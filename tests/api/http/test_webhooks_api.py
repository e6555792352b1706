"""/api/v1/webhooks: admins of all databases only, audited; the API process itself sends the outbox,
signed, to a real local receiver (tests/support/webhook_receiver.py) that fails on purpose."""

from __future__ import annotations

import json
import time

import pytest

from tests.support.webhook_receiver import start_receiver

NODE = "ods.user_profile.city"


@pytest.fixture(scope="module", autouse=True)
def _quick_deliveries():
    """Read by the app when it starts (before the module's `api`): a pass every 0.2 s, one attempt."""
    patch = pytest.MonkeyPatch()
    patch.setenv("WATERSHED_WEBHOOK_POLL_SECONDS", "0.2")
    patch.setenv("WATERSHED_WEBHOOK_MAX_ATTEMPTS", "1")
    yield
    patch.undo()


@pytest.fixture(scope="module")
def receiver():
    found, server = start_receiver()
    yield found
    server.shutdown()


def _arrived(receiver, path: str, count: int) -> list:
    """The POSTs at `path` once `count` have come (the API's delivery loop sends them)."""
    deadline = time.monotonic() + 30
    while len(receiver.at(path)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return receiver.at(path)


def _add(api, receiver, path: str, kinds=("tag.changed",)) -> dict:
    with api.client("admin") as c:
        answer = c.post("/webhooks", json={"url": f"{receiver.url}{path}", "kinds": list(kinds)})
    assert answer.status_code == 201, answer.text
    created = answer.json()
    receiver.secrets[path] = created["secret"]
    return created


@pytest.mark.parametrize("who", ["viewer", "steward", "ods_admin", "ods_steward"])
def test_only_an_admin_of_every_database_may_touch_webhooks(api, who):
    with api.client(who) as c:
        assert c.get("/webhooks").status_code == 403
        assert c.get("/webhooks/kinds").status_code == 403
        assert c.get("/webhooks/dead-letters").status_code == 403
        assert c.post("/webhooks", json={"url": "http://x/", "kinds": ["tag.changed"]}).status_code == 403
        assert c.delete("/webhooks/wh_0123456789abcdef").status_code == 403
    with api.client() as anonymous:
        assert anonymous.get("/webhooks").status_code == 401


def test_a_steward_tag_change_arrives_signed_from_the_api_process(api, receiver):
    created = _add(api, receiver, "/ok")
    with api.client("steward") as c:
        assert c.put(f"/nodes/{NODE}/tags/pii", json={"values": ["L3"]}).status_code == 200
    (post,) = _arrived(receiver, "/ok", 1)
    assert post.signed
    assert post.headers["x-watershed-event"] == "tag.changed"
    assert post.headers["x-watershed-delivery"].endswith("." + created["id"])
    assert json.loads(post.body)["data"] == {
        "action": "set",
        "node": NODE,
        "key": "pii",
        "actor": "steward",
        "origin": "manual",
        "values": ["L3"],
    }
    with api.client("admin") as c:
        history = c.get(f"/webhooks/{created['id']}/deliveries").json()["items"]
        assert [(h["attempt"], h["status_code"], h["outcome"]) for h in history] == [(1, 200, "delivered")]
        assert c.delete(f"/webhooks/{created['id']}").status_code == 204


def test_admin_manages_subscriptions_and_the_secret_is_shown_once(api, receiver):
    created = _add(api, receiver, "/ok", kinds=["nightly.failed", "harvest.errors"])
    assert len(created["secret"]) >= 32
    sub = created["id"]
    with api.client("admin") as c:
        listed = [s for s in c.get("/webhooks").json()["items"] if s["id"] == sub]
        assert listed == [{k: v for k, v in created.items() if k != "secret"}]
        assert "secret" not in c.get(f"/webhooks/{sub}").json()
        changed = c.patch(f"/webhooks/{sub}", json={"active": False, "kinds": ["nightly.slow"]}).json()
        assert (changed["active"], changed["kinds"]) == (False, ["nightly.slow"])
        audit = c.get("/audit", params={"action": "webhook."}).json()["items"]
        assert [(e["action"], e["target"]) for e in audit[:2]] == [
            ("webhook.update", sub),
            ("webhook.add", sub),
        ]
        assert created["secret"] not in json.dumps(audit)
        assert c.delete(f"/webhooks/{sub}").status_code == 204
        assert c.get(f"/webhooks/{sub}").status_code == 404
        assert c.delete(f"/webhooks/{sub}").status_code == 404
        kinds = [k["kind"] for k in c.get("/webhooks/kinds").json()]
        assert "tag.changed" in kinds and "sensitive.unprotected" in kinds


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        # what the schema states (the scheme, the kinds) is a 422, what only the service checks a 400
        ({"url": "ftp://example.com/", "kinds": ["tag.changed"]}, 422, "^[Hh][Tt][Tt][Pp][Ss]?://"),
        ({"url": "http://example.com/", "kinds": ["tag.renamed"]}, 422, "'tag.changed'"),
        ({"url": "http://a:b@example.com/", "kinds": ["tag.changed"]}, 400, "no user or password"),
        ({"url": "https:///hook", "kinds": ["tag.changed"]}, 400, "no host"),
    ],
)
def test_a_bad_subscription_is_refused_naming_it(api, body, status, message):
    with api.client("admin") as c:
        answer = c.post("/webhooks", json=body)
    assert answer.status_code == status and message in answer.text, answer.text


def test_a_failing_receiver_leaves_a_dead_letter_retried_through_the_api(api, receiver):
    created = _add(api, receiver, "/down")
    with api.client("steward") as c:
        assert c.put(f"/nodes/{NODE}/tags/pii", json={"values": ["L2"]}).status_code == 200
    _arrived(receiver, "/down", 1)
    with api.client("admin") as c:
        deadline = time.monotonic() + 30
        while not (
            dead := c.get("/webhooks/dead-letters", params={"subscription": created["id"]}).json()["items"]
        ):
            assert time.monotonic() < deadline, "no dead letter"
            time.sleep(0.05)
        assert [(d["attempts"], d["last_status_code"], d["last_error"]) for d in dead] == [
            (1, 500, "HTTP 500 Internal Server Error")
        ]
        retried = c.post(f"/webhooks/dead-letters/{dead[0]['id']}/retry")
        assert retried.status_code == 200 and retried.json()["status"] == "pending"
        assert len(_arrived(receiver, "/down", 2)) == 2
        assert (
            c.post(
                "/webhooks/dead-letters/00000000000000000000-00000000.wh_0123456789abcdef/retry"
            ).status_code
            == 404
        )
        c.delete(f"/webhooks/{created['id']}")
