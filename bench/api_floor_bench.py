"""The per-request floor of the steward service: /health and /me under two uvicorn set-ups.

    .venv/bin/python bench/api_floor_bench.py [--requests 1500]

One FalkorDB (free port, temporary directory) and two `create_app()` servers side by side:
h11 + asyncio (uvicorn's pure-Python defaults) and httptools + uvloop (what the `web` extra
installs, uvicorn picks them itself). Requests alternate between the two, so both see the same
machine; the first 200 of each are warm-up. Prints p50/p99 and the ratio to h11 + asyncio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from watershed.api.service.accounts.store import AccountStore  # noqa: E402
from watershed.graph.falkordb_store import FalkorDBStore  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402

SERVE = """
import sys, uvicorn
from watershed.api.http.app import create_app
uvicorn.run(create_app(), host="127.0.0.1", port=int(sys.argv[1]), http=sys.argv[2], loop=sys.argv[3],
            access_log=False, log_level="warning")
"""
SETUPS = (("h11+asyncio", "h11", "asyncio"), ("httptools+uvloop", "httptools", "uvloop"))
WARMUP = 200


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1500)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="api-floor-"))
    spec = ServerSpec("falkordb", "127.0.0.1", free_port(), directory, True)
    start(spec)
    servers = []
    try:
        store = FalkorDBStore("127.0.0.1", spec.port, "bench")
        store.ensure_schema()
        accounts = AccountStore(store)
        accounts.add("bench", "admin", None, "bench")
        token = accounts.create_token("bench", "bench").token
        env = {
            **os.environ,
            "WATERSHED_FALKORDB_PORT": str(spec.port),
            "WATERSHED_GRAPH_NAME": "bench",
            "WATERSHED_DATA_DIR": str(directory),
        }
        for name, http, loop in SETUPS:
            port = free_port()
            process = subprocess.Popen([sys.executable, "-c", SERVE, str(port), http, loop], env=env)
            servers.append((name, port, process))
        clients = {}
        for name, port, _ in servers:
            client = httpx.Client(
                base_url=f"http://127.0.0.1:{port}/api/v1", headers={"authorization": f"Bearer {token}"}
            )
            deadline = time.monotonic() + 60
            while True:
                try:
                    client.get("/health")
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            clients[name] = client
        times: dict[tuple[str, str], list[float]] = {(n, p): [] for n in clients for p in ("/health", "/me")}
        for _ in range(args.requests):
            for name, client in clients.items():
                for path in ("/health", "/me"):
                    began = time.perf_counter()
                    response = client.get(path)
                    times[(name, path)].append((time.perf_counter() - began) * 1000)
                    response.raise_for_status()
        base = {path: statistics.median(times[(SETUPS[0][0], path)][WARMUP:]) for path in ("/health", "/me")}
        print(f"{'server':18} {'route':8} {'p50 ms':>7} {'p99 ms':>7} {'p50 ratio':>9}")
        for (name, path), values in times.items():
            kept = values[WARMUP:]
            p50, p99 = statistics.median(kept), statistics.quantiles(kept, n=100)[98]
            print(f"{name:18} {path:8} {p50:7.2f} {p99:7.2f} {p50 / base[path]:9.2f}")
    finally:
        for _, _, process in servers:
            process.terminate()
            process.wait(timeout=20)
        stop(spec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
