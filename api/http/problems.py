"""RFC 9457 problem details for every error the API answers with.

Bodies are `application/problem+json`: {type, title, status, detail, instance} (+ `errors` for
validation). 401 and 403 say nothing about whether a user or token exists. A graph server that
does not answer is a 503 with `Retry-After`, naming the server (never a credential).
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

from watershed.api.service.accounts.rights import ForbiddenError
from watershed.api.service.authz.errors import AuthzError, UnknownGrantError
from watershed.graph.errors import GraphUnavailableError, WatershedError
from watershed.graph.ids import InvalidIdError
from watershed.ingest.limits import AnalysisLimitError
from watershed.ingest.points import QueryError

MEDIA_TYPE = "application/problem+json"
#: what a 503 asks the client to wait before trying again
RETRY_AFTER_SECONDS = 5
log = logging.getLogger("watershed.api")


class Problem(BaseModel):
    """An error answer (RFC 9457 problem details)."""

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


#: the error answers every operation may give, as the OpenAPI schema documents them
ERRORS = {
    400: "Bad request: a parameter or body value the service cannot take (named in `detail`)",
    401: "No valid API token or session",
    403: "The caller's role or databases do not allow it",
    404: "What the path names does not exist",
    413: "Request body over the limit (WATERSHED_API_MAX_BODY_BYTES), announced or streamed",
    422: "A parameter or the body does not match the schema (`errors` lists each)",
    503: "The graph server (or the Celery broker) does not answer; retry after `Retry-After` seconds",
}
#: for operations that can find the state in the way (a run in progress, a name taken)
CONFLICT = {409: "Conflicts with the current state (a run in progress, a name already taken)"}


def documented(statuses: dict[int, str]) -> dict[int | str, dict[str, Any]]:
    """FastAPI `responses=` entries for these error statuses: a problem+json body, `Retry-After` on 503."""
    responses: dict[int | str, dict[str, Any]] = {}
    for status, description in statuses.items():
        response: dict[str, Any] = {
            "description": description,
            "content": {MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        if status == 503:
            response["headers"] = {
                "Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}}
            }
        responses[status] = response
    return responses


#: `responses=` of an operation that can answer 409
CONFLICT_RESPONSES = documented(CONFLICT)


def unauthorized() -> ApiProblem:
    return ApiProblem(401, "a valid API token or session is needed", {"WWW-Authenticate": "Bearer"})


def problem_response(
    request: Request, status: int, detail: str | None, errors: list | None = None, headers: dict | None = None
) -> JSONResponse:
    if status == 503:
        # every "unavailable" is worth a retry: say when
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS), **(headers or {})}
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


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app answers at this request's path (`app.state.route_methods`:
    (path pattern, methods) of every route)."""
    path = request.scope["path"]
    methods: set[str] = set()
    for pattern, route_methods in getattr(request.app.state, "route_methods", ()):
        if pattern.match(path):
            methods.update(route_methods)
    return sorted(methods)


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiProblem)
    async def _api_problem(request: Request, exc: ApiProblem) -> JSONResponse:
        return problem_response(request, exc.status, exc.detail, headers=exc.headers)

    @app.exception_handler(AuthzError)
    @app.exception_handler(QueryError)
    @app.exception_handler(InvalidIdError)
    async def _bad_request(request: Request, exc: Exception) -> JSONResponse:
        return problem_response(request, 400, str(exc))

    @app.exception_handler(AnalysisLimitError)
    async def _limit(request: Request, exc: AnalysisLimitError) -> JSONResponse:
        return problem_response(request, exc.status, str(exc))

    @app.exception_handler(UnknownGrantError)
    async def _unknown(request: Request, exc: UnknownGrantError) -> JSONResponse:
        return problem_response(request, 404, str(exc))

    @app.exception_handler(ForbiddenError)
    async def _forbidden(request: Request, exc: ForbiddenError) -> JSONResponse:
        return problem_response(request, 403, str(exc))

    @app.exception_handler(GraphUnavailableError)
    async def _graph_down(request: Request, exc: GraphUnavailableError) -> JSONResponse:
        # answered, not raised: an unhandled error would also close the client's connection
        log.warning("%s %s: %s", request.method, request.url.path, exc)
        return problem_response(
            request, 503, f"{exc}; retry later", headers={"Retry-After": str(RETRY_AFTER_SECONDS)}
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:
            # the router names the methods of the first route on the path, not of all of them
            headers = {**(headers or {}), "Allow": ", ".join(allowed_methods(request))}
        return problem_response(request, exc.status_code, str(exc.detail), headers=headers)

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
