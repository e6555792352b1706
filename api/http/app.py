"""The steward service: `create_app()` builds the FastAPI app (JSON API under /api/v1, the web UI at /)."""

from __future__ import annotations

import html
import logging
from pathlib import Path

from fastapi import Depends, FastAPI
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from watershed.api.http import problems
from watershed.api.http.deps import Service, storable_input
from watershed.api.http.protect_runs import ProtectRunner
from watershed.api.http.routers import (
    authz,
    coverage,
    discovery,
    impact,
    lineage,
    lineage_sources,
    metadata,
    oidc,
    openlineage,
    protection,
    runs,
    search,
    session,
    tables,
    tags,
    ttl,
    users,
    webhooks,
)
from watershed.api.http.runs import RunLauncher
from watershed.api.http.settings import ApiSettings
from watershed.graph.store import GraphStore

PREFIX = "/api/v1"
#: the API's routers, in the order their routes match: protection before tables, so that
#: /tables/{t}/protection is not read as the /tables/{t:path} page; lineage_sources before lineage,
#: whose /lineage/{node_id:path} would take /lineage/sources
ROUTERS = (
    session,
    oidc,
    search,
    protection,
    tables,
    lineage_sources,
    lineage,
    impact,
    coverage,
    openlineage,
    tags,
    metadata,
    runs,
    ttl,
    users,
    authz,
    discovery,
    webhooks,
)
WEB = Path(__file__).resolve().parents[1] / "web" / "static"
log = logging.getLogger("watershed.api")


def api_routes() -> list[APIRoute]:
    """Every route of the JSON API (paths without the /api/v1 prefix)."""
    return [route for module in ROUTERS for route in module.router.routes if isinstance(route, APIRoute)]


class BodyLimit:
    """Refuse request bodies over `limit` bytes (413), whether announced by Content-Length or streamed."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge(413, self._detail())
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            await self._refuse(scope, send)

    def _detail(self) -> str:
        return f"request body over {self.limit} bytes (WATERSHED_API_MAX_BODY_BYTES)"

    async def _refuse(self, scope: Scope, send: Send) -> None:
        from starlette.requests import Request

        response = problems.problem_response(Request(scope), 413, self._detail())
        await response(scope, None, send)  # type: ignore[arg-type]


class _TooLarge(StarletteHTTPException):
    """A streamed body past the limit. An HTTP exception, so that whoever reads the body passes it on
    (FastAPI answers any other error while reading a body with 400) and the app answers it as a 413."""


def create_app(settings: ApiSettings | None = None, graph: GraphStore | None = None) -> FastAPI:
    """The app; `graph` defaults to the configured store (its schema ensured once here)."""
    settings = settings or ApiSettings()
    if graph is None:
        from watershed.graph.backends import open_answering

        graph = open_answering(settings, schema=True)
    app = FastAPI(
        title="Watershed steward service",
        version="1",
        openapi_url=f"{PREFIX}/openapi.json",
        # FastAPI's own /docs page loads Swagger UI from a CDN: nothing at run time may fetch from the
        # internet, so /docs is served below from vendored files (or as a plain list of operations).
        docs_url=None,
        redoc_url=None,
        # every operation's error answers, as problem+json (409 is added where it can happen)
        responses=problems.documented(problems.ERRORS),
        # one check of every request's text, before any route reads it
        dependencies=[Depends(storable_input)],
        # while it serves, the process sends the webhook outbox
        lifespan=webhooks.deliveries_while_serving,
    )
    app.openapi = lambda: openapi_schema(app)  # type: ignore[method-assign]
    service = Service(settings=settings, graph=graph)
    service.runs = RunLauncher(settings, service.policy)
    app.state.service = service
    app.state.protect_runner = ProtectRunner(service)
    problems.install(app)
    for module in ROUTERS:
        app.include_router(module.router, prefix=PREFIX)
    # what a 405 allows: every method of every route on the path (the router names only the first's)
    app.state.route_methods = [
        (compile_path(PREFIX + route.path)[0], route.methods) for route in api_routes()
    ]
    if WEB.is_dir():
        from fastapi.staticfiles import StaticFiles

        app.mount("/static", StaticFiles(directory=WEB), name="static")
        index = WEB / "index.html"
        if index.is_file():

            @app.get("/", include_in_schema=False)
            def page() -> FileResponse:
                return FileResponse(index)

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return docs_page(app)

    app.add_middleware(BodyLimit, limit=settings.api_max_body_bytes)
    return app


def openapi_schema(app: FastAPI) -> dict:
    """FastAPI's schema, with the Problem model the error answers refer to."""
    if app.openapi_schema is None:
        schema = FastAPI.openapi(app)
        schema.setdefault("components", {}).setdefault("schemas", {})["Problem"] = (
            problems.Problem.model_json_schema(ref_template="#/components/schemas/{model}")
        )
        app.openapi_schema = schema
    return app.openapi_schema


#: Swagger UI's files, when the web UI's vendor folder has them (npm swagger-ui-dist)
SWAGGER = WEB / "vendor" / "swagger-ui"


def docs_page(app: FastAPI) -> HTMLResponse:
    """Swagger UI from /static when vendored; else every operation listed, with a link to the OpenAPI JSON."""
    if (SWAGGER / "swagger-ui-bundle.js").is_file() and (SWAGGER / "swagger-ui.css").is_file():
        from fastapi.openapi.docs import get_swagger_ui_html

        return get_swagger_ui_html(
            openapi_url=f"{PREFIX}/openapi.json",
            title="Watershed API",
            swagger_js_url="/static/vendor/swagger-ui/swagger-ui-bundle.js",
            swagger_css_url="/static/vendor/swagger-ui/swagger-ui.css",
            swagger_favicon_url="data:,",
        )
    rows = []
    for path, item in app.openapi()["paths"].items():
        for method, operation in item.items():
            summary = html.escape(operation.get("summary") or "")
            description = html.escape((operation.get("description") or "").split("\n")[0])
            rows.append(
                f"<tr><td><code>{method.upper()}</code></td><td><code>{html.escape(path)}</code></td>"
                f"<td>{summary}</td><td>{description}</td></tr>"
            )
    body = (
        "<!doctype html><html><head><meta charset='utf-8'><title>Watershed API</title>"
        "<style>body{font-family:sans-serif;margin:2em}td{padding:2px 8px;vertical-align:top}</style></head><body>"
        f"<h1>Watershed API</h1><p>The OpenAPI schema: <a href='{PREFIX}/openapi.json'>{PREFIX}/openapi.json</a>. "
        "Authenticate with <code>Authorization: Bearer wst_...</code>; errors are RFC 9457 problem details.</p>"
        "<table><tr><th>method</th><th>path</th><th>summary</th><th>what it does</th></tr>"
        + "".join(rows)
        + "</table></body></html>"
    )
    return HTMLResponse(body)
