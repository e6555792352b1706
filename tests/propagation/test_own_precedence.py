"""A column's own tags of one key set by a policy name rule and by an accepted discovery resolve
the same way whatever order the graph returns them in: the discovered seed wins (OWN_PRECEDENCE)."""

from __future__ import annotations

import itertools

from watershed.graph.catalog import Catalog
from watershed.propagation.graph_store import GraphTagStore, own_of
from watershed.propagation.policy import default_policy
from watershed.propagation.rules import DISCOVERED, MANUAL, OWN_PRECEDENCE, SEED

POLICY = default_policy()

#: TAGGED rows as READ_BATCH and CURRENT_TAGS give them: (type, origin, key, value)
ROWS = [
    ["TAGGED", SEED, "pii", "L3"],
    ["TAGGED", SEED, "pii_type", "phone"],
    ["TAGGED", DISCOVERED, "pii", "L4"],
    ["TAGGED", DISCOVERED, "pii_type", "id_card"],
]


def test_a_discovered_seed_wins_over_a_rule_seed_in_every_row_order():
    seen = set()
    for order in itertools.permutations(ROWS):
        own = own_of(list(order))
        seen.add(tuple((k, tuple(sorted(t.values)), t.origin) for k, t in sorted(own.seeds.items())))
    assert seen == {(("pii", ("L4",), DISCOVERED), ("pii_type", ("id_card",), DISCOVERED))}


def test_manual_tags_stay_apart_and_unknown_origins_rank_below_rule_seeds():
    rows = [
        ["TAGGED", "imported", "pii", "L1"],
        ["TAGGED", SEED, "pii", "L2"],
        ["TAGGED", MANUAL, "pii", "L4"],
    ]
    for order in itertools.permutations(rows):
        own = own_of(list(order))
        assert (own.seeds["pii"].origin, own.manual["pii"].values) == (SEED, frozenset(["L4"]))
    assert OWN_PRECEDENCE.index(SEED) < OWN_PRECEDENCE.index(DISCOVERED) < OWN_PRECEDENCE.index(MANUAL)


def test_on_the_graph_current_tags_show_the_discovered_seed_over_the_name_rule(graph_store):
    graph_store.upsert_catalog(Catalog.from_dict({"tables": {"ods.people": {"columns": ["mobile_phone"]}}}))
    tags = GraphTagStore(graph_store, POLICY)
    assert tags.sync_rule_seeds() > 0  # *phone* seeds pii and pii_type
    column = "ods.people.mobile_phone"
    tags.set_tag(column, "pii", ["L4"], by="alice", origin=DISCOVERED)
    tags.set_tag(column, "pii_type", ["id_card"], by="alice", origin=DISCOVERED)
    current = tags.current_tags([column])[column]
    assert {k: (sorted(v.values), v.origin) for k, v in current.items()} == {
        "pii": (["L4"], DISCOVERED),
        "pii_type": (["id_card"], DISCOVERED),
    }
    batch = tags.read_batch([column]).own[column]
    assert batch.seeds["pii"].origin == DISCOVERED
