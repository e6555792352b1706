"""A real HTTP receiver of webhooks on a free port, which fails on purpose by path.

    /ok        200
    /flaky     500 for the first two POSTs of each delivery id, then 200
    /down      500 always
    /slow      answers after `slow_seconds` (longer than the sender's timeout)
    /redirect  302 to /ok (a sender must not follow it)

Every POST is kept with its headers and body, and with whether its signature checks against
its path's secret: the check here is written from the documented rule (HMAC-SHA256 of `timestamp.body`),
not with the product's code, so a wrong signature fails the tests. Each path checks with its
own secret (`secrets[path]`, set when the test has made the subscription).
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from watershed.graph.server import free_port


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    signed: bool


@dataclass
class Receiver:
    secrets: dict[str, str] = field(default_factory=dict)
    slow_seconds: float = 3.0
    received: list[Received] = field(default_factory=list)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def signed(self, path: str, headers: dict[str, str], body: bytes) -> bool:
        timestamp = headers.get("x-watershed-timestamp", "")
        secret = self.secrets.get(path)
        if secret is None:
            return False
        expected = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        return hmac.compare_digest("sha256=" + expected, headers.get("x-watershed-signature", ""))

    def at(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path == path]


def start_receiver() -> tuple[Receiver, ThreadingHTTPServer]:
    receiver = Receiver()
    tries: Counter[str] = Counter()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet: the tests read `received`
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            with lock:
                receiver.received.append(
                    Received(self.path, headers, body, receiver.signed(self.path, headers, body))
                )
                tries[headers.get("x-watershed-delivery", "")] += 1
                seen = tries[headers.get("x-watershed-delivery", "")]
            if self.path == "/slow":
                time.sleep(receiver.slow_seconds)
                code = 200
            elif self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", f"{receiver.url}/ok")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            elif self.path == "/down" or (self.path == "/flaky" and seen <= 2):
                code = 500
            else:
                code = 200
            try:
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()
            except OSError:  # the sender gave up waiting (/slow)
                pass

    receiver.port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", receiver.port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver, server
