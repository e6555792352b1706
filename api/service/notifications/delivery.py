"""Delivery of the outbox: claim what is due, POST it signed, retry with backoff, dead-letter, history.

Each `WebhookDelivery` stays in the graph until it is delivered (then deleted) or has failed
`webhook_max_attempts` times (then `status: 'dead'`, a dead letter an admin may retry). A process
claims a few due deliveries at a time (`claimed_until`, a lease): one that dies while sending
leaves them to be claimed again when the lease ends, so a crash loses nothing but may send a
delivery twice; receivers drop repeats by `X-Watershed-Delivery`. Every attempt is recorded as a
`WebhookAttempt` (status code, error in words, never the secret), the newest `webhook_history`
of each subscription kept.

Redirects are not followed (a 3xx is a failure naming where it pointed): the subscription names
the one URL that receives the secret's signatures.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from datetime import UTC, datetime
from typing import Any, Literal

import httpx
from pydantic import BaseModel

from watershed.api.service.audit import statement as audit_statement
from watershed.api.service.notifications import signing
from watershed.api.service.notifications.settings import WebhookSettings
from watershed.graph.errors import WatershedError, first_line
from watershed.graph.store import GraphStore

log = logging.getLogger("watershed.api.service.notifications")

#: deliveries claimed at once: a batch is sent before its lease ends even when each POST times out
CLAIM_BATCH = 10

#: a read first: a pass with nothing due (the usual one) writes nothing
DUE = (
    "MATCH (d:WebhookDelivery) WHERE d.status = 'pending' AND d.next_at <= $now AND d.claimed_until <= $now "
    "MATCH (s:WebhookSubscription {id: d.subscription}) WHERE s.active = true RETURN count(d)"
)
CLAIM = (
    "MATCH (d:WebhookDelivery) WHERE d.status = 'pending' AND d.next_at <= $now AND d.claimed_until <= $now "
    "MATCH (s:WebhookSubscription {id: d.subscription}) WHERE s.active = true "
    "WITH d, s ORDER BY d.next_at, d.id LIMIT $limit SET d.claimed_until = $until "
    "RETURN d.id, d.kind, d.payload, d.attempts, s.id, s.url, s.secret"
)
_ATTEMPT = (
    "CREATE (:WebhookAttempt {id: $attempt_id, delivery: d.id, subscription: d.subscription, kind: d.kind, "
    "attempt: $attempt, at: $at, code: $code, error: $error, status: $outcome})"
)
DELIVERED = "MATCH (d:WebhookDelivery {id: $id}) " + _ATTEMPT + " DELETE d"
FAILED = (
    "MATCH (d:WebhookDelivery {id: $id}) SET d.attempts = $attempt, d.status = $status, d.next_at = $next_at, "
    "d.claimed_until = 0, d.last_code = $code, d.last_error = $error " + _ATTEMPT
)
PRUNE = "MATCH (a:WebhookAttempt {subscription: $subscription}) WITH a ORDER BY a.id DESC SKIP $keep DELETE a"
HISTORY = (
    "MATCH (a:WebhookAttempt {subscription: $subscription}) WHERE a.id < $after "
    "RETURN a.id, a.delivery, a.subscription, a.kind, a.attempt, a.at, a.code, a.error, a.status "
    "ORDER BY a.id DESC LIMIT $limit"
)
_DELIVERY_FIELDS = (
    "d.id, d.subscription, d.kind, d.event, d.created_at, d.status, d.attempts, d.next_at, d.last_code, "
    "d.last_error, d.payload"
)
DEAD = (
    "MATCH (d:WebhookDelivery) WHERE d.status = 'dead' AND d.id > $after AND "
    "($subscription IS NULL OR d.subscription = $subscription) "
    f"RETURN {_DELIVERY_FIELDS} ORDER BY d.id LIMIT $limit"
)
PENDING = (
    "MATCH (d:WebhookDelivery) WHERE d.status = 'pending' AND d.id > $after AND "
    "($subscription IS NULL OR d.subscription = $subscription) "
    f"RETURN {_DELIVERY_FIELDS} ORDER BY d.id LIMIT $limit"
)
ONE = f"MATCH (d:WebhookDelivery {{id: $id}}) RETURN {_DELIVERY_FIELDS}"
RETRY = (
    "MATCH (d:WebhookDelivery {id: $id}) WHERE d.status = 'dead' "
    "SET d.status = 'pending', d.attempts = 0, d.next_at = $now, d.claimed_until = 0"
)
#: above every id: the newest-first history starts here
NEWEST = "~"

Outcome = Literal["delivered", "retry", "dead"]


class UnknownDeliveryError(WatershedError, LookupError):
    pass


class Attempt(BaseModel):
    """One POST of a delivery, as the history keeps it."""

    id: str
    delivery: str
    subscription: str
    kind: str
    attempt: int
    at: str
    #: the receiver's status code; None when no answer came (timeout, refused connection)
    status_code: int | None = None
    error: str | None = None
    outcome: Outcome


class Delivery(BaseModel):
    """An outbox entry: pending (due at `next_at`) or dead (a dead letter)."""

    id: str
    subscription: str
    kind: str
    event: str
    created_at: str
    status: Literal["pending", "dead"]
    attempts: int
    next_at: str | None = None
    last_status_code: int | None = None
    last_error: str | None = None
    payload: Any = None


class DeliveryReport(BaseModel):
    """What one pass of `deliver_due` did."""

    delivered: int = 0
    retried: int = 0
    dead: int = 0


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


def _delivery(row: list) -> Delivery:
    id_, sub, kind, event, created_at, status, attempts, next_at, code, error, payload = row
    return Delivery(
        id=id_,
        subscription=sub,
        kind=kind,
        event=event,
        created_at=created_at,
        status=status,
        attempts=attempts or 0,
        next_at=_iso(next_at / 1000) if status == "pending" and next_at is not None else None,
        last_status_code=code,
        last_error=error,
        payload=json.loads(payload) if payload else None,
    )


def backoff(attempt: int, settings: WebhookSettings) -> float:
    """Seconds to wait after failed attempt number `attempt` (1, 2, ...): doubling, capped."""
    return min(settings.webhook_backoff_seconds * 2 ** (attempt - 1), settings.webhook_backoff_max_seconds)


def post(
    client: httpx.Client, url: str, secret: str, delivery: str, kind: str, body: bytes, now: float
) -> tuple[int | None, str | None]:
    """POST one delivery; (status code, None) when the receiver took it, else (code or None, why in words)."""
    timestamp = str(int(now))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "watershed-webhooks/1",
        signing.EVENT_HEADER: kind,
        signing.DELIVERY_HEADER: delivery,
        signing.TIMESTAMP_HEADER: timestamp,
        signing.SIGNATURE_HEADER: signing.signature(secret, timestamp, body),
    }
    try:
        answer = client.post(url, content=body, headers=headers)
    except httpx.TimeoutException:
        return None, f"no answer within {client.timeout.read:g} s"
    except httpx.ConnectError as exc:
        return None, f"cannot connect: {first_line(exc)}"
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {first_line(exc)}"
    code = answer.status_code
    if 200 <= code < 300:
        return code, None
    if answer.is_redirect:
        return (
            code,
            f"HTTP {code}: a redirect (to {answer.headers.get('location', '?')[:200]}) is not followed",
        )
    return code, f"HTTP {code} {answer.reason_phrase}".strip()


def _attempt_id() -> str:
    return f"{time.time_ns():020d}-{secrets.token_hex(4)}"


def deliver_due(
    graph: GraphStore, settings: WebhookSettings | None = None, *, now: float | None = None, limit: int = 500
) -> DeliveryReport:
    """Send every delivery due at `now` (default: the clock), up to `limit`, and record each attempt."""
    settings = settings or WebhookSettings()
    report = DeliveryReport()
    clock = time.time() if now is None else now
    now_ms = int(clock * 1000)
    if not graph.read(DUE, {"now": now_ms})[0][0]:
        return report
    touched: set[str] = set()
    timeout = settings.webhook_timeout_seconds
    with httpx.Client(timeout=timeout, follow_redirects=False) as client:
        while report.delivered + report.retried + report.dead < limit:
            until = now_ms + int(settings.webhook_lease_seconds * 1000)
            claimed = graph.record(CLAIM, {"now": now_ms, "until": until, "limit": CLAIM_BATCH})
            if not claimed:
                break
            for delivery, kind, payload, attempts, sub, url, secret in claimed:
                attempt = (attempts or 0) + 1
                sent_at = time.time() if now is None else now
                code, error = post(client, url, secret, delivery, kind, payload.encode(), sent_at)
                params = {
                    "id": delivery,
                    "attempt_id": _attempt_id(),
                    "attempt": attempt,
                    "at": _iso(sent_at),
                    "code": code,
                    "error": error,
                }
                if error is None:
                    graph.record(DELIVERED, params | {"outcome": "delivered"})
                    report.delivered += 1
                elif attempt >= settings.webhook_max_attempts:
                    graph.record(FAILED, params | {"outcome": "dead", "status": "dead", "next_at": None})
                    report.dead += 1
                else:
                    wait_ms = int(backoff(attempt, settings) * 1000)
                    graph.record(
                        FAILED,
                        params | {"outcome": "retry", "status": "pending", "next_at": now_ms + wait_ms},
                    )
                    report.retried += 1
                log.info(
                    "webhook %s delivery %s (%s) attempt %d: %s",
                    sub,
                    delivery,
                    kind,
                    attempt,
                    error or f"delivered (HTTP {code})",
                )
                touched.add(sub)
    for sub in touched:
        graph.record(PRUNE, {"subscription": sub, "keep": settings.webhook_history})
    return report


def history(
    graph: GraphStore, subscription: str, *, after: str | None = None, limit: int = 50
) -> list[Attempt]:
    """A subscription's attempts, newest first, older than `after` (an attempt id)."""
    rows = graph.read(HISTORY, {"subscription": subscription, "after": after or NEWEST, "limit": limit})
    return [
        Attempt(
            id=i,
            delivery=d,
            subscription=s,
            kind=k,
            attempt=n,
            at=at,
            status_code=code,
            error=err,
            outcome=out,
        )
        for i, d, s, k, n, at, code, err, out in rows
    ]


def dead_letters(
    graph: GraphStore, *, subscription: str | None = None, after: str = "", limit: int = 50
) -> list[Delivery]:
    return [
        _delivery(r) for r in graph.read(DEAD, {"after": after, "limit": limit, "subscription": subscription})
    ]


def pending(
    graph: GraphStore, *, subscription: str | None = None, after: str = "", limit: int = 50
) -> list[Delivery]:
    return [
        _delivery(r)
        for r in graph.read(PENDING, {"after": after, "limit": limit, "subscription": subscription})
    ]


def retry(graph: GraphStore, delivery: str, *, actor: str) -> Delivery:
    """Put a dead letter back in the outbox, due now, with its attempts counted afresh."""
    rows = graph.read(ONE, {"id": delivery})
    if not rows or rows[0][5] != "dead":
        raise UnknownDeliveryError(f"no dead letter {delivery!r}")
    before = _delivery(rows[0])
    graph.write_all(
        [
            (RETRY, {"id": delivery, "now": int(time.time() * 1000)}),
            audit_statement(
                actor,
                "webhook.retry",
                delivery,
                {"attempts": before.attempts, "last_error": before.last_error},
                {"status": "pending"},
            ),
        ]
    )
    return _delivery(graph.read(ONE, {"id": delivery})[0])


class Deliverer:
    """The delivery loop of a long-running process (the API): a pass every `webhook_poll_seconds`."""

    def __init__(self, graph: GraphStore, settings: WebhookSettings | None = None) -> None:
        self.graph = graph
        self.settings = settings or WebhookSettings()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.settings.webhook_poll_seconds <= 0 or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="watershed-webhooks", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.settings.webhook_timeout_seconds + 5)

    def _loop(self) -> None:
        while not self._stop.wait(self.settings.webhook_poll_seconds):
            try:
                deliver_due(self.graph, self.settings)
            except Exception as exc:  # a graph that is down now: the next pass tries again
                log.warning("webhook delivery pass failed: %s: %s", type(exc).__name__, first_line(exc))
