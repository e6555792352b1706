"""The demo warehouse's discovery content (ingest/demo_content.py): the same tables, columns and
tasks as without it; on the graph, discovery proposes the nameless sensitive fillers the name rules
miss and none of the decoys, and after propagation flags the derived copies of those untagged roots
as leaks and the copies of the `phone` column holding device models as over-tagging."""

from __future__ import annotations

import json

from watershed.api.service.discovery import discover
from watershed.discovery.settings import DiscoverySettings
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.demo_content import FILLERS, SENSITIVE
from watershed.ingest.extract import extract_lineage
from watershed.ingest.generator import generate_warehouse
from watershed.propagation.engine import local_batches, propagate_full
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy

POLICY = default_policy()


def test_content_changes_no_table_column_or_task(tmp_path):
    plain = generate_warehouse(tmp_path / "plain", tasks=40, seed=7)
    content = generate_warehouse(tmp_path / "content", tasks=40, seed=7, content_tables=3)
    assert plain == content
    assert (tmp_path / "plain" / "tasks.jsonl").read_text() == (
        tmp_path / "content" / "tasks.jsonl"
    ).read_text()
    located = [
        t
        for t, e in json.loads((tmp_path / "content" / "catalog.json").read_text())["tables"].items()
        if "location" in e
    ]
    assert sum(t.startswith("ods.") for t in located) == 3 and any(t.startswith("dwd.") for t in located)


def test_discovery_finds_what_the_names_miss_and_flags_the_copies(graph_store, tmp_path):
    generate_warehouse(tmp_path, tasks=40, seed=7, content_tables=3)
    catalog = Catalog.load(tmp_path / "catalog.json")
    graph_store.upsert_catalog(catalog)
    items = []
    for line in (tmp_path / "tasks.jsonl").read_text().splitlines():
        record = json.loads(line)
        task = SqlTask(task_id=record["task_id"], sql=record["sql"], vars=record["vars"])
        lineage = extract_lineage(task, catalog)
        if not lineage.errors:
            items.append((task, lineage))
    graph_store.upsert_tasks(items, catalog)
    tags = GraphTagStore(graph_store, POLICY)
    tags.sync_rule_seeds()

    roots = discover(graph_store, POLICY, DiscoverySettings())
    assert len(roots.tables) == 3
    for report in roots.tables:
        found = {p.column.rsplit(".", 1)[1]: p.tags["pii_type"] for p in report.proposals}
        assert found == SENSITIVE, report.table  # the named email/phone are seeded already
        assert not set(found) & (set(FILLERS) - set(SENSITIVE))  # no decoy
        current = tags.current_tags([f"{report.table}.{c}" for c in SENSITIVE])
        assert current == {}  # no name rule saw them

    tags.raise_fence(1)
    propagate_full(tags, local_batches(tags, POLICY, "run-1", 1), run_id="run-1", token=1)
    derived = discover(graph_store, POLICY, DiscoverySettings(), derived=True, force=True)
    flags = [f for report in derived.tables for f in report.flags]
    leaks = [f for f in flags if f.kind == "leak"]
    over = [f for f in flags if f.kind == "over_tag"]
    assert leaks and all(not f.root_tagged and f.root.rsplit(".", 1)[1] in SENSITIVE for f in leaks)
    # one table's `phone` holds device models: its name rule's tag is flagged on the copies
    assert over and len({f.root for f in over}) == 1 and over[0].root.endswith(".phone")
