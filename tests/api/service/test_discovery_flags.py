"""Leak and over-tag flags on a real graph (FalkorDB and Neo4j): a root table and a table derived from it by
SQL, both with Parquet files at the catalog's locations; after a propagation run, sampling the
derived table flags what propagation missed (an untagged root, an opaque UDF the policy drops)
and what it over-tagged (a `*phone*` name rule on a column of device models), with the lineage
path; a hash of the over-tagged column is not flagged. Flags are stored with the scan in one
write, replaced by the next scan, listed by the use case and the CLI."""

from __future__ import annotations

import hashlib
import json
import random

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from bench.pii_values import column_values
from tests.discovery.warehouse import write_parquet
from watershed.api.service import discovery, tag_changes
from watershed.discovery.settings import DiscoverySettings
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.propagation.engine import local_batches, propagate_full
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy

ROWS = 60
#: the default policy, but a function its effect table does not name drops a sensitivity tag
POLICY = default_policy().model_copy(update={"unknown_function": "drop"})
TASK = (
    "INSERT OVERWRITE TABLE dwd.contacts SELECT c17 AS mobile, my_udf(k3) AS k3_x, "
    "upper(ext_info) AS mail, phone AS phone_copy, md5(phone) AS phone_hash, town FROM ods.contacts"
)
MODELS = ["iPhone 12", "Mi 11 Ultra", "Galaxy S21", "Pixel 7", "Mate 40 Pro", "Reno 8"]


def _values(seed: int = 3) -> dict[str, list[str]]:
    r = random.Random(seed)
    models = [r.choice(MODELS) for _ in range(ROWS)]
    return {
        "c17": column_values("cn_mobile", ROWS, r),
        "k3": column_values("cn_ric", ROWS, r),
        "ext_info": column_values("email", ROWS, r),
        "phone": models,
        "town": column_values("city", ROWS, r),
    }


def _write(root, values: dict[str, list[str]]) -> None:
    ods = pa.table({name: pa.array(v, pa.string()) for name, v in values.items()})
    dwd = {
        "mobile": values["c17"],
        "k3_x": values["k3"],
        "mail": [v.upper() for v in values["ext_info"]],
        "phone_copy": values["phone"],
        "phone_hash": [hashlib.md5(v.encode()).hexdigest() for v in values["phone"]],
        "town": values["town"],
    }
    write_parquet(root / "ods" / "contacts", ods, files=1)
    write_parquet(
        root / "dwd" / "contacts", pa.table({n: pa.array(v, pa.string()) for n, v in dwd.items()}), files=1
    )


def _warehouse(graph_store, tmp_path):
    values = _values()
    _write(tmp_path, values)
    catalog = Catalog.from_dict(
        {
            "tables": {
                "ods.contacts": {"columns": list(values), "location": str(tmp_path / "ods" / "contacts")},
                "dwd.contacts": {
                    "columns": ["mobile", "k3_x", "mail", "phone_copy", "phone_hash", "town"],
                    "location": str(tmp_path / "dwd" / "contacts"),
                },
            }
        }
    )
    graph_store.upsert_catalog(catalog)
    task = SqlTask(task_id="t_contacts", sql=TASK)
    lineage = extract_lineage(task, catalog)
    assert not lineage.errors, lineage.errors
    graph_store.upsert_tasks([(task, lineage)], catalog)
    tags = GraphTagStore(graph_store, POLICY)
    tag_changes.set_tags(tags, "ods.contacts.k3", {"pii": ["L4"], "pii_type": ["id_card"]}, by="carol")
    _propagate(tags, 1)
    return tmp_path, values


@pytest.fixture
def store(backend_store):
    """Once on FalkorDB and once on Neo4j (tests/support/neo4j.py)."""
    return backend_store


@pytest.fixture
def warehouse(store, tmp_path):
    return _warehouse(store, tmp_path)


@pytest.fixture
def falkordb_warehouse(graph_store, tmp_path):
    return _warehouse(graph_store, tmp_path)


def _propagate(tags: GraphTagStore, token: int) -> None:
    tags.sync_rule_seeds()
    tags.raise_fence(token)
    run = f"run-{token}"
    propagate_full(tags, local_batches(tags, POLICY, run, token), run_id=run, token=token)


def test_derived_columns_are_flagged_with_the_path_back(store, warehouse):
    graph_store = store
    tags = GraphTagStore(graph_store, POLICY)
    current = tags.current_tags(["dwd.contacts.phone_copy", "dwd.contacts.k3_x"])
    assert "pii" in current["dwd.contacts.phone_copy"] and "pii" not in current.get("dwd.contacts.k3_x", {})
    writes: list[int] = []
    write_all = type(graph_store).write_all

    def counted(self, statements):
        writes.append(len(statements))
        return write_all(self, statements)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(type(graph_store), "write_all", counted)
        run = discovery.discover(
            graph_store, POLICY, DiscoverySettings(), tables=["ods.contacts", "dwd.contacts"]
        )
    assert len(writes) == 2  # one write per table: its scan, proposals, flags and audit entry
    root, derived = run.tables
    assert root.flags == []  # a root has no lineage to judge
    flags = {f.column.rsplit(".", 1)[1]: f for f in derived.flags}
    assert run.flagged == 4
    assert {c: f.kind for c, f in flags.items()} == {
        "mobile": "leak",
        "k3_x": "leak",
        "mail": "leak",
        "phone_copy": "over_tag",
    }  # not phone_hash: after md5 the content may rightly look like nothing known

    mobile = flags["mobile"]
    assert (mobile.root, mobile.root_tagged, mobile.tags) == (
        "ods.contacts.c17",
        False,
        {"pii": "L3", "pii_type": "phone"},
    )
    assert [(s.source, s.target, s.kind) for s in mobile.path] == [
        ("ods.contacts.c17", "dwd.contacts.mobile", "direct")
    ]
    assert "untagged" in mobile.reason and mobile.held == {}

    udf = flags["k3_x"]
    assert (udf.root, udf.root_tagged, udf.tags["pii"]) == ("ods.contacts.k3", True, "L4")
    (step,) = udf.path
    assert (step.functions, step.effects, step.task) == (["my_udf"], {"my_udf": "opaque:drop"}, "t_contacts")
    assert "my_udf (opaque:drop)" in udf.reason
    assert udf.evidence.examples and all("*" in e for e in udf.evidence.examples)

    over = flags["phone_copy"]
    assert (over.root, over.held, over.tags) == (
        "ods.contacts.phone",
        {"pii": ["L3"], "pii_type": ["phone"]},
        {"pii": "L3", "pii_type": "phone"},
    )
    assert over.confidence == 0.0 and over.sampled == ROWS and over.evidence.examples == []
    assert [(s.source, s.target) for s in over.path] == [("ods.contacts.phone", "dwd.contacts.phone_copy")]

    # what is stored holds no sampled value: masked examples only
    _, values = warehouse
    secrets = {v for column in ("c17", "k3", "ext_info") for v in values[column]}
    secrets |= {v.upper() for v in values["ext_info"]}
    records = [row[0] for row in graph_store.read("MATCH (f:DiscoveryFlag) RETURN f.record")]
    assert len(records) == 4 and not [v for v in secrets for r in records if v in r]
    stored = discovery.flags(graph_store, limit=100).items
    assert [f.column for f in stored] == sorted(f.column for f in derived.flags)
    assert stored[0] == sorted(derived.flags, key=lambda f: f.column)[0]
    assert [f.column for f in discovery.flags(graph_store, kind="over_tag").items] == [
        "dwd.contacts.phone_copy"
    ]
    column = discovery.flags(graph_store, column="dwd.contacts.k3_x").items
    assert [f.kind for f in column] == ["leak"]
    page = discovery.flags(graph_store, table="dwd.contacts", limit=3)
    assert len(page.items) == 3 and page.next_cursor
    rest = discovery.flags(graph_store, table="dwd.contacts", cursor=page.next_cursor)
    assert [f.column for f in rest.items] == ["dwd.contacts.phone_copy"]


def test_a_scan_replaces_its_tables_flags_once_the_tags_follow(store, warehouse):
    graph_store = store
    settings = DiscoverySettings()
    discovery.discover(graph_store, POLICY, settings, tables=["ods.contacts", "dwd.contacts"])
    # the steward accepts the roots' proposals; propagation carries them down
    for column in ("ods.contacts.c17", "ods.contacts.ext_info"):
        discovery.accept(graph_store, POLICY, column, actor="alice")
    _propagate(GraphTagStore(graph_store, POLICY), 2)
    again = discovery.discover(graph_store, POLICY, settings, tables=["dwd.contacts"], force=True)
    assert {f.column: f.kind for f in again.tables[0].flags} == {
        "dwd.contacts.k3_x": "leak",
        "dwd.contacts.phone_copy": "over_tag",
    }
    assert {f.column for f in discovery.flags(graph_store, limit=100).items} == {
        "dwd.contacts.k3_x",
        "dwd.contacts.phone_copy",
    }


def test_without_named_tables_derived_ones_are_sampled_when_asked(store, warehouse):
    graph_store = store
    roots = discovery.discover(graph_store, POLICY, DiscoverySettings())
    assert [t.table for t in roots.tables] == ["ods.contacts"]
    everything = discovery.discover(
        graph_store, POLICY, DiscoverySettings(discovery_derived=True), force=True
    )
    assert [t.table for t in everything.tables] == ["dwd.contacts", "ods.contacts"]
    assert everything.flagged == 4


def test_the_cli_lists_flags(graph_store, falkordb_warehouse, monkeypatch):
    port = graph_store.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    discovery.discover(graph_store, POLICY, DiscoverySettings(), tables=["dwd.contacts"])
    from watershed.api.cli import app

    runner = CliRunner()
    listed = runner.invoke(app, ["discover", "flags", "--kind", "leak", "--format", "json"])
    assert listed.exit_code == 0, listed.output
    assert [f["column"] for f in json.loads(listed.stdout)["items"]] == [
        "dwd.contacts.k3_x",
        "dwd.contacts.mail",
        "dwd.contacts.mobile",
    ]
    shown = runner.invoke(app, ["discover", "flags", "--table", "dwd.contacts"], env={"COLUMNS": "400"})
    assert shown.exit_code == 0, shown.output
    assert "over_tag" in shown.output and "ods.contacts.phone" in shown.output
    bad = runner.invoke(app, ["discover", "flags", "--kind", "maybe"])
    assert bad.exit_code == 2 and "leak or over_tag" in bad.output
