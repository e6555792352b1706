"""Coverage snapshots (api/service/coverage.py) on a small hand-built graph: exact counts by database
and owner, the downstream of protected roots, one snapshot per date (a second compute of a date
replaces it), the newest N kept, the trend oldest first, a database-limited caller's view, and
`new_unprotected`."""

from __future__ import annotations

import pytest

from watershed.api.service import coverage
from watershed.graph.protection import ColumnKey, TableProtection
from watershed.orc_crypto.protect import records
from watershed.propagation.graph_store import encode_tags
from watershed.propagation.policy import default_policy
from watershed.propagation.rules import Provenance, TagValue

DAY = "2026-11-20"


def seed(key: str, value: str) -> TagValue:
    return TagValue(key, frozenset([value]), "seed")


def flowed(key: str, value: str, source: str) -> TagValue:
    return TagValue(
        key, frozenset([value]), "propagated", (Provenance(source, "t1", "direct", "inherit", 1),)
    )


#: table -> (owner, {column: tags}); dwd's columns derive from ods.users'
WAREHOUSE = {
    "ods.users": (
        "crm",
        {
            "ssn": {"pii": seed("pii", "L4"), "pii_type": seed("pii_type", "ssn")},
            "email": {"pii": seed("pii", "L3")},
            "phone": {"pii": seed("pii", "L3")},
            "name": {},
        },
    ),
    "dwd.users_wide": (
        None,
        {
            "ssn_copy": {"pii": flowed("pii", "L4", "ods.users.ssn")},
            # two hops from the protected root, through a column that is not protected
            "ssn_copy2": {"pii": flowed("pii", "L4", "dwd.users_wide.ssn_copy")},
            "ssn_hash": {"pii": flowed("pii", "L1", "ods.users.ssn")},
            "email_copy": {"pii": flowed("pii", "L3", "ods.users.email")},
            "app": {"app": seed("app", "douyin")},
        },
    ),
}


def build(store) -> None:
    for table, (owner, columns) in WAREHOUSE.items():
        db, name = table.split(".")
        store.execute(
            "CREATE (t:Table {id: $id, db: $db, name: $name, owner: $owner})",
            {"id": table, "db": db, "name": name, "owner": owner},
        )
        for column, tags in columns.items():
            store.execute(
                "MATCH (t:Table {id: $table}) "
                "CREATE (t)-[:HAS_COLUMN]->(:Column {id: $id, table: $table, name: $name, tags: $tags})",
                {"table": table, "id": f"{table}.{column}", "name": column, "tags": encode_tags(tags)},
            )
    # ssn encrypted as the policy asks (pii L4: key pii, nullify); phone with another mask than asked
    records.save_table(
        store,
        TableProtection(
            table="ods.users",
            columns={
                "ssn": ColumnKey(key="pii", mask="nullify"),
                "phone": ColumnKey(key="pii", mask="sha256"),
            },
            at="2026-11-19T00:00:00+00:00",
            run="protect-1",
        ),
    )
    store.execute("MATCH (c:Column {id: 'dwd.users_wide.ssn_hash'}) SET c.owner = 'risk'")
    store.execute(
        "CREATE (:DiscoveryProposal {id: 'ods.users.name', table: 'ods.users', status: 'open'}), "
        "(:DiscoveryProposal {id: 'dwd.users_wide.app', table: 'dwd.users_wide', status: 'rejected'})"
    )


@pytest.fixture
def warehouse(graph_store):
    build(graph_store)
    return graph_store


def counts(row) -> dict:
    return {name: getattr(row, name) for name in coverage.CoverageCounts.model_fields}


def test_a_snapshot_counts_each_column_once_by_database_and_owner(warehouse):
    computed = coverage.compute(warehouse, default_policy(), DAY, batch_size=1)
    snapshot = computed.snapshot
    assert counts(snapshot.totals) == {
        "columns": 9,
        "sensitive": 7,
        "covered": 6,
        "protected": 1,
        "unprotected": 5,
        "uncovered": 1,
        "proposals": 1,
        "downstream": 3,
    }
    databases = {row.database: counts(row) for row in snapshot.databases}
    assert databases["ods"] == {
        "columns": 4,
        "sensitive": 3,
        "covered": 3,
        "protected": 1,
        "unprotected": 2,
        "uncovered": 0,
        "proposals": 1,
        "downstream": 0,
    }
    owners = {(row.database, row.owner): counts(row) for row in computed.owners}
    assert set(owners) == {("ods", "crm"), ("dwd", coverage.NO_OWNER), ("dwd", "risk")}
    assert owners[("dwd", "risk")] == {
        "columns": 1,
        "sensitive": 1,
        "covered": 0,
        "protected": 0,
        "unprotected": 0,
        "uncovered": 1,
        "proposals": 0,
        "downstream": 1,
    }
    assert owners[("dwd", coverage.NO_OWNER)]["unprotected"] == 3
    assert [c.column for c in computed.unprotected] == [
        "dwd.users_wide.email_copy",
        "dwd.users_wide.ssn_copy",
        "dwd.users_wide.ssn_copy2",
        "ods.users.email",
        "ods.users.phone",
    ]
    assert [c.column for c in computed.uncovered] == ["dwd.users_wide.ssn_hash"]
    # email_copy derives from an unprotected root: not listed; the most sensitive tag first
    assert [(d.column, d.status, d.tag, d.roots) for d in computed.downstream] == [
        ("dwd.users_wide.ssn_copy", "unprotected", "pii=L4", ["ods.users.ssn"]),
        ("dwd.users_wide.ssn_copy2", "unprotected", "pii=L4", ["ods.users.ssn"]),
        ("dwd.users_wide.ssn_hash", "uncovered", "pii=L1", ["ods.users.ssn"]),
    ]


def test_a_policy_without_protection_rules_covers_nothing(warehouse):
    policy = default_policy().model_copy(update={"protection": None})
    totals = coverage.compute(warehouse, policy, DAY).snapshot.totals
    assert (totals.sensitive, totals.covered, totals.protected, totals.uncovered) == (7, 0, 0, 7)
    assert totals.downstream == 0  # nothing is protected, so nothing lies below a protected root


def test_a_date_computed_again_replaces_its_snapshot_and_the_newest_n_are_kept(warehouse):
    policy = default_policy()
    for day in ("2026-11-18", "2026-11-19", DAY, DAY):
        coverage.refresh(warehouse, policy, day, keep=2)
    assert coverage.snapshot_ids(warehouse) == [DAY, "2026-11-19"]
    # the next compute of DAY sees ods.users.email protected too
    records.save_table(
        warehouse,
        TableProtection(
            table="ods.users",
            columns={
                "ssn": ColumnKey(key="pii", mask="nullify"),
                "email": ColumnKey(key="pii", mask="nullify"),
            },
            at="2026-11-20T00:00:00+00:00",
            run="protect-2",
        ),
    )
    before = coverage.unprotected_ids(warehouse, DAY)
    coverage.refresh(warehouse, policy, DAY, keep=2)
    assert coverage.snapshot_ids(warehouse) == [DAY, "2026-11-19"]
    # a date older than every kept one is not kept; each kept snapshot has one list node per database
    coverage.refresh(warehouse, policy, "2026-11-01", keep=2)
    assert coverage.snapshot_ids(warehouse) == [DAY, "2026-11-19"]
    lists = warehouse.read(
        "MATCH (l:CoverageList) RETURN l.snapshot, l.database ORDER BY l.snapshot, l.database"
    )
    assert lists == [["2026-11-19", "dwd"], ["2026-11-19", "ods"], [DAY, "dwd"], [DAY, "ods"]]
    found = coverage.coverage(warehouse)
    assert found.snapshot.id == DAY and found.snapshot.totals.protected == 2
    assert [(p.id, p.totals.protected) for p in found.trend] == [("2026-11-19", 1), (DAY, 2)]
    assert before - coverage.unprotected_ids(warehouse, DAY) == {"ods.users.email"}


def test_a_database_limited_caller_sees_only_its_databases(warehouse):
    coverage.refresh(warehouse, default_policy(), DAY)
    found = coverage.coverage(warehouse, databases=["dwd"], top=1)
    assert [row.database for row in found.snapshot.databases] == ["dwd"]
    assert (found.hidden_databases, found.databases_total, found.owners_total) == (1, 1, 2)
    assert found.snapshot.totals.columns == 5 and found.trend[0].totals.columns == 5
    assert [(row.database, row.owner) for row in found.owners] == [("dwd", coverage.NO_OWNER)]
    # the most unprotected database first, `top` of them
    assert [row.database for row in coverage.coverage(warehouse, top=1).snapshot.databases] == ["dwd"]
    page = coverage.listed_columns(warehouse, "unprotected", databases=["ods"], limit=1, offset=1)
    assert (page.total, [c.column for c in page.columns]) == (2, ["ods.users.phone"])
    risky = coverage.listed_columns(warehouse, "downstream", owner="risk")
    assert [c.column for c in risky.columns] == ["dwd.users_wide.ssn_hash"]


def test_new_unprotected_names_the_columns_that_were_not_unprotected_before(warehouse):
    policy = default_policy()
    first = coverage.compute(warehouse, policy, "2026-11-19")
    warehouse.execute(
        "MATCH (t:Table {id: 'ods.users'}) "
        "CREATE (t)-[:HAS_COLUMN]->(:Column {id: 'ods.users.ssn2', table: 'ods.users', name: 'ssn2', "
        "tags: $tags})",
        {"tags": encode_tags({"pii": seed("pii", "L4")})},
    )
    second = coverage.compute(warehouse, policy, DAY)
    assert coverage.new_unprotected(first, second) == ["ods.users.ssn2"]
    assert coverage.new_unprotected(None, first) == [c.column for c in first.unprotected]
    coverage.save(warehouse, first)
    coverage.save(warehouse, second)
    assert (
        coverage.previous_id(warehouse, DAY) == "2026-11-19"
        and coverage.previous_id(warehouse, "2026-11-19") is None
    )
    stored = coverage.unprotected_ids(warehouse, coverage.previous_id(warehouse, DAY))
    assert coverage.new_unprotected(stored, coverage.unprotected_ids(warehouse, DAY)) == ["ods.users.ssn2"]


def test_the_last_nightly_is_the_newest_date(warehouse):
    assert coverage.coverage(warehouse).nightly is None
    coverage.record_nightly(warehouse, DAY, "incomplete", ["emit"])
    coverage.record_nightly(warehouse, "2026-11-19", "complete", [])
    last = coverage.coverage(warehouse).nightly
    assert (last.date, last.status, last.missing) == (DAY, "incomplete", ["emit"])


def test_the_nightly_step_stores_the_date_s_snapshot_and_the_summary_its_status(
    warehouse, falkordb_server, tmp_path, monkeypatch
):
    from watershed.api.service.nightly import NightlySettings, steps

    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(falkordb_server.port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", warehouse.graph_name)
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path))
    settings = NightlySettings()
    assert steps.STEPS.index("protection_apply") < steps.STEPS.index("coverage") < steps.STEPS.index("emit")
    first = steps.coverage(DAY, settings)
    again = steps.coverage(DAY, settings)
    assert (again.step, again.status, again.counts) == ("coverage", "done", first.counts)
    assert (first.counts["sensitive"], first.counts["protected"], first.counts["downstream"]) == (7, 1, 3)
    assert steps.results_of(settings, DAY)["coverage"] == again
    assert coverage.snapshot_ids(warehouse) == [DAY]
    summary = steps.summary(DAY, settings)
    nightly = coverage.coverage(warehouse).nightly
    assert (nightly.date, nightly.status, nightly.missing) == (DAY, "incomplete", summary.missing)
    assert "coverage" not in summary.missing and "harvest" in summary.missing


def test_a_cycle_of_copies_reaches_the_protected_root_and_ends(warehouse):
    # a <- b <- a, and a <- ods.users.ssn: both lie below the protected root, and the walk ends
    a = TagValue(
        "pii",
        frozenset(["L4"]),
        "propagated",
        (
            Provenance("ods.users.ssn", "t1", "direct", "inherit", 1),
            Provenance("dwd.loop.b", "t2", "direct", "inherit", 2),
        ),
    )
    b = flowed("pii", "L4", "dwd.loop.a")
    warehouse.execute("CREATE (:Table {id: 'dwd.loop', db: 'dwd', name: 'loop'})")
    for name, tag in (("a", a), ("b", b)):
        warehouse.execute(
            "MATCH (t:Table {id: 'dwd.loop'}) "
            "CREATE (t)-[:HAS_COLUMN]->(:Column {id: $id, table: 'dwd.loop', name: $name, tags: $tags})",
            {"id": f"dwd.loop.{name}", "name": name, "tags": encode_tags({"pii": tag})},
        )
    downstream = coverage.compute(warehouse, default_policy(), DAY).downstream
    roots = {item.column: item.roots for item in downstream}
    assert roots["dwd.loop.a"] == roots["dwd.loop.b"] == ["ods.users.ssn"]
