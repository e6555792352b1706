"""Reads a process keeps while a change stamp of the graph stays where it was read.

A reader reads the stamp (`GraphStore.change_stamp`, one plain key read) before what it keeps,
and files each value under that stamp: a change landing between the two leaves the value under
the old stamp, which the change's restamp has already moved on from. A kept value is also
dropped after `seconds`: that bounds what a change made around the stamps leaves behind (a
hand-written Cypher edit, a writer killed between its write and its restamp).

A reader may also read under the stamp it last saw (`last_stamp`), without a round trip, if it
then finds the stamp unchanged after its reads, in the round trip that writes what it decided
(`GraphStore.queue_record` with the stamp); otherwise it reads again under the stamp that round
trip answers.

Two stamps are kept this way:
- `DATA_STAMP`: every write through `GraphStore.execute` and `write_all` moves it (FalkorDB and
  Neo4j both keep stamps), and only `record` and `queue_record` leave it (a decision's audit entry,
  tokens and sessions: nothing kept under it reads them), so a write path nobody thought of
  still moves it;
- `api.service.accounts.store.ACCOUNTS_STAMP`: moved by account changes only, so token and session
  rows stay kept while a propagation writes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from cachetools import LRUCache

from watershed.graph.store import DATA_STAMP, GraphStore

__all__ = ["DATA_STAMP", "KeptReads"]

#: what `get` answers for a key not kept under the stamp (a kept value may be None: a read that
#: found nothing)
_NOT_KEPT = object()


class KeptReads:
    """Values read from the graph, kept per key under the stamp `stamp_name` had when they were read.

    `seconds` <= 0, or a backend without stamps: nothing is kept, every read goes to
    the graph. Thread-safe; at most `maxsize` keys (or weight, see `weigh`), least recently used
    first out.
    """

    def __init__(
        self,
        graph: GraphStore,
        stamp_name: str,
        *,
        seconds: float,
        maxsize: int,
        timer: Callable[[], float] = time.monotonic,
        weigh: Callable[[Any], int] | None = None,
    ) -> None:
        """`weigh(value)`: what a value counts towards `maxsize` (default 1 each); a value heavier
        than `maxsize` is read every time instead of kept."""
        self.graph = graph
        self.stamp_name = stamp_name
        self.seconds = seconds
        self._timer = timer
        # Each entry is (stamp, value, kept until): a check asks for dozens of keys, and an LRU
        # cache checked against one reading of the clock costs a fifth of a TTL cache's per-key
        # bookkeeping. An entry past its time is never answered; it leaves as the least used.
        self._kept: LRUCache | None = None
        if seconds > 0:
            sizeof = None if weigh is None else (lambda kept: max(1, weigh(kept[1])))
            self._kept = LRUCache(maxsize=maxsize, getsizeof=sizeof)
        self._lock = threading.Lock()
        self._last: str | None = None

    def stamp(self) -> str | None:
        """The stamp to read under now; None when nothing may be kept (then every read is fresh)."""
        if self._kept is None:
            return None
        stamp = self._last = self.graph.change_stamp(self.stamp_name)
        return stamp

    def last_stamp(self) -> str | None:
        """The stamp this process last read or was told (`saw`), without a round trip; None when
        none yet. What is decided under it holds only once the stamp is found unchanged after
        the reads (`GraphStore.queue_record` with the stamp): values read while it had already
        moved are kept under a stamp no current reader asks for."""
        return self._last if self._kept is not None else None

    def saw(self, stamp: str | None) -> None:
        """`stamp` is the stamp now (a conditional write answered it)."""
        if stamp is not None:
            self._last = stamp

    def get(self, stamp: str | None, key: Hashable, default: Any = None) -> Any:
        """The value kept for `key` under `stamp`, else `default`."""
        if stamp is None or self._kept is None:
            return default
        now = self._timer()
        with self._lock:
            kept = self._kept.get(key)
        if kept is None or kept[0] != stamp or kept[2] <= now:
            return default
        return kept[1]

    def peek(self, key: Hashable) -> Any:
        """The value kept for `key` under any stamp (None when none is): for a change in place
        that must not restart the value's time."""
        if self._kept is None:
            return None
        now = self._timer()
        with self._lock:
            kept = self._kept.get(key)
        return None if kept is None or kept[2] <= now else kept[1]

    def put(self, stamp: str | None, key: Hashable, value: Any) -> None:
        self._put_all(stamp, [(key, value)])

    def _put_all(self, stamp: str | None, items: list[tuple[Hashable, Any]]) -> None:
        if stamp is None or self._kept is None:
            return
        until = self._timer() + self.seconds
        with self._lock:
            for key, value in items:
                try:
                    self._kept[key] = (stamp, value, until)
                except ValueError:  # heavier than the whole cache
                    self._kept.pop(key, None)

    def one(self, stamp: str | None, key: Hashable, read: Callable[[], Any]) -> Any:
        """The value of `key`: kept under `stamp`, or `read()` and kept."""
        value = self.get(stamp, key, _NOT_KEPT)
        if value is _NOT_KEPT:
            value = read()
            self.put(stamp, key, value)
        return value

    def many(
        self,
        stamp: str | None,
        kind: str,
        keys: Sequence[str],
        read: Callable[[list[str]], dict[str, Any]],
    ) -> dict[str, Any]:
        """`read(keys)` for the keys not kept under `stamp`, merged with the kept ones. A key the
        read did not return is kept as absent, and is absent from the answer as it was."""
        keys = list(dict.fromkeys(keys))
        if stamp is None or self._kept is None:
            return read(keys)
        found: dict[str, Any] = {}
        wanted: list[str] = []
        now = self._timer()
        with self._lock:  # once for every key: a check asks for dozens
            get = self._kept.get
            for key in keys:
                kept = get((kind, key))
                if kept is None or kept[0] != stamp or kept[2] <= now:
                    wanted.append(key)
                elif kept[1] is not None:
                    found[key] = kept[1]
        if wanted:
            fresh = read(wanted)
            values = [(key, fresh.get(key)) for key in wanted]
            self._put_all(stamp, [((kind, key), value) for key, value in values])
            found.update((key, value) for key, value in values if value is not None)
        return found
