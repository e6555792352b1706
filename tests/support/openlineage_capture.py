"""A small HTTP server that keeps every OpenLineage event POSTed to it: what a real producer (the
Spark listener, Airflow's provider) sends, seen before Watershed's intake reads it. It records the
path, the Authorization header and the parsed JSON body (an array body is a batch: each element is
kept as its own event). On its own it answers 200; given `forward_to` (Watershed's base URL) it
passes each request on unchanged (path, body, Authorization, content headers) and answers what
Watershed answered, keeping that status beside the event."""

from __future__ import annotations

import gzip
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

#: the request headers passed on to Watershed
FORWARDED = ("Authorization", "Content-Type", "Content-Encoding")


@dataclass
class Posted:
    path: str
    authorization: str | None
    event: dict
    #: what Watershed answered (200 when nothing is forwarded)
    status: int = 200
    answer: str = ""


@dataclass
class Capture:
    url: str
    posts: list[Posted] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clear(self) -> None:
        with self.lock:
            self.posts.clear()

    def events(self, path: str | None = None) -> list[dict]:
        with self.lock:
            return [p.event for p in self.posts if path is None or p.path == path]

    def wait_for(self, predicate, timeout: float = 60.0) -> list[dict]:
        """The events once `predicate(events)` holds; a producer may post after its job returned.
        Raises naming what arrived when the time is up."""
        deadline = time.monotonic() + timeout
        while True:
            events = self.events()
            if predicate(events):
                return events
            if time.monotonic() > deadline:
                seen = sorted({(e.get("job", {}).get("name"), e.get("eventType")) for e in events}, key=str)
                raise AssertionError(f"the awaited OpenLineage events did not arrive; got {seen}")
            time.sleep(0.1)


class _Handler(BaseHTTPRequestHandler):
    capture: Capture
    forward_to: str | None

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, answer = 200, b""
        if self.forward_to:
            headers = {name: self.headers[name] for name in FORWARDED if self.headers.get(name)}
            reply = httpx.post(self.forward_to + self.path, content=body, headers=headers, timeout=120)
            status, answer = reply.status_code, reply.content
        raw = body
        if (self.headers.get("Content-Encoding") or "").lower() == "gzip":
            raw = gzip.decompress(body)
        parsed = json.loads(raw) if raw else None
        events = parsed if isinstance(parsed, list) else [parsed]
        with self.capture.lock:
            for event in events:
                self.capture.posts.append(
                    Posted(
                        self.path,
                        self.headers.get("Authorization"),
                        event,
                        status,
                        answer.decode("utf-8", "replace"),
                    )
                )
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        if answer:  # a producer may close as soon as it has an empty answer's headers
            self.wfile.write(answer)

    def log_message(self, format, *args) -> None:  # quiet: the stdlib logs every request to stderr
        pass


class CaptureServer:
    """The capture server on a free loopback port, in a thread of the test process."""

    def __init__(self, forward_to: str | None = None) -> None:
        handler = type("Handler", (_Handler,), {"forward_to": forward_to})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.capture = Capture(url=f"http://127.0.0.1:{self.httpd.server_address[1]}")
        handler.capture = self.capture
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Capture:
        self.thread.start()
        return self.capture

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
