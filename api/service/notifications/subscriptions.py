"""Webhook subscriptions in the graph, managed by admins, each change with its audit entry in one write.

`WebhookSubscription {id, url, kinds, secret, active, created_by, created_at}`. The secret signs
every delivery (signing.py), so it is kept as given, in the graph; it is returned once, when the
subscription is made, and never again: no listing, audit entry or log holds it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from datetime import UTC, datetime
from urllib.parse import urlsplit

from pydantic import BaseModel

from watershed.api.service.audit import statement as audit_statement
from watershed.api.service.notifications.events import check_kind
from watershed.graph.errors import WatershedError
from watershed.graph.store import GraphStore

#: a given secret's shortest length: shorter ones are guessable from a few signed bodies' worth of tries
MIN_SECRET_LENGTH = 16
MAX_URL_LENGTH = 2000
ID_PATTERN = r"^wh_[0-9a-f]{16}$"

_FIELDS = "s.id, s.url, s.kinds, s.active, s.created_by, s.created_at"
LIST = f"MATCH (s:WebhookSubscription) WHERE s.id > $after RETURN {_FIELDS} ORDER BY s.id LIMIT $limit"
ONE = f"MATCH (s:WebhookSubscription {{id: $id}}) RETURN {_FIELDS}"
CREATE = (
    "CREATE (:WebhookSubscription {id: $id, url: $url, kinds: $kinds, secret: $secret, active: $active, "
    "created_by: $created_by, created_at: $created_at})"
)
UPDATE = "MATCH (s:WebhookSubscription {id: $id}) SET s.url = $url, s.kinds = $kinds, s.active = $active"
#: a removed subscription takes its pending deliveries, dead letters and history with it
REMOVE = (
    "MATCH (s:WebhookSubscription {id: $id}) DELETE s",
    "MATCH (d:WebhookDelivery {subscription: $id}) DELETE d",
    "MATCH (a:WebhookAttempt {subscription: $id}) DELETE a",
)


class WebhookError(WatershedError, ValueError):
    """A bad subscription: a URL that is not http(s), no event kind, a short secret."""


class UnknownSubscriptionError(WatershedError, LookupError):
    pass


class Subscription(BaseModel):
    id: str
    url: str
    kinds: list[str]
    active: bool = True
    created_by: str | None = None
    created_at: str | None = None


class CreatedSubscription(Subscription):
    """Shown once, when made: the secret the receiver checks signatures with."""

    secret: str


def check_url(url: str) -> str:
    """An absolute http or https URL with a host and no user or password in it."""
    text = url.strip() if isinstance(url, str) else ""
    if not text or len(text) > MAX_URL_LENGTH:
        raise WebhookError(f"url {url!r}: give an http or https URL of at most {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError as exc:
        raise WebhookError(f"url {text!r}: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise WebhookError(f"url {text!r}: only http and https URLs can receive webhooks")
    if not parts.hostname:
        raise WebhookError(f"url {text!r}: no host")
    if parts.username is not None or parts.password is not None:
        # it would be shown to every admin who lists the subscriptions: sign with the secret instead
        raise WebhookError(f"url {parts.scheme}://...@{parts.hostname}: no user or password in the URL")
    return text


def check_kinds(kinds: Iterable[str]) -> list[str]:
    chosen = sorted({check_kind(k.strip()) for k in kinds if k.strip()})
    if not chosen:
        raise WebhookError("kinds: give at least one event kind")
    return chosen


def check_secret(secret: str) -> str:
    text = secret.strip()
    if len(text) < MIN_SECRET_LENGTH:
        raise WebhookError(f"secret: at least {MIN_SECRET_LENGTH} characters (it has {len(text)})")
    return text


def _row(row: list) -> Subscription:
    id_, url, kinds, active, created_by, created_at = row
    return Subscription(
        id=id_,
        url=url,
        kinds=list(kinds or []),
        active=bool(active),
        created_by=created_by,
        created_at=created_at,
    )


def _shown(sub: Subscription) -> dict:
    """What the audit entry keeps of a subscription: everything but the secret."""
    return sub.model_dump(include={"url", "kinds", "active"})


def add(
    graph: GraphStore,
    url: str,
    kinds: Iterable[str],
    *,
    actor: str,
    secret: str | None = None,
    active: bool = True,
) -> CreatedSubscription:
    """A new subscription; its secret is `secret` (checked) or generated, and returned only here."""
    created = CreatedSubscription(
        id=f"wh_{secrets.token_hex(8)}",
        url=check_url(url),
        kinds=check_kinds(kinds),
        active=active,
        created_by=actor,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        secret=check_secret(secret) if secret is not None else secrets.token_urlsafe(32),
    )
    graph.write_all(
        [
            (CREATE, created.model_dump()),
            audit_statement(actor, "webhook.add", created.id, None, _shown(created)),
        ]
    )
    return created


def listing(graph: GraphStore, *, after: str = "", limit: int = 50) -> list[Subscription]:
    return [_row(r) for r in graph.read(LIST, {"after": after, "limit": limit})]


def get(graph: GraphStore, subscription: str) -> Subscription:
    rows = graph.read(ONE, {"id": subscription})
    if not rows:
        raise UnknownSubscriptionError(f"no webhook subscription {subscription!r}")
    return _row(rows[0])


def update(
    graph: GraphStore,
    subscription: str,
    *,
    actor: str,
    url: str | None = None,
    kinds: Iterable[str] | None = None,
    active: bool | None = None,
) -> Subscription:
    """Change a subscription's URL, kinds or whether it is active (its secret stays)."""
    before = get(graph, subscription)
    after = before.model_copy(
        update={
            "url": before.url if url is None else check_url(url),
            "kinds": before.kinds if kinds is None else check_kinds(kinds),
            "active": before.active if active is None else active,
        }
    )
    graph.write_all(
        [
            (UPDATE, {"id": subscription, "url": after.url, "kinds": after.kinds, "active": after.active}),
            audit_statement(actor, "webhook.update", subscription, _shown(before), _shown(after)),
        ]
    )
    return after


def remove(graph: GraphStore, subscription: str, *, actor: str) -> None:
    before = get(graph, subscription)
    graph.write_all(
        [(query, {"id": subscription}) for query in REMOVE]
        + [audit_statement(actor, "webhook.remove", subscription, _shown(before), None)]
    )
