"""`orc_crypto.protect`: the plan on a real FalkorDB graph and real ORC files (pyarrow-written,
encrypted with orc_crypto), the policy checks, and the graph records."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tests.support.plan_table import TABLE, apply, files, policy, set_table, tags
from watershed.graph.protection import (
    ColumnKey,
    FileProblem,
    ProtectedFile,
    ProtectionPlan,
    ProtectionRule,
    ProtectionRun,
    TableProtection,
)
from watershed.orc_crypto.encrypt import encrypt_file
from watershed.orc_crypto.protect import records
from watershed.orc_crypto.protect.checks import ProtectionError, check_keys, check_protection
from watershed.orc_crypto.protect.plan import plan_protection


def test_newly_sensitive_column_is_planned_with_its_files_ddl_and_why(graph_store, warehouse):
    plan = plan_protection(graph_store, policy(key_provider_path="kms://http@kms:9600/kms"))
    [table] = plan.tables
    assert table.table == TABLE
    [change] = table.columns
    assert (change.name, change.action, change.tag) == ("ssn", "encrypt", "pii=L4")
    assert change.want == ColumnKey(key="pii", mask="nullify")
    assert change.why == "from ods.src.ssn by task task_7 (direct)"
    assert [f.path for f in table.files] == files(warehouse)  # _SUCCESS and .crc skipped
    assert {f.partition for f in table.files} == {"dt=2026-01-01", "dt=2026-01-02"}
    assert all(
        f.action == "encrypt" and f.columns == {"ssn": change.want} and not f.current for f in table.files
    )
    assert table.files[0].size == (warehouse / "dt=2026-01-01" / "part-0.orc").stat().st_size
    options = (
        "('hadoop.security.key.provider.path'='kms://http@kms:9600/kms', "
        "'orc.key.provider'='hadoop', 'orc.encrypt'='pii:ssn', 'orc.mask'='nullify:ssn')"
    )
    assert table.ddl == [
        f"ALTER TABLE dw.users SET TBLPROPERTIES {options}",
        f"ALTER TABLE dw.users SET SERDEPROPERTIES {options}",
    ]


def test_an_encrypted_file_is_read_from_its_tail_and_left_out(graph_store, warehouse, provider):
    first, second = files(warehouse)
    encrypt_file(first, first, provider, {"pii": ["ssn"]}, {"ssn": "nullify"}, in_place=True)
    [table] = plan_protection(graph_store, policy()).tables
    assert [f.path for f in table.files] == [second]


def test_after_an_apply_a_second_plan_is_empty(graph_store, warehouse, provider):
    apply(graph_store, plan_protection(graph_store, policy()), provider)
    assert plan_protection(graph_store, policy()).tables == []


def test_a_level_that_asks_another_key_reencrypts(graph_store, warehouse, provider):
    apply(graph_store, plan_protection(graph_store, policy()), provider)
    set_table(graph_store, TABLE, str(warehouse), {"ssn": tags("L2")})
    [table] = plan_protection(graph_store, policy()).tables
    [change] = table.columns
    assert (change.action, change.have.key, change.want) == (
        "reencrypt",
        "pii",
        ColumnKey(key="fin", mask="sha256"),
    )
    assert [f.action for f in table.files] == ["reencrypt", "reencrypt"]
    assert table.files[0].current["ssn"].key == "pii" and table.files[0].current["ssn"].version == 0
    assert "'orc.encrypt'='fin:ssn', 'orc.mask'='sha256:ssn'" in table.ddl[0]


def test_a_released_column_is_kept_and_reported_or_decrypted(graph_store, warehouse, provider):
    apply(graph_store, plan_protection(graph_store, policy()), provider)
    set_table(graph_store, TABLE, str(warehouse), {"ssn": tags("L1")})

    [kept] = plan_protection(graph_store, policy()).tables
    assert [(c.name, c.action, c.tag) for c in kept.columns] == [("ssn", "release", "pii=L1")]
    assert kept.files == [] and kept.ddl == []

    [released] = plan_protection(graph_store, policy(on_release="decrypt")).tables
    assert [c.action for c in released.columns] == ["decrypt"]
    assert [(f.action, f.columns) for f in released.files] == [("decrypt", {}), ("decrypt", {})]
    assert released.ddl == [
        "ALTER TABLE dw.users UNSET TBLPROPERTIES IF EXISTS "
        "('hadoop.security.key.provider.path', 'orc.key.provider', 'orc.encrypt', 'orc.mask')"
    ]


def test_a_seed_tag_says_so_and_a_table_can_be_chosen(graph_store, warehouse, tmp_path):
    set_table(graph_store, "dw.other", str(tmp_path / "none"), {"phone": tags("L3", origin="seed")})
    plan = plan_protection(graph_store, policy(), tables=["dw.other"])
    [table] = plan.tables
    assert [(c.name, c.why) for c in table.columns] == [("phone", "seed")]
    assert table.problems == [f"dw.other: location {tmp_path / 'none'} is not a directory"]


def test_tables_without_location_or_not_orc_are_problems_not_errors(graph_store, warehouse):
    set_table(graph_store, "dw.nowhere", None, {"ssn": tags("L4")})
    set_table(graph_store, "dw.parquet", "/tmp", {"ssn": tags("L4")}, fmt="parquet")
    plan = {t.table: t for t in plan_protection(graph_store, policy()).tables}
    assert plan["dw.nowhere"].problems == ["dw.nowhere has no location: its files cannot be planned"]
    assert plan["dw.parquet"].problems == ["dw.parquet is stored as parquet, not ORC: only ORC is encrypted"]
    assert len(plan[TABLE].files) == 2


def test_an_unknown_table_is_an_error_naming_it(graph_store, warehouse):
    with pytest.raises(ProtectionError, match=r"unknown table db\.nope"):
        plan_protection(graph_store, policy(), tables=[TABLE, "db.nope"])


def test_a_type_that_injects_sql_is_rejected_naming_the_column(graph_store, warehouse):
    graph_store.write_all(
        [
            (
                "MATCH (c:Column {id: $id}) SET c.type = $type",
                {"id": f"{TABLE}.email", "type": "string) USING ORC; DROP TABLE x; --"},
            )
        ]
    )
    [table] = plan_protection(graph_store, policy(), create=True).tables
    assert table.ddl == [] and table.files == []
    assert len(table.problems) == 1 and "column 'email'" in table.problems[0]
    assert "is not a Spark SQL type" in table.problems[0]
    set_table(graph_store, TABLE, str(warehouse), {"email": None})  # type 'string' again
    [table] = plan_protection(graph_store, policy(), create=True).tables
    assert table.ddl[0].startswith(
        "CREATE TABLE dw.users (\n  id STRING,\n  ssn STRING,\n  email STRING\n) USING ORC"
    )
    assert 'orc.encrypt "pii:ssn"' in table.ddl[0]


def test_policy_checks_name_the_rule(provider):
    bad_mask = policy(rules=[ProtectionRule(tag="pii", levels=["L4"], key="pii", mask="rot13")])
    with pytest.raises(ProtectionError, match=r"protection.rules\[0\].mask: unknown mask 'rot13'"):
        check_protection(bad_mask)
    bad_key = policy(rules=[ProtectionRule(tag="pii", levels=["L4"], key="PII Key")])
    with pytest.raises(ProtectionError, match=r"protection.rules\[0\].key: invalid key name"):
        check_protection(bad_key)
    missing = policy(rules=[*policy().rules, ProtectionRule(tag="pii", levels=["L1"], key="hr")])
    with pytest.raises(ProtectionError, match="the KMS has no key named hr"):
        check_keys(missing, provider)
    check_keys(policy(), provider)


def test_a_key_the_kms_lacks_stops_the_plan(graph_store, warehouse, kms_server):
    from watershed.orc_crypto.keys.kms_client import KmsClient

    client = KmsClient(kms_server.provider_path)
    plan_protection(graph_store, policy(), provider=client)  # pii and fin exist
    missing = policy(rules=[ProtectionRule(tag="pii", levels=["L4"], key="nokey")])
    # the KMS's key ACLs answer for a key it does not have as for one the user may not see
    with pytest.raises(
        ProtectionError, match=r"cannot read the KMS metadata of nokey .*a missing key or no ACL"
    ):
        plan_protection(graph_store, missing, provider=client)


def test_records_round_trip_and_are_idempotent(graph_store, warehouse):
    key = ColumnKey(key="pii", mask="nullify", version=0)
    saved = [
        ProtectedFile(
            path=p, table=TABLE, columns={"ssn": key}, size=1, mtime_ns=2, sha256="ab", at="t", run="r1"
        )
        for p in files(warehouse)
    ]
    records.save_files(graph_store, saved)
    records.save_files(graph_store, saved)
    assert records.files_of(graph_store, [TABLE]) == {f.path: f for f in saved}
    assert graph_store.read("MATCH (f:ProtectedFile)-[:PART_OF]->(:Table) RETURN count(f)") == [[2]]
    assert records.table_protection(graph_store, TABLE) is None
    protection = TableProtection(table=TABLE, columns={"ssn": key}, ddl=["ALTER ..."], at="t", run="r1")
    records.save_table(graph_store, protection)
    records.save_table(graph_store, protection)
    assert records.table_protection(graph_store, TABLE) == protection
    run = ProtectionRun(id="r1", started_at="2026-01-01T00:00:00")
    records.save_run(graph_store, run)
    done = run.model_copy(
        update={"status": "done", "files_done": 2, "errors": [FileProblem(path="p", table=TABLE, error="e")]}
    )
    records.save_run(graph_store, done)
    records.save_run(graph_store, ProtectionRun(id="r0", started_at="2025-01-01T00:00:00"))
    assert records.run(graph_store, "r1") == done
    assert [r.id for r in records.runs(graph_store, 10)] == ["r1", "r0"]
    assert records.run(graph_store, "nope") is None


def test_cli_plan_json_round_trips(graph_store, warehouse, tmp_path, monkeypatch):
    from watershed.api.cli import app

    port = graph_store.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(
        "sensitivity: {pii: {levels: [L1, L2, L3, L4], types_key: pii_type}}\n"
        "protection: {rules: [{tag: pii, levels: [L4], key: pii}]}\n"
    )
    out = tmp_path / "plan.json"
    runner = CliRunner()
    result = runner.invoke(
        app, ["protect", "plan", "--policy", str(policy_file), "--format", "json", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    plan = ProtectionPlan.model_validate_json(result.stdout)
    assert plan == ProtectionPlan.model_validate_json(out.read_text())
    assert [t.table for t in plan.tables] == [TABLE] and plan.files == 2
    text = runner.invoke(app, ["protect", "plan", "--policy", str(policy_file), "--table", TABLE])
    assert text.exit_code == 0, text.output
    assert "encrypt" in text.stdout and "files to rewrite: 2" in text.stdout
    unknown = runner.invoke(app, ["protect", "plan", "--policy", str(policy_file), "--table", "db.nope"])
    assert unknown.exit_code == 1 and "unknown table db.nope" in unknown.output
    policy_file.write_text("sensitivity: {pii: {levels: [L4]}}\n")
    bare = runner.invoke(app, ["protect", "plan", "--policy", str(policy_file)])
    assert bare.exit_code == 1 and "no protection rules" in bare.output


def test_the_default_policy_protects_pii_with_the_pii_key():
    from watershed.propagation.policy import default_policy

    protection = default_policy().protection
    check_protection(protection)
    assert protection.rule_for({"pii": ["L4"]})[0].mask == "nullify"
    assert protection.rule_for({"pii": ["L2"]})[0].mask == "sha256"
    assert protection.rule_for({"pii": ["L1"]}) is None
    assert {rule.key for rule in protection.rules} == {"pii"}
