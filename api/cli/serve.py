"""`watershed serve`: the steward service (JSON API, OpenAPI at /docs, web UI) in this process."""

from __future__ import annotations

import typer

from watershed.api.cli.output import console, fail
from watershed.graph.server import port_is_free


def serve_command(
    host: str = typer.Option(
        None, "--host", help="Address to listen on (default WATERSHED_API_HOST, 127.0.0.1)."
    ),
    port: int = typer.Option(
        None, "--port", min=1, max=65535, help="Port (default WATERSHED_API_PORT, 8600)."
    ),
) -> None:
    """Serve the JSON API under /api/v1 and the web UI on one port (stateless: run several behind a load balancer)."""
    import uvicorn

    from watershed.api.http.app import create_app
    from watershed.api.service.settings import ApiSettings
    from watershed.graph.backends import open_answering
    from watershed.graph.errors import WatershedError

    overrides = {k: v for k, v in (("api_host", host), ("api_port", port)) if v is not None}
    settings = ApiSettings(**overrides)
    if not port_is_free(settings.api_host, settings.api_port):
        fail(
            f"port {settings.api_host}:{settings.api_port} is taken by another process (set WATERSHED_API_PORT or --port)"
        )
    try:
        graph = open_answering(settings, schema=True)
    except WatershedError as exc:
        fail(f"{exc}; run `watershed services up`")
    try:
        app = create_app(settings, graph)
    except Exception as exc:  # a bad policy file, say: one line naming it
        fail(str(exc))
    console.print(f"watershed API on http://{settings.api_host}:{settings.api_port}/ (docs at /docs)")
    # No access log: it would be one line per request with nothing the audit trail lacks, and
    # a token pasted into a query string by mistake would land in it.
    uvicorn.run(app, host=settings.api_host, port=settings.api_port, access_log=False, log_level="warning")
