"""The Neo4j store reads optional properties (a user's `databases`, a token's `last_used`) that most
nodes lack; Neo4j answers such a read with a notification the driver logs as a warning, which
reached the demo's and the CLI's stderr once per statement."""

from __future__ import annotations

import logging


def test_reading_an_absent_property_logs_nothing(neo4j_store, caplog):
    neo4j_store.execute("CREATE (:User {name: 'ann', role: 'admin'})")
    with caplog.at_level(logging.DEBUG, logger="neo4j.notifications"):
        rows = neo4j_store.read("MATCH (u:User {name: 'ann'}) RETURN u.name, u.never_set_anywhere")
    assert rows == [["ann", None]]
    assert [r.getMessage() for r in caplog.records if r.name.startswith("neo4j.notifications")] == []
