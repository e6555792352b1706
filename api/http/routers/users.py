"""Users, their grants (role and databases) and tokens; the audit trail. Admins only (a user may make their own tokens)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Query, Response

from watershed.api.http.deps import Service, admin, caller, service
from watershed.api.http.models import TOKEN_ID_PATTERN, UserCreate, UserPatch
from watershed.api.http.nodes import NODE_ID, parse
from watershed.api.http.paging import Page, PageRequest, keyed_page, page_request
from watershed.api.http.problems import CONFLICT_RESPONSES, ApiProblem
from watershed.api.service.accounts.names import UserName
from watershed.api.service.accounts.rights import Me
from watershed.api.service.accounts.store import (
    AccountError,
    CreatedToken,
    TokenInfo,
    UnknownTokenError,
    UnknownUserError,
    User,
)
from watershed.api.service.audit import AuditEntry, entries

router = APIRouter(tags=["users"])

#: an entry's `at` is an ISO UTC time (`+00:00`) compared as text: a bound of the same form, to the
#: minute, second or fraction, or a day
UTC_TIME = r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(\+00:00)?)?$"


def _user(svc: Service, name: str) -> User:
    try:
        return svc.accounts.get(name)
    except UnknownUserError as exc:
        raise ApiProblem(404, str(exc)) from None


def _managed(svc: Service, me: Me, name: str) -> User:
    """A user `me` may manage: a limited admin only users whose scope lies inside their own."""
    user = _user(svc, name)
    me.require_scope(user.databases)
    return user


@router.get("/users", response_model=Page[User])
def list_users(
    page: PageRequest = Depends(page_request), _: Me = Depends(admin), svc: Service = Depends(service)
) -> Page[User]:
    after = str(page.position().get("after", ""))
    return keyed_page(
        svc.accounts.users(after, page.limit + 1), page.limit, lambda u: u.name, total=svc.accounts.count()
    )


@router.post("/users", response_model=User, status_code=201, responses=CONFLICT_RESPONSES)
def add_user(body: UserCreate, me: Me = Depends(admin), svc: Service = Depends(service)) -> User:
    me.require_scope(body.databases)
    try:
        return svc.accounts.add(body.name, body.role, body.databases, actor=me.name)
    except AccountError as exc:
        raise ApiProblem(409 if "already exists" in str(exc) else 400, str(exc)) from None


@router.get("/users/{name}", response_model=User)
def get_user(name: UserName, _: Me = Depends(admin), svc: Service = Depends(service)) -> User:
    return _user(svc, name)


@router.patch("/users/{name}", response_model=User)
def change_user(
    name: UserName, body: UserPatch, me: Me = Depends(admin), svc: Service = Depends(service)
) -> User:
    """Change a user's role and/or databases (a grant); `databases: null` gives all databases."""
    _managed(svc, me, name)
    changes = body.model_dump(exclude_unset=True)
    if "databases" in changes:
        me.require_scope(changes["databases"])
    try:
        return svc.accounts.update(
            name, me.name, role=changes.get("role"), databases=changes.get("databases", ...)
        )
    except AccountError as exc:
        raise ApiProblem(400, str(exc)) from None
    except UnknownUserError as exc:
        raise ApiProblem(404, str(exc)) from None


@router.delete("/users/{name}", status_code=204)
def delete_user(name: UserName, me: Me = Depends(admin), svc: Service = Depends(service)) -> Response:
    """Delete a user: their tokens and sessions stop working at once, in every API process."""
    _managed(svc, me, name)
    try:
        svc.accounts.delete(name, me.name)
    except UnknownUserError as exc:
        raise ApiProblem(404, str(exc)) from None
    return Response(status_code=204)


def _self_or_admin(me: Me, svc: Service, name: str) -> None:
    # `name` is folded; an account stored before names were folded may sign in as `Alice`
    if me.name.lower() != name:
        me.require("admin")
        _managed(svc, me, name)


@router.post("/users/{name}/tokens", response_model=CreatedToken, status_code=201)
def create_token(name: UserName, me: Me = Depends(caller), svc: Service = Depends(service)) -> CreatedToken:
    """A new token for the user (admin, or the user themself); the answer is the only time it is shown."""
    _self_or_admin(me, svc, name)
    try:
        return svc.accounts.create_token(name, me.name)
    except UnknownUserError as exc:
        raise ApiProblem(404, str(exc)) from None


@router.get("/users/{name}/tokens", response_model=Page[TokenInfo])
def list_tokens(
    name: UserName,
    page: PageRequest = Depends(page_request),
    me: Me = Depends(caller),
    svc: Service = Depends(service),
) -> Page[TokenInfo]:
    _self_or_admin(me, svc, name)
    _user(svc, name)
    after = str(page.position().get("after", ""))
    return keyed_page(svc.accounts.tokens(name, after, page.limit + 1), page.limit, lambda t: t.id)


@router.delete("/users/{name}/tokens/{token_id}", status_code=204)
def revoke_token(
    name: UserName,
    token_id: str = Path(
        pattern=TOKEN_ID_PATTERN,
        description="A token's id: 16 hex digits, the `<id>` of `wst_<id>_<secret>`.",
        examples=["0123456789abcdef"],
    ),
    me: Me = Depends(caller),
    svc: Service = Depends(service),
) -> Response:
    _self_or_admin(me, svc, name)
    try:
        svc.accounts.revoke_token(name, token_id, me.name)
    except UnknownTokenError as exc:
        raise ApiProblem(404, str(exc)) from None
    return Response(status_code=204)


@router.get("/audit", response_model=Page[AuditEntry])
def audit(
    actor: str | None = Query(None, max_length=200),
    action: str | None = Query(
        None, max_length=200, description="An action or its prefix: tag., user.grant, ..."
    ),
    since: str | None = Query(
        None, pattern=UTC_TIME, description="A UTC time, e.g. 2026-01-01T00:00:00 or 2026-01-01"
    ),
    until: str | None = Query(None, pattern=UTC_TIME, description="A UTC time, excluded"),
    node: str | None = Query(
        None,
        max_length=1000,
        pattern=NODE_ID,
        description="A table or column id: only its own changes (tags, blocks, discovery decisions).",
    ),
    page: PageRequest = Depends(page_request),
    me: Me = Depends(caller),
    svc: Service = Depends(service),
) -> Page[AuditEntry]:
    """The audit trail, newest first: admins of all databases (a limited admin would see other
    databases' changes); a node's history (`node`) also a steward of the node's database."""
    if node is None:
        me.require_unrestricted("admin")
    else:
        node, _label, db = parse(node)
        me.require("steward", db)
    after = page.position().get("after")
    found = entries(
        svc.graph,
        after=after,
        limit=page.limit + 1,
        actor=actor,
        action=action,
        since=since,
        until=until,
        node=node,
    )
    return keyed_page(found, page.limit, lambda e: e.id)
