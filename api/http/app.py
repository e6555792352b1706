"""The steward service: `create_app()` builds the FastAPI app (JSON API under /api/v1, the web UI at /)."""

from __future__ import annotations

import logging
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from watershed.api.http import problems
from watershed.api.http.deps import Service
from watershed.api.http.routers import lineage, runs, search, session, tables, tags, ttl, users
from watershed.api.http.runs import RunLauncher
from watershed.api.http.settings import ApiSettings
from watershed.graph.store import GraphStore

PREFIX = "/api/v1"
WEB = Path(__file__).resolve().parents[1] / "web" / "static"
log = logging.getLogger("watershed.api")


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
                    raise _TooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            await self._refuse(scope, send)

    async def _refuse(self, scope: Scope, send: Send) -> None:
        from starlette.requests import Request

        response = problems.problem_response(
            Request(scope), 413, f"request body over {self.limit} bytes (WATERSHED_API_MAX_BODY_BYTES)"
        )
        await response(scope, None, send)  # type: ignore[arg-type]


class _TooLarge(Exception):
    pass


def create_app(settings: ApiSettings | None = None, graph: GraphStore | None = None) -> FastAPI:
    """The app; `graph` defaults to the configured store (its schema ensured once here)."""
    settings = settings or ApiSettings()
    if graph is None:
        from watershed.graph.backends import open_store

        graph = open_store(settings)
        graph.ensure_schema()
    app = FastAPI(
        title="Watershed steward service",
        version="1",
        openapi_url=f"{PREFIX}/openapi.json",
        docs_url="/docs",
        redoc_url=None,
    )
    service = Service(settings=settings, graph=graph)
    service.runs = RunLauncher(settings, service.policy)
    app.state.service = service
    problems.install(app)
    for module in (session, search, tables, lineage, tags, runs, ttl, users):
        app.include_router(module.router, prefix=PREFIX)
    if WEB.is_dir():
        from fastapi.staticfiles import StaticFiles

        app.mount("/static", StaticFiles(directory=WEB), name="static")
        index = WEB / "index.html"
        if index.is_file():

            @app.get("/", include_in_schema=False)
            def page() -> FileResponse:
                return FileResponse(index)

    app.add_middleware(BodyLimit, limit=settings.api_max_body_bytes)
    return app
