"""Login (a token for a session cookie), logout, who am I, and the health check."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from watershed.api.http.deps import SESSION_COOKIE, Service, caller, service
from watershed.api.http.models import Health, Login
from watershed.api.http.problems import ApiProblem, unauthorized
from watershed.api.service.accounts.rights import Me

router = APIRouter(tags=["session"])


@router.get("/health", response_model=Health)
def health(svc: Service = Depends(service)) -> Health:
    """Public: the process answers, and so do the graph server and the Celery broker; 503 naming
    each that does not."""
    down = {name: state for name, state in svc.dependencies().items() if state != "ok"}
    if down:
        raise ApiProblem(503, "; ".join(f"{name} {state}" for name, state in down.items()))
    return Health()


@router.post("/session", response_model=Me)
def login(body: Login, request: Request, response: Response, svc: Service = Depends(service)) -> Me:
    """Exchange an API token for a session cookie (HttpOnly, SameSite=Strict)."""
    found = svc.accounts.authenticate(body.token)
    if found is None:
        raise unauthorized()
    me, token_id = found
    secret = svc.accounts.open_session(me, token_id, svc.settings.api_session_hours)
    if secret is None:  # revoked (or its user deleted) since it was verified
        raise unauthorized()
    response.set_cookie(
        SESSION_COOKIE,
        secret,
        max_age=int(svc.settings.api_session_hours * 3600),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return me


@router.delete("/session", status_code=204)
def logout(
    request: Request, response: Response, me: Me = Depends(caller), svc: Service = Depends(service)
) -> Response:
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie:
        svc.accounts.close_session(cookie)
    response = Response(status_code=204)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response


@router.get("/me", response_model=Me)
def whoami(me: Me = Depends(caller)) -> Me:
    return me
