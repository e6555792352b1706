"""The run lock and fencing tokens, on the Celery Redis."""

from __future__ import annotations

import itertools
import time

import pytest

from watershed.propagation.run_state import LockKeeper, LockLostError, RunInProgressError, RunRecord, RunState

_names = itertools.count()


@pytest.fixture
def state(celery_redis):
    return RunState.from_url(f"redis://127.0.0.1:{celery_redis.port}/0", f"lock_test_{next(_names)}")


def test_one_run_at_a_time_with_growing_tokens(state):
    first = state.acquire(ttl_seconds=30)
    with pytest.raises(RunInProgressError, match=f"token {first}"):
        state.acquire(ttl_seconds=30)
    state.release(first)
    second = state.acquire(ttl_seconds=30)
    assert second > first
    state.release(first)  # a stale holder cannot release a newer run's lock
    assert state.holder() == second


def test_a_dead_runs_lock_expires(state):
    token = state.acquire(ttl_seconds=0.2)
    time.sleep(0.4)
    assert state.acquire(ttl_seconds=30) > token


def test_the_keeper_renews_and_notices_a_lost_lock(state):
    token = state.acquire(ttl_seconds=0.6)
    with LockKeeper(state, token, 0.6) as keeper:
        time.sleep(1.5)  # longer than the expiry: only renewals keep it
        keeper.check()
        assert state.holder() == token
        state.client.set(state._key("lock"), token + 100)  # another run took over
        time.sleep(0.5)
        with pytest.raises(LockLostError):
            keeper.check()


def test_records_round_trip(state):
    record = RunRecord(run_id="r1", token=3, mode="full", graph_started_at=5, frontier=["a.b.c"])
    state.save(record)
    assert state.current() == record and state.last_completed() is None
    record.status = "done"
    state.finish(record)
    assert state.last_completed().status == "done"
