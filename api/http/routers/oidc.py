"""Single sign-on (OpenID Connect, docs/sso.md): the login button's facts, the redirect to the
provider, its callback (a session cookie as the token login's), and logout at both ends.

The login and its callback are browser navigations, not API calls: they answer with redirects,
and a refused sign-in is an HTML page saying why (a person reads it, not a program).
"""

from __future__ import annotations

import html

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import BaseModel

from watershed.api.http.deps import SESSION_COOKIE, Service, caller, service
from watershed.api.http.problems import ApiProblem
from watershed.api.service.accounts.oidc import (
    PENDING_SECONDS,
    OidcDisabledError,
    OidcError,
    OidcInfo,
    OidcLogin,
    OidcProviderError,
)
from watershed.api.service.accounts.rights import Me

router = APIRouter(tags=["session"])

#: the cookie that ties a callback to the browser that began the login; SameSite=Lax, as the
#: provider sends the browser back with a cross-site navigation (a Strict cookie would stay behind)
PENDING_COOKIE = "watershed_oidc"
PENDING_PATH = "/api/v1/oidc"


class LoggedOut(BaseModel):
    """Where the browser goes to end its session at the provider too; None for a token login's
    session, or a provider without RP-initiated logout."""

    end_session_url: str | None = None


def sso(request: Request, svc: Service = Depends(service)) -> OidcLogin:
    """The process's one OidcLogin (it keeps the provider's discovery document and keys)."""
    state = request.app.state
    login = getattr(state, "oidc", None)
    if login is None:
        login = state.oidc = OidcLogin(svc.settings, svc.graph)
    return login


def _base(request: Request, svc: Service) -> str:
    return (svc.settings.oidc_redirect_base or str(request.base_url)).rstrip("/")


def _callback_uri(request: Request, svc: Service) -> str:
    return f"{_base(request, svc)}{PENDING_PATH}/callback"


def _page(status: int, title: str, message: str) -> HTMLResponse:
    body = (
        "<!doctype html><html><head><meta charset='utf-8'><title>Watershed: "
        f"{html.escape(title)}</title></head><body><main class='sso-refused'>"
        f"<h1>{html.escape(title)}</h1><p id='reason'>{html.escape(message)}</p>"
        "<p><a href='/'>Back to the sign-in page</a></p></main></body></html>"
    )
    return HTMLResponse(body, status_code=status)


@router.get("/oidc", response_model=OidcInfo)
def info(login: OidcLogin = Depends(sso)) -> OidcInfo:
    """Public: whether single sign-on is configured, and the provider's name for the login page."""
    return login.info()


@router.get("/oidc/login", response_class=RedirectResponse, status_code=303)
def begin(request: Request, svc: Service = Depends(service), login: OidcLogin = Depends(sso)) -> Response:
    """Public: send the browser to the provider's sign-in page (authorization code, PKCE, state, nonce)."""
    try:
        started = login.begin(_callback_uri(request, svc))
    except OidcDisabledError as exc:
        raise ApiProblem(404, str(exc)) from None
    except OidcProviderError as exc:
        return _page(502, "The identity provider does not answer", str(exc))
    response = RedirectResponse(started.url, status_code=303)
    response.set_cookie(
        PENDING_COOKIE,
        started.browser_secret,
        max_age=PENDING_SECONDS,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
        path=PENDING_PATH,
    )
    return response


@router.get("/oidc/callback", response_class=RedirectResponse, status_code=303)
def callback(request: Request, svc: Service = Depends(service), login: OidcLogin = Depends(sso)) -> Response:
    """Public: where the provider sends the browser back; a session cookie and the UI, or a page
    saying why the sign-in was refused (403; every refusal is audited as `oidc.refused`)."""
    try:
        done = login.finish(
            request.cookies.get(PENDING_COOKIE), dict(request.query_params), _callback_uri(request, svc)
        )
    except OidcDisabledError as exc:
        raise ApiProblem(404, str(exc)) from None
    except OidcError as exc:
        response: Response = _page(403, "Sign-in refused", str(exc))
    except OidcProviderError as exc:
        response = _page(502, "The identity provider does not answer", str(exc))
    else:
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            done.session_secret,
            max_age=int(svc.settings.api_session_hours * 3600),
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
    # one use: whatever the outcome, the pending login is gone from the graph
    response.delete_cookie(PENDING_COOKIE, path=PENDING_PATH, httponly=True, samesite="lax")
    return response


@router.post("/oidc/logout", response_model=LoggedOut)
def logout(
    request: Request,
    me: Me = Depends(caller),
    svc: Service = Depends(service),
    login: OidcLogin = Depends(sso),
) -> Response:
    """End the caller's session here, and say where the browser ends it at the provider (an SSO
    session's only). A cookie-authenticated POST: the CSRF header is needed."""
    cookie = request.cookies.get(SESSION_COOKIE)
    answer = LoggedOut()
    if cookie:
        answer.end_session_url = login.logout(cookie, me, f"{_base(request, svc)}/")
        svc.accounts.close_session(cookie)
    response = Response(answer.model_dump_json(), media_type="application/json")
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response
