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


def harvest_errors(
    run_id: str, source: str | None, tasks: int, tasks_with_errors: int, statement_errors: int | None
) -> tuple[str, dict[str, Any]] | None:
    """The `harvest.errors` event of a run with tasks it could not analyse; None when it had none."""
    if not tasks_with_errors:
        return None
    return statement(
        "harvest.errors",
        {
            "run": run_id,
            "source": source,
            "tasks": tasks,
            "tasks_with_errors": tasks_with_errors,
            "statement_errors": statement_errors,
            # where the errors are, in words (task, statement, line and column)
            "errors": f"/api/v1/harvest/runs/{run_id}/errors",
        },
    )


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


#: a nightly run slower than this many times the median of the runs before it is `nightly.slow`
SLOW_FACTOR = 2.0
#: the runs before it that the median is taken over, and how many it needs at least
SLOW_WINDOW, SLOW_MIN_RUNS = 7, 3


def nightly(
    day: str, status: str, missing: list[str], seconds: float, earlier_seconds: list[float]
) -> list[tuple[str, dict[str, Any]]]:
    """The events of a finished nightly run: `nightly.failed` when it is incomplete, `nightly.slow`
    when it took more than twice the median of the last runs (`earlier_seconds`, oldest first)."""
    found = []
    if status != "complete":
        found.append(statement("nightly.failed", {"date": day, "status": status, "missing": missing}))
    window = earlier_seconds[-SLOW_WINDOW:]
    if len(window) >= SLOW_MIN_RUNS and seconds > SLOW_FACTOR * median(window):
        found.append(
            statement(
                "nightly.slow",
                {
                    "date": day,
                    "seconds": round(seconds, 2),
                    "median_seconds": round(median(window), 2),
                    "runs": len(window),
                },
            )
        )
    return found


#: the columns a `sensitive.unprotected` event lists at most (its `count` is all of them)
LISTED_COLUMNS = 100


def unprotected(day: str, previous: str | None, columns: list[str]) -> tuple[str, dict[str, Any]] | None:
    """The `sensitive.unprotected` event of a coverage snapshot: the sensitive columns unprotected
    now that were not in the `previous` snapshot (None: the first snapshot, every one is new)."""
    if not columns:
        return None
    return statement(
        "sensitive.unprotected",
        {
            "date": day,
            "previous": previous,
            "count": len(columns),
            "columns": columns[:LISTED_COLUMNS],
            "more": len(columns) > LISTED_COLUMNS,
        },
    )
