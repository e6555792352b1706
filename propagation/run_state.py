"""Where a propagation run is, kept in Redis, and the lock that allows one run at a time.

Keys (per graph, so two graphs on one Redis do not interfere):

- `…:token`  a counter; every run takes the next value as its fencing token;
- `…:lock`   the token of the run holding the lock, with an expiry the
  coordinator keeps renewing; a dead coordinator's lock simply expires;
- `…:run`    the current or last run's record (`RunRecord` as JSON), written
  after every layer: a run that died is resumed from its last finished layer;
- `…:last`   the last completed run's record: where the next incremental run starts.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Literal

import redis
from pydantic import BaseModel, Field

from watershed.graph.errors import WatershedError

# Renew or release the lock only while it still holds our token (another run may have taken it).
_RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
# The next token, above `floor` (the graph's fence): a Redis that lost its counter must not hand out
# tokens the fence already refuses.
_NEXT_TOKEN = (
    "local t = redis.call('incr', KEYS[1]) "
    "if t <= tonumber(ARGV[1]) then t = tonumber(ARGV[1]) + 1 redis.call('set', KEYS[1], t) end "
    "return t"
)


class RunInProgressError(WatershedError, RuntimeError):
    """Another propagation run holds the lock."""


class LockLostError(WatershedError, RuntimeError):
    """The run's lock expired or was taken by a newer run while it was running."""


class LayerRecord(BaseModel):
    layer: int
    nodes: int
    changed: int
    batches: int
    seconds: float


class RunRecord(BaseModel):
    run_id: str
    token: int
    mode: Literal["full", "incremental"]
    status: Literal["starting", "running", "done", "failed"] = "starting"
    #: graph clock (ms) when the run began: the next incremental run starts from changes after it
    graph_started_at: int
    #: for an incremental run, the changes after this graph time are its input
    since: int | None = None
    started_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    finished_at: str | None = None
    #: the next layer to run and its frontier (persisted after every layer)
    layer: int = 0
    frontier: list[str] = Field(default_factory=list)
    cone: int = 0
    rule_seeds_changed: int = 0
    layers: list[LayerRecord] = Field(default_factory=list)
    resumed: int = 0
    stopped_at_cap: bool = False
    #: why the run failed (status `failed`), or what interrupted it last (a resumable run)
    error: str | None = None
    #: seconds per step of this run: `start` (rule seeds and finding the cone), `layers`, `metadata`
    steps: dict[str, float] = Field(default_factory=dict)

    @property
    def nodes_processed(self) -> int:
        return sum(layer.nodes for layer in self.layers)

    @property
    def tags_changed(self) -> int:
        return sum(layer.changed for layer in self.layers)


class RunState:
    def __init__(self, client: redis.Redis, graph_name: str) -> None:
        self.client = client
        self.prefix = f"watershed:propagation:{graph_name}"

    @classmethod
    def from_url(cls, url: str, graph_name: str) -> RunState:
        return cls(redis.Redis.from_url(url), graph_name)

    def _key(self, name: str) -> str:
        return f"{self.prefix}:{name}"

    # ------------------------------------------------------------ lock

    def acquire(self, ttl_seconds: float, floor: int = 0) -> int:
        """Take the run lock; returns this run's fencing token (larger than every earlier one and `floor`)."""
        holder = self.client.get(self._key("lock"))
        if holder is not None:
            expires = self.client.pttl(self._key("lock"))
            raise RunInProgressError(
                f"another propagation run (token {holder.decode()}) holds the lock for {max(expires, 0) / 1000:.0f} s more; "
                "wait for it, or for its lock to expire if it died"
            )
        token = int(self.client.eval(_NEXT_TOKEN, 1, self._key("token"), floor))
        if not self.client.set(self._key("lock"), token, nx=True, px=int(ttl_seconds * 1000)):
            raise RunInProgressError("another propagation run took the lock at the same moment")
        return token

    def renew(self, token: int, ttl_seconds: float) -> bool:
        return bool(self.client.eval(_RENEW, 1, self._key("lock"), token, int(ttl_seconds * 1000)))

    def release(self, token: int) -> None:
        self.client.eval(_RELEASE, 1, self._key("lock"), token)

    def holder(self) -> int | None:
        value = self.client.get(self._key("lock"))
        return int(value) if value is not None else None

    # ------------------------------------------------------------ records

    def save(self, record: RunRecord) -> None:
        self.client.set(self._key("run"), record.model_dump_json())

    def current(self) -> RunRecord | None:
        raw = self.client.get(self._key("run"))
        return RunRecord.model_validate_json(raw) if raw else None

    def finish(self, record: RunRecord) -> None:
        """Store the finished run as the current and the last completed one, in one step."""
        text = record.model_dump_json()
        self.client.mset({self._key("run"): text, self._key("last"): text})

    def last_completed(self) -> RunRecord | None:
        raw = self.client.get(self._key("last"))
        return RunRecord.model_validate_json(raw) if raw else None


class LockKeeper:
    """Renews the run lock in the background; `check()` raises once the lock was lost."""

    def __init__(self, state: RunState, token: int, ttl_seconds: float) -> None:
        self.state, self.token, self.ttl = state, token, ttl_seconds
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="propagation-lock", daemon=True)

    def __enter__(self) -> LockKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                renewed = self.state.renew(self.token, self.ttl)
            except redis.RedisError:
                continue  # try again at the next tick; the lock outlives one missed renewal
            if not renewed:
                self._lost.set()
                return

    def check(self) -> None:
        if self._lost.is_set():
            raise LockLostError(
                f"the propagation lock (token {self.token}) expired or was taken by a newer run"
            )
