"""The embedded Neo4j: where the set-up put it, how it is launched, its password, and whether Bolt answers.

`scripts/bootstrap.sh` copies Neo4j Community (`org.neo4j:neo4j`, `org.neo4j:neo4j-bolt`, pinned
in `graph/neo4j_launcher/pom.xml`) with its dependencies into `.venv/share/watershed/neo4j-VERSION/lib`
and compiles the launcher (`graph/neo4j_launcher/WatershedNeo4j.java`) beside them: nothing is
fetched when the product runs. `graph/server.py` starts and stops it like the other servers (pid
record, stall detection, SIGTERM for its own shutdown); this module holds what is Neo4j's own.

Which graph is local: a `bolt://` URI on a loopback host. Any other (`neo4j://` routing,
`neo4j+s://` Aura, `bolt+s://`, another host) names a server run elsewhere: nothing starts here.
The password never appears on a command line: the launcher reads it from a file.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import sys
from pathlib import Path
from urllib.parse import urlsplit

from watershed.graph.errors import WatershedError
from watershed.graph.extras import require_extra
from watershed.graph.settings import GraphSettings

#: the pinned Neo4j; the same as graph/neo4j_launcher/pom.xml's neo4j.version
NEO4J_VERSION = "5.26.30"
LAUNCHER_CLASS = "WatershedNeo4j"
#: the hosts a local URI may name
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
#: the user whose password the launcher sets
LOCAL_USER = "neo4j"
DEFAULT_BOLT_PORT = 7687


class Neo4jSetupError(WatershedError, RuntimeError):
    """The embedded Neo4j cannot be launched, or its password read; the message names the setting."""


def default_install() -> Path:
    """Where scripts/bootstrap.sh puts Neo4j: inside the environment, so removing it removes Neo4j."""
    return Path(sys.prefix) / "share" / "watershed" / f"neo4j-{NEO4J_VERSION}"


def install_dir(settings: GraphSettings) -> Path:
    return settings.neo4j_home or default_install()


def is_local(uri: str) -> bool:
    """True when `uri` names a Neo4j this machine runs itself: plain `bolt://` on a loopback host."""
    parts = urlsplit(uri)
    return parts.scheme == "bolt" and (parts.hostname or "") in LOOPBACK


def address(uri: str) -> tuple[str, int]:
    """The host and Bolt port of `uri`."""
    parts = urlsplit(uri)
    try:
        port = parts.port or DEFAULT_BOLT_PORT
    except ValueError:
        raise Neo4jSetupError(f"WATERSHED_NEO4J_URI={redacted(uri)}: not a valid port") from None
    return parts.hostname or "127.0.0.1", port


def redacted(uri: str) -> str:
    """`uri` without any user:password@ part: how errors and status lines name a Neo4j."""
    parts = urlsplit(uri)
    if "@" not in parts.netloc:
        return uri
    return parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]).geturl()


def local_password_file(settings: GraphSettings) -> Path:
    """The secret file of the local Neo4j's password, under the data directory."""
    return settings.data_dir / "neo4j" / "password"


def _write_secret(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.unlink(missing_ok=True)
    # created 0600: the password is never readable by another user, not even for a moment
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text + "\n")
    os.replace(temporary, path)


def _read_secret(path: Path, setting: str) -> str:
    try:
        text = path.read_text().strip()
    except OSError as exc:
        raise Neo4jSetupError(f"{setting}={path}: cannot read it ({exc.strerror or exc})") from None
    if not text:
        raise Neo4jSetupError(f"{setting}={path}: the file is empty")
    return text


def launcher_password_file(settings: GraphSettings) -> Path:
    """The file the local launcher reads the neo4j user's password from, made when needed.

    WATERSHED_NEO4J_PASSWORD_FILE when set; else DATA_DIR/neo4j/password, holding the settings'
    neo4j_password, or a random one generated on the first start.
    """
    if settings.neo4j_password_file is not None:
        _read_secret(settings.neo4j_password_file, "WATERSHED_NEO4J_PASSWORD_FILE")
        return settings.neo4j_password_file
    path = local_password_file(settings)
    if settings.neo4j_password:
        if not path.exists() or path.read_text().strip() != settings.neo4j_password:
            _write_secret(path, settings.neo4j_password)
    elif not path.exists():
        _write_secret(path, secrets.token_urlsafe(24))
    return path


def password(settings: GraphSettings) -> str:
    """The password a client of `settings.neo4j_uri` logs in with.

    neo4j_password (the settings file or WATERSHED_NEO4J_PASSWORD), else the file named by
    WATERSHED_NEO4J_PASSWORD_FILE, else, for the local Neo4j, the one its first start generated.
    """
    if settings.neo4j_password:
        return settings.neo4j_password
    if settings.neo4j_password_file is not None:
        return _read_secret(settings.neo4j_password_file, "WATERSHED_NEO4J_PASSWORD_FILE")
    if is_local(settings.neo4j_uri):
        local = local_password_file(settings)
        if local.exists():
            return _read_secret(local, "the local Neo4j's password file")
        # The local Neo4j writes this file on its first start: without it none was started under
        # this data directory, and the connection's own answer ("cannot reach ...") is the news.
        return ""
    raise Neo4jSetupError(
        f"no password for the neo4j graph on {redacted(settings.neo4j_uri)}: set neo4j_password in the "
        "settings file or WATERSHED_NEO4J_PASSWORD_FILE (a file holding it)"
    )


def java() -> Path:
    """The Java that runs Neo4j: JAVA_HOME's, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return Path(home) / "bin" / "java"
    found = shutil.which("java")
    if found is None:
        raise Neo4jSetupError("java not found: the local Neo4j needs Java 17 (set JAVA_HOME or PATH)")
    return Path(found)


def command_line(
    install: Path, home: Path, host: str, port: int, password_file: Path, heap: str, pagecache: str
) -> list[str]:
    """The launcher's command line: every value but the password, which it reads from `password_file`."""
    # checked here: without the driver nothing could tell when the launched server answers
    require_extra("neo4j", "neo4j", purpose="the local Neo4j (WATERSHED_BACKEND=neo4j)")
    lib = install / "lib"
    classes = install / "classes"
    if not (classes / f"{LAUNCHER_CLASS}.class").is_file() or not lib.is_dir():
        raise Neo4jSetupError(
            f"Neo4j {NEO4J_VERSION} is not installed in {install}: run scripts/bootstrap.sh "
            "(or set WATERSHED_NEO4J_HOME to where it is)"
        )
    return [
        str(java()),
        f"-Xms{heap}",
        f"-Xmx{heap}",
        # what Neo4j's own scripts pass: the page cache's direct buffers, and a clean exit on OOM
        "--add-opens=java.base/java.nio=ALL-UNNAMED",
        "--add-opens=java.base/java.io=ALL-UNNAMED",
        "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
        "-XX:+ExitOnOutOfMemoryError",
        "-Dfile.encoding=UTF-8",
        "-cp",
        f"{classes}{os.pathsep}{lib}{os.sep}*",
        LAUNCHER_CLASS,
        "--home",
        str(home),
        "--host",
        host,
        "--port",
        str(port),
        "--password-file",
        str(password_file),
        "--pagecache",
        pagecache,
    ]


#: Neo4j's debug log line of a recovery's progress: "[o.n.k.r.Recovery] [neo4j/1a2b3c4d]  40% completed"
#: bytes of the debug log read from its end, then from `since`, for the recovery's progress
RECOVERY_WINDOW = 65536
RECOVERY_HEAD = 4 * 1024 * 1024
_RECOVERY = re.compile(rb"\[o\.n\.k\.r\.Recovery\] \[([^/\]]+)[^\]]*\]\s+(\d+)% completed")


def debug_log(home: Path) -> Path:
    return home / "logs" / "debug.log"


def recovery_progress(home: Path, since: int) -> str | None:
    """How far the recovery of a store a crash left has come ("neo4j 40%"), from what Neo4j logged
    after byte `since` of its debug log; None when it logged none."""
    try:
        with debug_log(home).open("rb") as log:
            size = log.seek(0, os.SEEK_END)
            # the newest progress is near the end while recovery runs; once the database is up,
            # what it logs next (index population, schema) can push the recovery lines further back
            # than the tail, so the start of the window is read too
            log.seek(max(since, size - RECOVERY_WINDOW))
            found = _RECOVERY.findall(log.read())
            if not found and size - since > RECOVERY_WINDOW:
                log.seek(since)
                found = _RECOVERY.findall(log.read(RECOVERY_HEAD))
    except OSError:
        return None
    if not found:
        return None
    database, percent = found[-1]
    return f"recovering database {database.decode(errors='replace')}, {int(percent)}%"


def bolt_answers(host: str, port: int, password_file: Path, timeout: float = 2.0) -> bool:
    """True when the Neo4j on host:port answers Bolt and lets the neo4j user in."""
    from neo4j import GraphDatabase

    try:
        secret = password_file.read_text().strip()
    except OSError:
        return False
    driver = GraphDatabase.driver(
        f"bolt://{host}:{port}",
        auth=(LOCAL_USER, secret),
        connection_timeout=timeout,
        connection_acquisition_timeout=timeout,
        max_connection_lifetime=60,
    )
    try:
        driver.verify_connectivity()
    except Exception:
        # refused, not yet listening, shutting down, or another server on the port: not ours answering
        return False
    finally:
        driver.close()
    return True
