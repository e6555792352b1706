"""One audit line per key operation: who, what, which key, outcome. Never key material."""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

AUDIT_LOGGER = "watershed.orc_crypto.kms.audit"


@dataclass(frozen=True)
class AuditEvent:
    time_ms: int
    user: str
    op: str
    key: str | None
    version: str | None
    outcome: str  # OK, DENIED, UNKNOWN_KEY, BAD_REQUEST, ERROR
    status: int
    remote: str | None = None

    def line(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


class AuditLog:
    """Writes JSON lines to a file (if given) and to the `orc_crypto.kms.audit` logger; keeps recent events."""

    def __init__(self, path: Path | None = None, keep: int = 10_000) -> None:
        self.path = path
        self._keep = keep
        self._events: list[AuditEvent] = []
        self._lock = threading.Lock()
        self._logger = logging.getLogger(AUDIT_LOGGER)

    def record(self, event: AuditEvent) -> None:
        line = event.line()
        with self._lock:
            self._events.append(event)
            del self._events[: -self._keep]
            if self.path is not None:
                with self.path.open("a", encoding="utf-8") as handle:
                    handle.write(line + "\n")
        self._logger.info(line)

    def events(self) -> list[AuditEvent]:
        with self._lock:
            return list(self._events)

    def clear(self) -> None:
        with self._lock:
            self._events.clear()


def now_ms() -> int:
    return int(time.time() * 1000)
