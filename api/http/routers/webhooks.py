"""Webhook subscriptions, their delivery history and the dead letters. Admins of all databases only:
an event names nodes of every database, so a limited admin would hear of databases outside their scope."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Literal

from fastapi import APIRouter, Depends, Path, Query, Response
from pydantic import BaseModel, Field

from watershed.api.http.deps import Service, caller, service
from watershed.api.http.paging import Page, PageRequest, keyed_page, page_request
from watershed.api.http.problems import ApiProblem
from watershed.api.service.accounts.rights import Me
from watershed.api.service.notifications import delivery, subscriptions
from watershed.api.service.notifications.delivery import Attempt, Deliverer, Delivery
from watershed.api.service.notifications.events import KINDS, UnknownEventKindError
from watershed.api.service.notifications.settings import WebhookSettings
from watershed.api.service.notifications.subscriptions import (
    CreatedSubscription,
    Subscription,
    UnknownSubscriptionError,
    WebhookError,
)

router = APIRouter(tags=["webhooks"])

SubscriptionId = Path(
    pattern=subscriptions.ID_PATTERN, description="A subscription's id: `wh_` and 16 hex digits."
)
DELIVERY_ID = r"^[0-9]{20}-[0-9a-f]{8}\.wh_[0-9a-f]{16}$"


#: an event kind, as the schema states it (events.KINDS)
KindName = Literal[tuple(KINDS)]  # type: ignore[valid-type]
#: the URL's scheme as the schema states it; its host, port and no user or password are checked
#: by `subscriptions.check_url` (a 400 naming what is wrong)
URL_PATTERN = r"^[Hh][Tt][Tt][Pp][Ss]?://"


class WebhookCreate(BaseModel):
    url: str = Field(
        max_length=subscriptions.MAX_URL_LENGTH, pattern=URL_PATTERN, description="An http or https URL."
    )
    kinds: list[KindName] = Field(min_length=1, description="Event kinds (GET /webhooks/kinds).")
    active: bool = True


class WebhookPatch(BaseModel):
    url: str | None = Field(None, max_length=subscriptions.MAX_URL_LENGTH, pattern=URL_PATTERN)
    kinds: list[KindName] | None = Field(None, min_length=1)
    active: bool | None = None


class EventKind(BaseModel):
    kind: str
    description: str


async def webhook_admin(me: Me = Depends(caller)) -> Me:
    me.require_unrestricted("admin")
    return me


def _bad(exc: Exception) -> ApiProblem:
    return ApiProblem(400, str(exc))


def _known(svc: Service, subscription: str) -> Subscription:
    try:
        return subscriptions.get(svc.graph, subscription)
    except UnknownSubscriptionError as exc:
        raise ApiProblem(404, str(exc)) from None


@router.get("/webhooks/kinds", response_model=list[EventKind])
def kinds(_: Me = Depends(webhook_admin)) -> list[EventKind]:
    """The event kinds a subscription may ask for (docs/notifications.md shows each payload)."""
    return [EventKind(kind=k, description=d) for k, d in KINDS.items()]


@router.get("/webhooks", response_model=Page[Subscription])
def list_webhooks(
    page: PageRequest = Depends(page_request), _: Me = Depends(webhook_admin), svc: Service = Depends(service)
) -> Page[Subscription]:
    after = str(page.position().get("after", ""))
    return keyed_page(
        subscriptions.listing(svc.graph, after=after, limit=page.limit + 1), page.limit, lambda s: s.id
    )


@router.post("/webhooks", response_model=CreatedSubscription, status_code=201)
def add_webhook(
    body: WebhookCreate, me: Me = Depends(webhook_admin), svc: Service = Depends(service)
) -> CreatedSubscription:
    """A new subscription; the answer holds its signing secret, the only time it is shown."""
    try:
        return subscriptions.add(svc.graph, body.url, body.kinds, actor=me.name, active=body.active)
    except (WebhookError, UnknownEventKindError) as exc:
        raise _bad(exc) from None


@router.get("/webhooks/dead-letters", response_model=Page[Delivery])
def dead_letters(
    subscription: str | None = Query(None, pattern=subscriptions.ID_PATTERN),
    page: PageRequest = Depends(page_request),
    _: Me = Depends(webhook_admin),
    svc: Service = Depends(service),
) -> Page[Delivery]:
    """Deliveries that failed every attempt, oldest first, with their last error and body."""
    after = str(page.position().get("after", ""))
    found = delivery.dead_letters(svc.graph, subscription=subscription, after=after, limit=page.limit + 1)
    return keyed_page(found, page.limit, lambda d: d.id)


@router.post("/webhooks/dead-letters/{delivery_id}/retry", response_model=Delivery)
def retry_dead_letter(
    delivery_id: str = Path(
        pattern=DELIVERY_ID, description="A delivery's id: `<event id>.<subscription id>`."
    ),
    me: Me = Depends(webhook_admin),
    svc: Service = Depends(service),
) -> Delivery:
    """Put a dead letter back in the outbox, due now, its attempts counted afresh."""
    try:
        return delivery.retry(svc.graph, delivery_id, actor=me.name)
    except delivery.UnknownDeliveryError as exc:
        raise ApiProblem(404, str(exc)) from None


@router.get("/webhooks/{subscription_id}", response_model=Subscription)
def get_webhook(
    subscription_id: str = SubscriptionId, _: Me = Depends(webhook_admin), svc: Service = Depends(service)
) -> Subscription:
    return _known(svc, subscription_id)


@router.patch("/webhooks/{subscription_id}", response_model=Subscription)
def change_webhook(
    body: WebhookPatch,
    subscription_id: str = SubscriptionId,
    me: Me = Depends(webhook_admin),
    svc: Service = Depends(service),
) -> Subscription:
    """Change the URL, the kinds or whether it is active; the secret stays."""
    _known(svc, subscription_id)
    try:
        return subscriptions.update(
            svc.graph, subscription_id, actor=me.name, url=body.url, kinds=body.kinds, active=body.active
        )
    except (WebhookError, UnknownEventKindError) as exc:
        raise _bad(exc) from None
    except UnknownSubscriptionError as exc:
        raise ApiProblem(404, str(exc)) from None


@router.delete("/webhooks/{subscription_id}", status_code=204)
def remove_webhook(
    subscription_id: str = SubscriptionId, me: Me = Depends(webhook_admin), svc: Service = Depends(service)
) -> Response:
    """Remove a subscription with its pending deliveries, dead letters and history."""
    try:
        subscriptions.remove(svc.graph, subscription_id, actor=me.name)
    except UnknownSubscriptionError as exc:
        raise ApiProblem(404, str(exc)) from None
    return Response(status_code=204)


@router.get("/webhooks/{subscription_id}/deliveries", response_model=Page[Attempt])
def deliveries(
    subscription_id: str = SubscriptionId,
    page: PageRequest = Depends(page_request),
    _: Me = Depends(webhook_admin),
    svc: Service = Depends(service),
) -> Page[Attempt]:
    """The subscription's delivery attempts, newest first: status code, error in words, outcome."""
    _known(svc, subscription_id)
    after = page.position().get("after")
    found = delivery.history(svc.graph, subscription_id, after=after, limit=page.limit + 1)
    return keyed_page(found, page.limit, lambda a: a.id)


@router.get("/webhooks/{subscription_id}/pending", response_model=Page[Delivery])
def pending(
    subscription_id: str = SubscriptionId,
    page: PageRequest = Depends(page_request),
    _: Me = Depends(webhook_admin),
    svc: Service = Depends(service),
) -> Page[Delivery]:
    """The subscription's deliveries waiting for their next attempt."""
    _known(svc, subscription_id)
    after = str(page.position().get("after", ""))
    found = delivery.pending(svc.graph, subscription=subscription_id, after=after, limit=page.limit + 1)
    return keyed_page(found, page.limit, lambda d: d.id)


@asynccontextmanager
async def deliveries_while_serving(app) -> AsyncIterator[None]:
    """The app's lifespan: while it serves, this process sends the outbox (a pass every
    `webhook_poll_seconds`; 0 leaves it to `watershed webhooks deliver`)."""
    deliverer = Deliverer(app.state.service.graph, WebhookSettings())
    deliverer.start()
    try:
        yield
    finally:
        deliverer.stop()
