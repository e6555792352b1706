"""Discovery, the use case, on a real FalkorDB graph: a labelled table whose column names say
nothing, in Parquet and ORC at the location the catalog records; proposals, accept (a seed with
origin `discovered` and its audit entries), reject (remembered), encrypted columns reported, and
no sampled value anywhere but in memory."""

from __future__ import annotations

import json
import logging
import os
import re

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from bench.pii_values import column_values
from tests.discovery.warehouse import EXPECTED, labelled_table, sampled_values, write_orc, write_parquet
from watershed.api.service import discovery
from watershed.api.service.audit import entries
from watershed.discovery.settings import DiscoverySettings
from watershed.graph.catalog import Catalog
from watershed.orc_crypto.encrypt import encrypt_file, parse_encrypt_option, parse_mask_option
from watershed.orc_crypto.keys.memory import InMemoryKeyProvider
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy

ROWS = 120
POLICY = default_policy()


def _settings(**changes) -> DiscoverySettings:
    return DiscoverySettings(**changes)


def _warehouse(store, tmp_path):
    """ods.ext (Parquet, two files) and ods.ext_orc (ORC, Hive's file name) in the catalog."""
    table = labelled_table(rows=ROWS)
    write_parquet(tmp_path / "ods" / "ext", table)
    write_orc(tmp_path / "ods" / "ext_orc", table)
    columns = dict.fromkeys(table.column_names, "string") | {"amount_num": "double"}
    catalog = Catalog.from_dict(
        {
            "tables": {
                "ods.ext": {
                    "columns": columns,
                    "location": str(tmp_path / "ods" / "ext"),
                    "format": "parquet",
                },
                "ods.ext_orc": {
                    "columns": columns,
                    "location": f"file://{tmp_path}/ods/ext_orc",
                    "format": "orc",
                },
                "ods.remote": {"columns": {"c1": "string"}, "location": "hdfs://nn/warehouse/remote"},
                "ods.nowhere": {"columns": {"c1": "string"}},
            }
        }
    )
    store.upsert_catalog(catalog)
    return tmp_path, table


@pytest.fixture
def store(backend_store):
    """The use case's graph, once on FalkorDB and once on Neo4j (tests/support/neo4j.py)."""
    return backend_store


@pytest.fixture
def warehouse(store, tmp_path):
    return _warehouse(store, tmp_path)


@pytest.fixture
def falkordb_warehouse(graph_store, tmp_path):
    return _warehouse(graph_store, tmp_path)


def _found(run, table: str) -> dict[str, str]:
    (report,) = [t for t in run.tables if t.table == table]
    return {p.column.rsplit(".", 1)[1]: p.tags["pii_type"] for p in report.proposals}


def test_columns_whose_names_say_nothing_are_proposed_in_parquet_and_orc(store, warehouse):
    run = discovery.discover(store, POLICY, _settings(), tables=["ods.ext", "ods.ext_orc"])
    assert _found(run, "ods.ext") == EXPECTED
    assert _found(run, "ods.ext_orc") == EXPECTED
    report = run.tables[0]
    assert (report.status, report.files, report.rows, report.stopped_by) == ("sampled", 2, ROWS, None)
    stored = discovery.proposals(store, table="ods.ext", limit=100).items
    assert {p.column: p.tags for p in stored} == {
        f"ods.ext.{c}": {
            "pii": {"ssn": "L4", "id_card": "L4", "bank_card": "L4", "ip": "L2"}.get(t, "L3"),
            "pii_type": t,
        }
        for c, t in EXPECTED.items()
    }
    assert all(p.status == "open" and p.sampled > 90 and p.confidence == 1.0 for p in stored)


def test_every_root_table_by_default_and_what_cannot_be_sampled_says_why(store, warehouse):
    run = discovery.discover(store, POLICY, _settings())
    by_table = {t.table: t for t in run.tables}
    assert set(by_table) == {"ods.ext", "ods.ext_orc", "ods.remote"}  # ods.nowhere has no location
    assert by_table["ods.remote"].status == "skipped"
    assert "hdfs://" in by_table["ods.remote"].reason and "Spark" in by_table["ods.remote"].reason
    named = discovery.discover(store, POLICY, _settings(), tables=["ods.nowhere", "ods.missing"])
    assert [(t.status, t.reason) for t in named.tables] == [
        ("skipped", "the harvest recorded no location for it"),
        ("skipped", "no such table in the graph"),
    ]


def test_a_table_is_sampled_again_only_when_its_files_change(store, warehouse):
    root, _ = warehouse
    discovery.discover(store, POLICY, _settings(), tables=["ods.ext"])
    again = discovery.discover(store, POLICY, _settings(), tables=["ods.ext"])
    assert [(t.status, t.rows) for t in again.tables] == [("unchanged", 0)]
    part = root / "ods" / "ext" / "part-00000.snappy.parquet"
    os.utime(part, ns=(part.stat().st_atime_ns, part.stat().st_mtime_ns + 10**9))
    changed = discovery.discover(store, POLICY, _settings(), tables=["ods.ext"])
    assert [(t.status, t.rows) for t in changed.tables] == [("sampled", ROWS)]


def test_accepting_sets_seeds_with_origin_discovered_and_audits_in_the_same_write(store, warehouse):
    discovery.discover(store, POLICY, _settings(), tables=["ods.ext"])
    writes: list[list[str]] = []
    backend = type(store)
    write_all = backend.write_all

    def counted(self, statements):
        writes.append([query for query, _ in statements])
        return write_all(self, statements)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(backend, "write_all", counted)
        accepted = discovery.accept(store, POLICY, "ods.ext.c17", actor="alice")
    assert len(writes) == 1
    assert accepted.status == "accepted" and accepted.by == "alice"
    own = GraphTagStore(store, POLICY).own_tags("ods.ext.c17")
    assert {(e["origin"], e["key"], e["value"], e["by"]) for e in own} == {
        ("discovered", "pii", "L3", "alice"),
        ("discovered", "pii_type", "phone", "alice"),
    }
    audited = [(e.actor, e.action, e.target) for e in entries(store)]
    assert ("alice", "discovery.accept", "ods.ext.c17") in audited
    assert {("alice", "tag.set", "ods.ext.c17:pii"), ("alice", "tag.set", "ods.ext.c17:pii_type")} <= set(
        audited
    )
    [proposal] = store.discovery_proposals_of(["ods.ext.c17"]).values()
    assert proposal.status == "accepted"
    with pytest.raises(discovery.DiscoveryError, match="already accepted"):
        discovery.accept(store, POLICY, "ods.ext.c17", actor="alice")
    with pytest.raises(discovery.UnknownProposalError, match=re.escape("ods.ext.town")):
        discovery.accept(store, POLICY, "ods.ext.town", actor="alice")


def test_a_rejection_is_remembered_until_the_content_changes(store, warehouse):
    root, table = warehouse
    discovery.discover(store, POLICY, _settings(), tables=["ods.ext"])
    rejected = discovery.reject(store, POLICY, "ods.ext.contact", actor="bob")
    assert rejected.status == "rejected"
    assert ("bob", "discovery.reject", "ods.ext.contact") in [
        (e.actor, e.action, e.target) for e in entries(store)
    ]
    again = discovery.discover(store, POLICY, _settings(), tables=["ods.ext"], force=True)
    assert "contact" not in _found(again, "ods.ext")
    assert store.discovery_proposals_of(["ods.ext.contact"])["ods.ext.contact"].status == "rejected"
    # the column now holds e-mail addresses: the same column is proposed again, as an e-mail
    import random

    emails = column_values("email", ROWS, random.Random(5))
    changed = table.set_column(table.column_names.index("contact"), "contact", pa.array(emails, pa.string()))
    for part in (root / "ods" / "ext").glob("*.parquet"):
        part.unlink()
    write_parquet(root / "ods" / "ext", changed)
    later = discovery.discover(store, POLICY, _settings(), tables=["ods.ext"])
    assert _found(later, "ods.ext")["contact"] == "email"
    assert store.discovery_proposals_of(["ods.ext.contact"])["ods.ext.contact"].status == "open"


def test_rejecting_an_accepted_proposal_takes_its_seeds_back(store, warehouse):
    discovery.discover(store, POLICY, _settings(), tables=["ods.ext"])
    discovery.accept(store, POLICY, "ods.ext.k3", actor="alice")
    discovery.reject(store, POLICY, "ods.ext.k3", actor="bob")
    assert GraphTagStore(store, POLICY).own_tags("ods.ext.k3") == []
    assert ("bob", "tag.unset", "ods.ext.k3:pii") in [(e.actor, e.action, e.target) for e in entries(store)]


def test_columns_tagged_or_blocked_already_are_not_proposed(store, warehouse):
    from watershed.api.service import tag_changes

    tags = GraphTagStore(store, POLICY)
    tag_changes.set_tags(tags, "ods.ext.c17", {"pii": ["L4"], "pii_type": ["phone"]}, by="carol")
    tag_changes.block(tags, "ods.ext.x9", "pii", by="carol")
    run = discovery.discover(store, POLICY, _settings(), tables=["ods.ext"])
    assert set(_found(run, "ods.ext")) == set(EXPECTED) - {"c17", "x9"}


def test_proposals_at_the_auto_accept_confidence_are_accepted(store, warehouse):
    run = discovery.discover(store, POLICY, _settings(discovery_auto_accept=0.99), tables=["ods.ext"])
    assert run.auto_accepted == len(EXPECTED)
    own = GraphTagStore(store, POLICY).own_tags("ods.ext.ext_info")
    assert {(e["origin"], e["key"], e["value"], e["by"]) for e in own} == {
        ("discovered", "pii", "L3", "discovery"),
        ("discovered", "pii_type", "email", "discovery"),
    }


class AskedOrc(discovery.OrcFiles):
    """orc_crypto's reads as discovery makes them, noting the columns each read asked for."""

    def __init__(self) -> None:
        self.asked: set[str] = set()

    def read(self, path, columns, part, rows):
        self.asked.update(columns)
        return super().read(path, columns, part, rows)


def test_encrypted_orc_columns_are_reported_protected_and_never_read(
    graph_store, falkordb_warehouse, tmp_path
):
    root, _ = falkordb_warehouse
    plain = root / "ods" / "ext_orc" / "000000_0"
    secret = root / "ods" / "secure"
    secret.mkdir()
    provider = InMemoryKeyProvider({"pii": b"p" * 32})
    encrypt_file(
        plain,
        secret / "000000_0",
        provider,
        parse_encrypt_option("pii:c17,k3"),
        parse_mask_option("nullify:c17,k3"),
    )
    graph_store.upsert_catalog(
        Catalog.from_dict(
            {"tables": {"ods.secure": {"columns": ["c17", "k3", "ext_info"], "location": str(secret)}}}
        )
    )
    orc = AskedOrc()
    run = discovery.discover(
        graph_store, POLICY, _settings(), tables=["ods.secure"], file_readers={"orc": orc}
    )
    (report,) = run.tables
    assert report.protected == ["c17", "k3"]
    assert not orc.asked & {"c17", "k3"}
    assert _found(run, "ods.secure") == {"ext_info": "email"}


def test_no_sampled_value_reaches_the_logs_or_the_graph(
    graph_store, falkordb_warehouse, caplog, falkordb_server
):
    caplog.set_level(logging.DEBUG)
    run = discovery.discover(graph_store, POLICY, _settings(), tables=["ods.ext", "ods.ext_orc"])
    discovery.accept(graph_store, POLICY, "ods.ext.k3", actor="alice")
    discovery.reject(graph_store, POLICY, "ods.ext.c4", actor="alice")
    secrets = sampled_values(falkordb_warehouse[1])
    assert len(secrets) > 500
    logged = caplog.text + "".join(r.getMessage() for r in caplog.records)
    assert "ods.ext" in logged  # the use case does log: what, not which values
    server_log = falkordb_server.log_file.read_text(errors="replace")
    texts = [str(v) for row in graph_store.read("MATCH (n) RETURN properties(n)") for v in row[0].values()]
    texts += [
        str(v) for row in graph_store.read("MATCH ()-[r]->() RETURN properties(r)") for v in row[0].values()
    ]
    assert any("138" in t or "***" in t for t in texts)  # masked examples are stored
    answer = run.model_dump_json()
    for where, text in (("logs", logged), ("server log", server_log), ("run answer", answer)):
        assert not [v for v in secrets if v in text], where
    leaked = [(v, t) for t in texts for v in secrets if v in t]
    assert leaked == []
    examples = [e for p in discovery.proposals(graph_store, limit=100).items for e in p.evidence.examples]
    assert examples and all("*" in e for e in examples)


def test_the_cli_discovers_lists_and_decides(graph_store, falkordb_warehouse, monkeypatch):
    port = graph_store.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    from watershed.api.cli import app

    runner = CliRunner()
    result = runner.invoke(app, ["discover", "--table", "ods.ext", "--sample-rows", "60", "--format", "json"])
    assert result.exit_code == 0, result.output
    run = discovery.DiscoveryRun.model_validate_json(result.stdout)
    assert run.tables[0].rows == 60 and run.proposed == len(EXPECTED)
    listed = runner.invoke(
        app, ["discover", "proposals", "--status", "open", "--limit", "3", "--format", "json"]
    )
    assert listed.exit_code == 0, listed.output
    page = json.loads(listed.stdout)
    assert [p["column"] for p in page["items"]] == ["ods.ext.c17", "ods.ext.c4", "ods.ext.contact"]
    rest = runner.invoke(app, ["discover", "proposals", "--cursor", page["next_cursor"], "--format", "json"])
    assert "ods.ext.k3" in [p["column"] for p in json.loads(rest.stdout)["items"]]
    accepted = runner.invoke(app, ["discover", "accept", "ods.ext.k3"])
    assert accepted.exit_code == 0 and "accepted pii=L4 pii_type=id_card" in accepted.output
    again = runner.invoke(app, ["discover", "accept", "ods.ext.k3"])
    assert again.exit_code == 1 and "already accepted" in again.output
    path = runner.invoke(
        app, ["discover", "--path", str(falkordb_warehouse[0] / "ods" / "ext_orc"), "--format", "json"]
    )
    assert path.exit_code == 0, path.output
    shown = discovery.DiscoveryRun.model_validate_json(path.stdout)
    assert {p.column: p.tags["pii_type"] for p in shown.tables[0].proposals} == EXPECTED
    assert not graph_store.discovery_proposals_of([str(falkordb_warehouse[0] / "ods" / "ext_orc") + ".c17"])


def test_hive_positional_orc_columns_are_the_catalogs_columns_in_order(graph_store, tmp_path):
    """Hive's ORC writer names columns _col0, _col1, ...: the catalog's order names them."""
    table = labelled_table(rows=60).select(["town", "k3", "c17"])
    write_orc(tmp_path / "hive", table.rename_columns(["_col0", "_col1", "_col2"]))
    catalog = {
        "columns": [{"name": n, "type": "string"} for n in ("town", "k3", "c17")],
        "location": str(tmp_path / "hive"),
    }
    graph_store.upsert_catalog(Catalog.from_dict({"tables": {"ods.hive_t": catalog}}))
    run = discovery.discover(graph_store, POLICY, _settings(), tables=["ods.hive_t"])
    assert _found(run, "ods.hive_t") == {"k3": "id_card", "c17": "phone"}
