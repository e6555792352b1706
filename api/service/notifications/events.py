"""The event kinds a subscription may ask for, and the outbox statement that records an event.

A use case adds `statement(kind, data)` to the write that makes the change (one `write_all`), so
the change and its notification are stored together or not at all. The statement creates one
`WebhookDelivery` per active subscription of that kind, due at once; with no such subscription
it writes nothing. The delivery process (delivery.py) sends them.
"""

from __future__ import annotations

import json
import secrets
import time
from datetime import UTC, datetime
from typing import Any

from watershed.graph.errors import WatershedError

#: kind -> what it announces (docs/notifications.md shows each payload)
KINDS: dict[str, str] = {
    "sensitive.unprotected": "sensitive columns that no protection covers appeared since the last nightly run",
    "tag.changed": "a steward set, removed, blocked or unblocked a tag on a table or column",
    "proposal.waiting": "PII discovery proposed tags for columns; a steward's decision is waiting",
    "nightly.failed": "a nightly run failed or finished incomplete",
    "nightly.slow": "a nightly run took more than twice the median of the runs before it",
    "harvest.errors": "a harvest run could not analyse some statements",
}

#: one delivery per active subscription of the kind; ids are the event's id and the subscription's
OUTBOX = (
    "MATCH (s:WebhookSubscription) WHERE s.active = true AND $event_kind IN s.kinds "
    "CREATE (:WebhookDelivery {id: $event_id + '.' + s.id, subscription: s.id, kind: $event_kind, "
    "event: $event_id, payload: $event_payload, created_at: $event_at, status: 'pending', attempts: 0, "
    "next_at: $event_ms, claimed_until: 0})"
)


class UnknownEventKindError(WatershedError, ValueError):
    """An event kind that is not one of KINDS; the message names it and the kinds."""


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise UnknownEventKindError(f"event kind {kind!r}: expected one of {', '.join(KINDS)}")
    return kind


def event(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """The event as its body shows it: id (sorts by time), kind, at (UTC) and the kind's data."""
    now = time.time_ns()
    return {
        "id": f"{now:020d}-{secrets.token_hex(4)}",
        "kind": check_kind(kind),
        "at": datetime.fromtimestamp(now / 1e9, UTC).isoformat(timespec="milliseconds"),
        "data": data,
    }


def statement(kind: str, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The outbox statement of one event, for the write of the change that causes it."""
    body = event(kind, data)
    return OUTBOX, {
        "event_kind": kind,
        "event_id": body["id"],
        "event_at": body["at"],
        # the body is fixed here: every attempt sends the same bytes, so a receiver can compare them
        "event_payload": json.dumps(body, sort_keys=True, default=str),
        "event_ms": int(time.time() * 1000),
    }
