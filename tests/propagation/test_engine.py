"""Propagation to a fixpoint over extracted lineage, in process (the reference for the workers)."""

from __future__ import annotations

import random

import pytest

from tests.support.engine_lineage import POLICY, build
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.propagation.engine import (
    compute_batch,
    local_batches,
    propagate_full,
    propagate_incremental,
    start_full,
)
from watershed.propagation.rules import MANUAL


def run_full(store, batch_size=500, shuffle_seed=None):
    runner = local_batches(store, POLICY, "run-1", 1)
    if shuffle_seed is not None:
        rng = random.Random(shuffle_seed)

        def shuffled(batches, layer):
            order = list(range(len(batches)))
            rng.shuffle(order)
            results = {i: runner([batches[i]], layer)[0] for i in order}
            return [results[i] for i in range(len(batches))]

        return propagate_full(store, shuffled, run_id="run-1", token=1, batch_size=batch_size)
    return propagate_full(store, runner, run_id="run-1", token=1, batch_size=batch_size)


def level(store, node, key="pii"):
    tag = store.tags.get(node, {}).get(key)
    return None if tag is None else set(tag.values)


def test_direct_expression_count_and_hash():
    store = build()
    run_full(store)
    assert level(store, "dwd.user.email") == {"L3"}
    assert level(store, "dwd.user.email_u") == {"L3"}  # upper keeps
    assert level(store, "dwd.user.phone_h") == {"L1"}  # md5 downgrades
    assert level(store, "dws.user_stat.n") is None  # count(distinct) drops
    assert level(store, "dws.user_stat.any_email") == {"L3"}  # max keeps
    assert level(store, "ads.report.any_email") == {"L3"}
    assert level(store, "ads.report.region") is None  # join key is a weak reference


def test_filter_narrows_the_table_tag():
    store = build()
    run_full(store)
    assert level(store, "dwd.user", "app") == {"douyin"}
    assert level(store, "dws.user_stat", "app") == {"douyin"}


def test_self_overwrite_and_cycle_terminate():
    store = build()
    report = run_full(store)
    assert not report.stopped_at_cap
    for node in ("cyc.a.x", "cyc.b.x", "cyc.c.x"):
        assert level(store, node) == {"L3"}


def test_provenance_hops_back_to_the_seed():
    store = build()
    run_full(store)
    tag = store.tags["ads.report.any_email"]["pii"]
    (prov,) = tag.provenance
    assert (prov.source, prov.task, prov.kind, prov.hops) == ("dws.user_stat.any_email", "t_ads", "direct", 3)


@pytest.mark.parametrize(("batch_size", "shuffle"), [(1, None), (3, 7), (500, None), (2, 11)])
def test_same_fixpoint_whatever_batches_and_order(batch_size, shuffle):
    reference = build()
    run_full(reference)
    other = build()
    run_full(other, batch_size=batch_size, shuffle_seed=shuffle)
    assert other.tags == reference.tags


def test_rerunning_changes_nothing():
    store = build()
    run_full(store)
    before = {k: dict(v) for k, v in store.tags.items()}
    run_full(store)
    assert store.tags == before


def test_block_and_manual_override():
    store = build()
    store.block("dwd.user.email", "pii")
    store.set_own("dwd.user.email_u", "pii", ["L2"], origin=MANUAL)
    run_full(store)
    assert level(store, "dwd.user.email") is None
    assert level(store, "dws.user_stat.any_email") is None  # nothing flows past the block
    assert level(store, "dwd.user.email_u") == {"L2"}


def test_retraction_after_a_seed_is_removed():
    store = build()
    run_full(store)
    store.unset_own("ods.user.email", "pii")
    _report, cone = propagate_incremental(
        store, ["ods.user.email"], local_batches(store, POLICY, "run-2", 2), run_id="run-2", token=2
    )
    assert level(store, "dwd.user.email") is None
    assert level(store, "ads.report.any_email") is None
    assert level(store, "cyc.a.x") is None  # the cycle does not keep the tag alive
    assert level(store, "dwd.user.phone_h") == {"L1"}  # untouched branch stays
    assert cone < 30


def test_retraction_after_a_task_changes():
    store = build()
    run_full(store)
    touched = store.remove_task("t_dws")
    changed = extract_lineage(
        SqlTask(
            task_id="t_dws",
            sql="INSERT OVERWRITE TABLE dws.user_stat SELECT app, uid AS any_email FROM dwd.user",
        )
    )
    touched |= store.add_lineage(changed, POLICY)
    propagate_incremental(store, touched, local_batches(store, POLICY, "run-2", 2), run_id="run-2", token=2)
    assert level(store, "dws.user_stat.any_email") is None
    assert level(store, "ads.report.any_email") is None


def test_full_run_forgets_tags_whose_seed_is_gone():
    store = build()
    run_full(store)
    for key in ("pii", "pii_type"):
        store.unset_own("ods.user.email", key)
    store.unset_own("ods.user.phone", "pii")
    run_full(store)
    assert all("pii" not in tags for tags in store.tags.values())


def test_a_batch_run_twice_in_a_layer_gives_the_same_answer():
    """A worker may die after writing, or a resumed run repeats its layer: a change must not get lost."""
    store = build()
    start = start_full(store, "run-1", 1)
    first = compute_batch(store, POLICY, start, "run-1", 1, layer=0)
    again = compute_batch(store, POLICY, start, "run-1", 1, layer=0)
    # the second run also sees what the first wrote (batches of a layer see each other's writes)
    assert first and set(first) <= set(again)
