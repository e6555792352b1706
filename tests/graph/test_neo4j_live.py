"""What only the Neo4j backend has, against the live Neo4j of the session (tests/support/neo4j.py): its
constraints and indexes, its password sources, and how an unreachable Neo4j is named.

The GraphStore contract itself runs on both backends in test_store_contract.py,
test_catalog_entries.py and tests/propagation/test_graph_store.py (`backend_store`).
"""

from __future__ import annotations

import pytest

from watershed.graph.backends import UnreachableGraphError, open_answering
from watershed.graph.neo4j_server import Neo4jSetupError
from watershed.graph.neo4j_store import CONSTRAINTS, STAMP_LABEL, Neo4jStore
from watershed.graph.server import free_port
from watershed.graph.settings import GraphSettings


def _names(statements: list[str]) -> set[str]:
    # "CREATE CONSTRAINT watershed_table_id IF NOT EXISTS ..." -> watershed_table_id
    return {statement.split()[2] for statement in statements}


def test_the_schema_is_made_once_and_every_name_is_there(neo4j_store):
    neo4j_store.ensure_schema()  # again: IF NOT EXISTS
    constraints = {row[0] for row in neo4j_store.read("SHOW CONSTRAINTS YIELD name RETURN name")}
    indexes = {row[0] for row in neo4j_store.read("SHOW INDEXES YIELD name RETURN name")}
    wanted = [s for s in CONSTRAINTS if s.startswith("CREATE CONSTRAINT")]
    assert _names(wanted) <= constraints
    assert _names([s for s in CONSTRAINTS if s.startswith("CREATE INDEX")]) <= indexes
    # a uniqueness constraint holds: a second Table with the same id is refused
    neo4j_store.write_all([("CREATE (:Table {id: 'db.once'})", {})])
    with pytest.raises(Exception, match="already exists"):
        neo4j_store.write_all([("CREATE (:Table {id: 'db.once'})", {})])


def test_open_answering_makes_the_schema_on_the_live_server(neo4j_server, neo4j_store):
    store = open_answering(neo4j_server.settings, schema=True)
    try:
        assert isinstance(store, Neo4jStore)
        assert store.read("RETURN 1") == [[1]]
    finally:
        store.close()


def test_the_password_may_come_from_a_secret_file(neo4j_server, tmp_path):
    secret = tmp_path / "neo4j-password"
    secret.write_text((neo4j_server.data_dir / "neo4j" / "password").read_text())
    remote_like = neo4j_server.settings.model_copy(
        update={"neo4j_password_file": secret, "data_dir": tmp_path / "elsewhere"}
    )
    store = open_answering(remote_like)
    store.close()


def test_a_wrong_password_is_an_unreachable_graph_naming_the_uri(neo4j_server):
    wrong = neo4j_server.settings.model_copy(update={"neo4j_password": "not-the-password"})
    with pytest.raises(UnreachableGraphError) as caught:
        open_answering(wrong)
    message = str(caught.value)
    assert message.startswith(f"cannot reach the neo4j graph on {neo4j_server.uri} (")
    assert "not-the-password" not in message


def test_an_unreachable_neo4j_is_named_without_the_uris_password():
    settings = GraphSettings(
        backend="neo4j", neo4j_uri=f"bolt://neo4j:hunter2@127.0.0.1:{free_port()}", neo4j_password="x"
    )
    with pytest.raises(UnreachableGraphError) as caught:
        open_answering(settings)
    assert "hunter2" not in str(caught.value)
    assert str(caught.value).startswith("cannot reach the neo4j graph on bolt://127.0.0.1:")


def test_a_remote_neo4j_without_a_password_names_the_settings(tmp_path):
    settings = GraphSettings(backend="neo4j", neo4j_uri="neo4j+s://abc.databases.neo4j.io", data_dir=tmp_path)
    with pytest.raises(Neo4jSetupError) as caught:
        open_answering(settings)
    assert "neo4j_password" in str(caught.value) and "WATERSHED_NEO4J_PASSWORD_FILE" in str(caught.value)


def test_clear_empties_a_graph_larger_than_one_batch(neo4j_store):
    neo4j_store.execute(
        "UNWIND range(1, 25000) AS i CREATE (:Column {id: 'db.t.c' + i})-[:FLOWS_TO]->(:Probe {n: i})"
    )
    data = f"MATCH (n) WHERE NOT n:{STAMP_LABEL} RETURN count(n)"
    assert neo4j_store.read(data) == [[50000]]
    neo4j_store.clear()
    assert neo4j_store.read(data) == [[0]]
    # what was kept under any stamp described the graph just deleted: the clear moved them all
    assert neo4j_store.read(f"MATCH (n:{STAMP_LABEL}) RETURN n.name") == [["#epoch"]]
