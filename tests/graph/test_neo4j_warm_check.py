"""A gateway's warm check on the live Neo4j (tests/support/neo4j.py) costs its round trip and its
commit, nothing more (docs/graph.md, "warm check"; bench/neo4j_warm_check_bench.py measures it):
the queued record's statement is one text whatever the entry and the stamp, so Neo4j plans it
once (a new text costs a plan, tens of milliseconds), and its plan finds the stamps and the
entry through the unique constraints' indexes, with no scan and no Eager."""

from __future__ import annotations

from tests.support.neo4j_counting import CountingDriver
from tests.support.neo4j_plans import operators_of
from watershed.api.service.audit import QUEUED_ENTRIES, audit_params
from watershed.graph.kept import DATA_STAMP

#: operators that read more than the rows asked for, or hold every row before the next step
WIDE = {"AllNodesScan", "NodeByLabelScan", "NodeIndexScan", "DirectedRelationshipTypeScan", "Eager"}


def entry(n: int) -> dict:
    return audit_params("ann", "authz.decision", f"query:{n}", None, {"allowed": n % 2 == 0})


def sent_queued_records(store, stamp: str) -> list[tuple[str, dict]]:
    """What three queued records send: under the stamp now, with no stamp, under a moved stamp."""
    recording = CountingDriver(store.driver)
    store.driver = recording
    try:
        assert store.queue_record(QUEUED_ENTRIES, entry(1), stamp=stamp) is None
        assert store.queue_record(QUEUED_ENTRIES, entry(2)) is None
        assert store.queue_record(QUEUED_ENTRIES, entry(3), stamp="moved") == stamp
    finally:
        store.driver = recording.driver
    return recording.statements


def test_a_queued_record_is_one_statement_text_whatever_its_entry_and_stamp(neo4j_store):
    stamp = neo4j_store.change_stamp(DATA_STAMP)
    sent = sent_queued_records(neo4j_store, stamp)
    # one statement a record, all one text: the entry and the stamp are parameters
    assert len(sent) == 3
    assert len({text for text, _ in sent}) == 1
    assert [params["stamp"] for _, params in sent] == [stamp, None, "moved"]
    assert [params["rows"][0]["audit_target"] for _, params in sent] == ["query:1", "query:2", "query:3"]


def test_a_queued_records_plan_seeks_the_constraints_and_holds_nothing(neo4j_store):
    stamp = neo4j_store.change_stamp(DATA_STAMP)
    [(text, params), *_] = sent_queued_records(neo4j_store, stamp)
    with neo4j_store.driver.session(database=neo4j_store.database) as session:
        summary = session.run("PROFILE " + text, {**params, "rows": [entry(4)]}).consume()
    found = operators_of(summary.profile)
    assert not [name for name, _ in found if name in WIDE], found
    seeks = sorted(details for name, details in found if name.startswith("NodeUniqueIndexSeek"))
    # the epoch's stamp, the named stamp, and the entry's MERGE: each one unique-index seek
    assert len(seeks) == 3, found
    assert [s.split(" WHERE")[0] for s in seeks] == [
        "UNIQUE a:AuditEntry(id)",
        "UNIQUE e:WatershedStamp(name)",
        "UNIQUE s:WatershedStamp(name)",
    ]
