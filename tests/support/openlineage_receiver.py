"""An OpenLineage consumer for the emission tests: an HTTP server on a free loopback port that
keeps every POST (path, Authorization header, JSON body) and can refuse from the n-th on."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Receiver:
    """An HTTP consumer of OpenLineage events: keeps each POST; answers `refuse_with` from the
    `refuse_from`-th (0-based) on."""

    url: str = ""
    posts: list[tuple[str, str | None, dict]] = field(default_factory=list)
    refuse_from: int | None = None
    refuse_with: int = 401


@contextmanager
def receiving() -> Iterator[Receiver]:
    """A Receiver serving on a free loopback port until the block ends."""
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            refused = state.refuse_from is not None and len(state.posts) >= state.refuse_from
            if not refused:
                state.posts.append((self.path, self.headers.get("Authorization"), json.loads(body)))
            self.send_response(state.refuse_with if refused else 201)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
