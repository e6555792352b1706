"""Webhook notifications against a real local receiver that fails on purpose (tests/support/webhook_receiver.py):
signed POSTs, retries with backoff, dead letters, timeouts, redirects not followed, the history (on
FalkorDB and Neo4j), and the outbox entry written in the same write as the steward's tag change that causes it."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import load_sample_warehouse
from tests.support.webhook_receiver import start_receiver
from watershed.api.service import tag_changes
from watershed.api.service.audit import entries
from watershed.api.service.notifications import delivery, events, subscriptions
from watershed.api.service.notifications.settings import WebhookSettings
from watershed.graph.falkordb_store import FalkorDBStore
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy

NODE = "ods.user_profile.city"
T0 = 2_000_000_000.0
SETTINGS = WebhookSettings(
    webhook_max_attempts=3,
    webhook_backoff_seconds=10,
    webhook_backoff_max_seconds=15,
    webhook_timeout_seconds=0.5,
    webhook_history=50,
)


@pytest.fixture
def store(backend_store):
    """The outbox and its delivery, once on FalkorDB and once on Neo4j."""
    return backend_store


@pytest.fixture
def receiver():
    found, server = start_receiver()
    yield found
    server.shutdown()


def _subscribe(graph, receiver, path: str, kinds=("tag.changed",), **settings):
    created = subscriptions.add(graph, f"{receiver.url}{path}", kinds, actor="test-admin")
    receiver.secrets[path] = created.secret
    return created


def _event(graph, kind="tag.changed", **data):
    graph.write_all([events.statement(kind, data or {"node": NODE})])


def test_a_receiver_failing_twice_gets_the_delivery_on_the_third_attempt_signed(store, receiver):
    sub = _subscribe(store, receiver, "/flaky")
    _event(store, node=NODE, key="pii")

    assert delivery.deliver_due(store, SETTINGS, now=T0).retried == 1
    # the backoff: nothing is due again before 10 s, then the wait doubles (capped at 15 s)
    assert delivery.deliver_due(store, SETTINGS, now=T0 + 9).model_dump() == {
        "delivered": 0,
        "retried": 0,
        "dead": 0,
    }
    assert delivery.deliver_due(store, SETTINGS, now=T0 + 10).retried == 1
    assert delivery.deliver_due(store, SETTINGS, now=T0 + 24).retried == 0
    assert delivery.deliver_due(store, SETTINGS, now=T0 + 25).delivered == 1

    posts = receiver.at("/flaky")
    assert len(posts) == 3
    assert all(p.signed for p in posts)
    assert len({p.headers["x-watershed-delivery"] for p in posts}) == 1
    assert len({p.body for p in posts}) == 1  # every attempt sends the same bytes
    assert {p.headers["x-watershed-event"] for p in posts} == {"tag.changed"}
    body = json.loads(posts[0].body)
    assert body["kind"] == "tag.changed" and body["data"] == {"node": NODE, "key": "pii"}
    assert [int(p.headers["x-watershed-timestamp"]) for p in posts] == [T0, T0 + 10, T0 + 25]

    attempts = delivery.history(store, sub.id)
    assert [(a.attempt, a.status_code, a.outcome) for a in attempts] == [
        (3, 200, "delivered"),
        (2, 500, "retry"),
        (1, 500, "retry"),
    ]
    assert attempts[1].error == "HTTP 500 Internal Server Error"
    # delivered: the outbox entry is gone
    assert delivery.pending(store) == [] and delivery.dead_letters(store) == []


def test_a_receiver_that_always_fails_leaves_a_dead_letter_an_admin_can_retry(store, receiver):
    sub = _subscribe(store, receiver, "/down")
    _event(store)
    for step in range(3):
        delivery.deliver_due(store, SETTINGS, now=T0 + 100 * step)
    dead = delivery.dead_letters(store)
    assert [(d.subscription, d.attempts, d.last_status_code, d.last_error) for d in dead] == [
        (sub.id, 3, 500, "HTTP 500 Internal Server Error")
    ]
    assert dead[0].payload["kind"] == "tag.changed"
    # a dead letter is never sent again on its own
    assert delivery.deliver_due(store, SETTINGS, now=T0 + 10_000).model_dump()["retried"] == 0
    assert len(receiver.at("/down")) == 3

    again = delivery.retry(store, dead[0].id, actor="test-admin")
    assert again.status == "pending" and again.attempts == 0
    assert delivery.dead_letters(store) == []
    assert next(e.action for e in entries(store, action="webhook.")) == "webhook.retry"
    assert delivery.deliver_due(store, SETTINGS).retried == 1
    with pytest.raises(delivery.UnknownDeliveryError, match="no dead letter"):
        delivery.retry(store, "nothing.here", actor="test-admin")


def test_a_slow_receiver_is_a_timeout_in_words_and_a_redirect_is_not_followed(store, receiver):
    slow = _subscribe(store, receiver, "/slow")
    moved = _subscribe(store, receiver, "/redirect")
    _event(store)
    assert delivery.deliver_due(store, SETTINGS, now=T0).retried == 2
    (timed_out,) = delivery.history(store, slow.id)
    assert (timed_out.status_code, timed_out.error) == (None, "no answer within 0.5 s")
    (redirected,) = delivery.history(store, moved.id)
    assert redirected.status_code == 302
    assert redirected.error == f"HTTP 302: a redirect (to {receiver.url}/ok) is not followed"
    assert receiver.at("/ok") == []


def test_only_active_subscriptions_of_the_kind_get_a_delivery(store, receiver):
    wanted = _subscribe(store, receiver, "/ok", kinds=["harvest.errors", "tag.changed"])
    _subscribe(store, receiver, "/ok", kinds=["nightly.failed"])
    paused = _subscribe(store, receiver, "/ok")
    subscriptions.update(store, paused.id, actor="test-admin", active=False)
    _event(store)
    assert [d.subscription for d in delivery.pending(store)] == [wanted.id]


def test_a_steward_tag_change_writes_its_event_in_the_same_write(graph_store, receiver):
    load_sample_warehouse(graph_store)
    sub = _subscribe(graph_store, receiver, "/ok")
    store = GraphTagStore(graph_store, default_policy())
    writes: list[list[str]] = []
    write_all = FalkorDBStore.write_all

    def seen(self, statements):
        writes.append([query for query, _ in statements])
        write_all(self, statements)

    FalkorDBStore.write_all = seen
    try:
        tag_changes.set_tags(store, NODE, {"pii": ["L2"]}, by="alice")
        tag_changes.block(store, NODE, "app", by="alice")
    finally:
        FalkorDBStore.write_all = write_all
    # each change, its audit entry and its event: one write
    assert [sum(q == events.OUTBOX for q in w) for w in writes] == [1, 1]
    assert delivery.deliver_due(graph_store, SETTINGS).delivered == 2
    bodies = [
        json.loads(p.body) for p in receiver.at("/ok") if p.headers["x-watershed-delivery"].endswith(sub.id)
    ]
    assert [b["data"] for b in bodies] == [
        {"action": "set", "node": NODE, "key": "pii", "actor": "alice", "origin": "manual", "values": ["L2"]},
        {"action": "block", "node": NODE, "key": "app", "actor": "alice", "origin": "manual"},
    ]
    assert all(p.signed for p in receiver.at("/ok"))


def test_the_history_keeps_the_newest_attempts_of_each_subscription(store, receiver):
    sub = _subscribe(store, receiver, "/down")
    for _ in range(3):
        _event(store)
    short = SETTINGS.model_copy(update={"webhook_history": 2})
    delivery.deliver_due(store, short, now=T0)
    assert len(delivery.history(store, sub.id)) == 2


def test_the_secret_is_shown_once_and_never_listed_or_audited(store, receiver):
    given = "s" * 20
    created = subscriptions.add(store, f"{receiver.url}/ok", ["tag.changed"], actor="a", secret=given)
    assert created.secret == given
    assert "secret" not in subscriptions.get(store, created.id).model_dump()
    assert "secret" not in subscriptions.listing(store)[0].model_dump()
    subscriptions.remove(store, created.id, actor="a")
    audited = json.dumps([e.model_dump() for e in entries(store, action="webhook.")])
    assert given not in audited and '"url"' in audited
    with pytest.raises(subscriptions.UnknownSubscriptionError):
        subscriptions.get(store, created.id)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/hook", "only http and https"),
        ("http://user:pw@example.com/hook", "no user or password"),
        ("https:///hook", "no host"),
        ("http://example.com:99999/", "Port out of range"),
    ],
)
def test_a_bad_url_is_refused_naming_it(graph_store, url, message):
    with pytest.raises(subscriptions.WebhookError, match=message):
        subscriptions.add(graph_store, url, ["tag.changed"], actor="a")


def test_a_bad_kind_or_short_secret_is_refused(graph_store):
    with pytest.raises(events.UnknownEventKindError, match=r"'tag\.removed'"):
        subscriptions.add(graph_store, "http://x/", ["tag.removed"], actor="a")
    with pytest.raises(subscriptions.WebhookError, match="at least 16"):
        subscriptions.add(graph_store, "http://x/", ["tag.changed"], actor="a", secret="short")
