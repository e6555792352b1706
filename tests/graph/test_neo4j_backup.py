"""Backup and restore of a Neo4j graph through the driver (graph/neo4j_backup.py): a restored graph
equals the one backed up, node for node and edge for edge, on the live Neo4j."""

from __future__ import annotations

import pytest

from tests.graph.fingerprint import graph_lines
from watershed.graph.backup import MANIFEST
from watershed.graph.model import HarvestRun
from watershed.graph.neo4j_backup import SNAPSHOT, Neo4jBackupError, backup, restore
from watershed.ingest.generator import generate_warehouse, seed_apps


def test_a_restored_graph_is_the_graph_backed_up(neo4j_store, tmp_path):
    from bench.propagation_bench import load_generated
    from watershed.propagation.graph_store import GraphTagStore
    from watershed.propagation.policy import default_policy

    generate_warehouse(tmp_path / "warehouse", tasks=20, seed=3)
    neo4j_store.record_run(HarvestRun(id="h1", started_at="2024-01-01T00:00:00"))
    _, catalog = load_generated(neo4j_store, tmp_path / "warehouse")
    tags = GraphTagStore(neo4j_store, default_policy())
    seed_apps(tags, catalog)
    # a value FalkorDB could not hold in a property map key, and one with a backtick
    neo4j_store.execute("CREATE (:`Odd``Label` {`we``ird`: 'a\\u0000b', list: [1, 2], f: 1.5, yes: true})")
    before = graph_lines(neo4j_store, ignore_properties=(), ignore_labels=("WatershedStamp",))

    manifest = backup(neo4j_store, tmp_path / "backup")
    assert manifest.service == "neo4j" and (tmp_path / "backup" / MANIFEST).exists()

    with pytest.raises(Neo4jBackupError, match="empty database only"):
        restore(neo4j_store, tmp_path / "backup")  # a restore does not merge into a graph
    neo4j_store.clear()
    restore(neo4j_store, tmp_path / "backup")
    assert graph_lines(neo4j_store, ignore_properties=(), ignore_labels=("WatershedStamp",)) == before
    assert neo4j_store.read("MATCH (n:WatershedRestoring) RETURN count(n)") == [[0]]


def test_a_damaged_backup_is_refused_before_anything_is_written(neo4j_store, tmp_path):
    neo4j_store.execute("CREATE (:Table {id: 'db.t'})")
    backup(neo4j_store, tmp_path / "backup")
    neo4j_store.clear()
    snapshot = tmp_path / "backup" / SNAPSHOT
    snapshot.write_text(snapshot.read_text().replace("db.t", "db.u"))
    with pytest.raises(Exception, match="does not match its manifest"):
        restore(neo4j_store, tmp_path / "backup")
    assert neo4j_store.read("MATCH (n) WHERE NOT n:WatershedStamp RETURN count(n)") == [[0]]


def test_services_backup_and_restore_on_neo4j(neo4j_server, neo4j_store, tmp_path, monkeypatch):
    """`watershed services backup|restore` with WATERSHED_BACKEND=neo4j export and import through the
    driver (they refused: FalkorDB's snapshot only)."""
    from typer.testing import CliRunner

    from watershed.api.cli import app

    monkeypatch.setenv("WATERSHED_BACKEND", "neo4j")
    monkeypatch.setenv("WATERSHED_NEO4J_URI", neo4j_server.uri)
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(neo4j_server.data_dir))
    monkeypatch.setenv("WATERSHED_KEYSTORE_PATH", str(tmp_path / "no-keystore.json"))
    neo4j_store.execute("CREATE (:Table {id: 'db.t'})-[:HAS_COLUMN]->(:Column {id: 'db.t.c'})")
    before = graph_lines(neo4j_store, ignore_labels=("WatershedStamp",))
    runner = CliRunner()
    saved = runner.invoke(app, ["services", "backup", str(tmp_path / "b")])
    assert saved.exit_code == 0, saved.output
    refused = runner.invoke(app, ["services", "restore", str(tmp_path / "b")])
    assert refused.exit_code == 1 and "empty database only" in refused.output
    neo4j_store.clear()
    restored = runner.invoke(app, ["services", "restore", str(tmp_path / "b")])
    assert restored.exit_code == 0, restored.output
    assert graph_lines(neo4j_store, ignore_labels=("WatershedStamp",)) == before
