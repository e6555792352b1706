"""A guard that makes starting a server fail loudly, for proving the fast tier starts none.

    WATERSHED_TESTS_NO_SERVERS=/tmp/started.log pytest -m "not services and not spark"

With the variable set, tests/conftest.py installs the guard in the test process and puts
tests/support/server_guard_site/ first on PYTHONPATH, whose sitecustomize installs it in every
Python child the tests start (a `watershed ...` process, a `python -m` helper). Then anything that
starts a server raises, and is written to the named file with the test that did it:

- a socket that begins to listen (uvicorn, the KMS, Airflow's webserver, any Python server);
- a server program run as a child: redis-server (FalkorDB and Redis), java (Spark's gateway,
  Neo4j), spark-submit, airflow, neo4j, `python -m uvicorn` and `python -m celery` (the workers).

Only the tests' side is patched (socket and subprocess of this interpreter); the product's code is
left as it is. Standard library only: the sitecustomize loads it before anything else.
"""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
from pathlib import Path

ENV = "WATERSHED_TESTS_NO_SERVERS"
#: the directory whose sitecustomize installs the guard in a Python child
SITE = Path(__file__).resolve().parent / "server_guard_site"
#: programs that are servers, by the name of what is run
SERVER_PROGRAMS = {"redis-server", "java", "spark-submit", "spark-class", "airflow", "neo4j"}
#: Python modules run with -m that are servers (or, for celery, the workers that need one)
SERVER_MODULES = {"uvicorn", "celery"}


class ServerStartedError(RuntimeError):
    """A test started a server while the guard was on: it belongs in the services or spark tier."""


def _refuse(what: str) -> None:
    test = os.environ.get("PYTEST_CURRENT_TEST", f"a child process (pid {os.getpid()})")
    line = f"{test}: {what}"
    log = os.environ.get(ENV, "")
    if log not in ("", "1"):
        with open(log, "a", encoding="utf-8") as out:
            out.write(line + "\n")
    raise ServerStartedError(f"{ENV} is set and {line}: mark the test services (or spark)")


def _server_in(argv) -> str | None:
    if isinstance(argv, (str, bytes, os.PathLike)):
        argv = [argv]
    args = [os.fsdecode(a) for a in argv]
    if not args:
        return None
    if os.path.basename(args[0]) in SERVER_PROGRAMS:
        return os.path.basename(args[0])
    for flag, module in itertools.pairwise(args):
        if flag == "-m" and module in SERVER_MODULES:
            return f"python -m {module}"
    return None


def install() -> None:
    """Patch socket.listen and subprocess.Popen of this interpreter (idempotent)."""
    if getattr(socket.socket.listen, "_server_guard", False):
        return
    listen = socket.socket.listen
    popen_init = subprocess.Popen.__init__

    def guarded_listen(self, *args, **kwargs):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _refuse(f"a socket began to listen on {self.getsockname()}")
        return listen(self, *args, **kwargs)

    def guarded_popen(self, args, *rest, **kwargs):
        server = _server_in(args)
        if server is not None:
            _refuse(f"started {server}: {args!r}"[:400])
        return popen_init(self, args, *rest, **kwargs)

    guarded_listen._server_guard = True  # type: ignore[attr-defined]
    socket.socket.listen = guarded_listen  # type: ignore[method-assign]
    subprocess.Popen.__init__ = guarded_popen  # type: ignore[method-assign]
    # the children this process starts install it too
    paths = [str(SITE), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
