"""RFC 9457 problem details for every error the API answers with.

Bodies are `application/problem+json`: {type, title, status, detail, instance} (+ `errors` for
validation). 401 and 403 say nothing about whether a user or token exists.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from watershed.api.accounts.rights import ForbiddenError
from watershed.api.authz.errors import AuthzError, UnknownGrantError
from watershed.graph.errors import WatershedError
from watershed.ingest.points import QueryError

MEDIA_TYPE = "application/problem+json"
log = logging.getLogger("watershed.api")


class Problem(BaseModel):
    type: str = "about:blank"
    title: str
    status: int
    detail: str | None = None
    instance: str | None = None
    errors: list[dict[str, Any]] | None = None


class ApiProblem(WatershedError, Exception):
    """Raise anywhere in a route: answered as a problem with this status and detail."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers


def not_found(detail: str) -> ApiProblem:
    return ApiProblem(404, detail)


def unauthorized() -> ApiProblem:
    return ApiProblem(401, "a valid API token or session is needed", {"WWW-Authenticate": "Bearer"})


def problem_response(
    request: Request, status: int, detail: str | None, errors: list | None = None, headers: dict | None = None
) -> JSONResponse:
    body = Problem(
        title=HTTPStatus(status).phrase,
        status=status,
        detail=detail,
        instance=request.url.path,
        errors=errors,
    )
    return JSONResponse(
        body.model_dump(exclude_none=True), status_code=status, media_type=MEDIA_TYPE, headers=headers
    )


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiProblem)
    async def _api_problem(request: Request, exc: ApiProblem) -> JSONResponse:
        return problem_response(request, exc.status, exc.detail, headers=exc.headers)

    @app.exception_handler(AuthzError)
    @app.exception_handler(QueryError)
    async def _bad_request(request: Request, exc: Exception) -> JSONResponse:
        return problem_response(request, 400, str(exc))

    @app.exception_handler(UnknownGrantError)
    async def _unknown(request: Request, exc: UnknownGrantError) -> JSONResponse:
        return problem_response(request, 404, str(exc))

    @app.exception_handler(ForbiddenError)
    async def _forbidden(request: Request, exc: ForbiddenError) -> JSONResponse:
        return problem_response(request, 403, str(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return problem_response(
            request, exc.status_code, str(exc.detail), headers=getattr(exc, "headers", None)
        )

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors()
        ]
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"])
        return problem_response(request, 422, f"{where}: {first['msg']}", errors=errors)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # The exception type only: a message could carry request data.
        log.error(
            "unexpected %s on %s %s", type(exc).__name__, request.method, request.url.path, exc_info=exc
        )
        return problem_response(request, 500, f"internal error ({type(exc).__name__}); see the service log")
