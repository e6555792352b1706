"""protect_file: one planned file rewritten in place through the test KMS (real ORC files)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from watershed.graph.protection import ColumnKey, FilePlan
from watershed.orc_crypto.codec.tail import read_tail
from watershed.orc_crypto.decrypt import read_table
from watershed.orc_crypto.keys.kms_client import KmsClient
from watershed.orc_crypto.protect.apply import protect_file
from watershed.orc_crypto.protect.tails import file_protection

ROWS = 40


def _table() -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "ssn": [f"{100000000 + i * 7919:09d}" for i in range(ROWS)],
            "email": [None if i % 5 == 2 else f"user{i}@example.com" for i in range(ROWS)],
            "name": [f"name-{i}" for i in range(ROWS)],
        }
    )


@pytest.fixture
def provider(kms_server):
    client = KmsClient(kms_server.provider_path)
    yield client
    client.close()


@pytest.fixture
def orc_file(tmp_path) -> Path:
    directory = tmp_path / "warehouse" / "t" / "dt=2024-01-01"
    directory.mkdir(parents=True)
    path = directory / "part-0.orc"
    orc.write_table(_table(), path, stripe_size=4096, compression="zstd")
    return path


def _plan(path: Path, columns: dict[str, ColumnKey], action="encrypt") -> FilePlan:
    stat = os.stat(path)
    return FilePlan(
        path=str(path), size=stat.st_size, mtime_ns=stat.st_mtime_ns, action=action, columns=columns
    )


WANT = {"ssn": ColumnKey(key="pii", mask="nullify"), "email": ColumnKey(key="pii", mask="sha256")}


def add_table(store, table: str, location: Path | str) -> None:
    """The catalog's Table node with its location: apply rewrites only files under it."""
    store.execute(
        "MERGE (t:Table {id: $id}) SET t.location = $location", {"id": table, "location": str(location)}
    )


def _leftovers(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name)


def test_encrypt_then_repeat_is_unchanged(orc_file, provider):
    plan = _plan(orc_file, WANT)
    outcome = protect_file(plan, provider, run="r1", table="db.t")
    assert outcome.status == "done", outcome.problem
    data = orc_file.read_bytes()
    assert outcome.record.sha256 == hashlib.sha256(data).hexdigest()
    assert outcome.bytes_written == len(data) == outcome.record.size
    assert {n: (k.key, k.mask) for n, k in outcome.record.columns.items()} == {
        "ssn": ("pii", "nullify"),
        "email": ("pii", "sha256"),
    }
    assert outcome.record.columns["ssn"].version == 0
    assert _leftovers(orc_file) == []
    # with the key: the original rows; without: the masks
    assert read_table(orc_file, provider).to_pylist() == _table().to_pylist()
    masked = read_table(orc_file).to_pylist()
    assert all(row["ssn"] is None for row in masked)
    original = _table().to_pylist()
    assert [r["email"] for r in masked] == [
        None if r["email"] is None else hashlib.sha256(r["email"].encode()).hexdigest().upper()
        for r in original
    ]
    # the same plan again (a resumed or repeated apply): nothing written, even though the plan's
    # size and mtime no longer match the file
    again = protect_file(plan, provider, run="r2", table="db.t")
    assert again.status == "unchanged"
    assert orc_file.read_bytes() == data
    assert again.record.sha256 == outcome.record.sha256


def test_changed_file_is_skipped_and_left_alone(orc_file, provider):
    plan = _plan(orc_file, WANT)
    orc.write_table(_table().slice(0, 10), orc_file)  # someone rewrote it after the plan
    before = orc_file.read_bytes()
    outcome = protect_file(plan, provider, run="r1", table="db.t")
    assert outcome.status == "skipped"
    assert "changed since the plan" in outcome.problem.error
    assert orc_file.read_bytes() == before
    assert _leftovers(orc_file) == []


def test_missing_key_leaves_input_intact(orc_file, provider):
    before = orc_file.read_bytes()
    stat = os.stat(orc_file)
    plan = _plan(orc_file, {"ssn": ColumnKey(key="no-such-key", mask="nullify")})
    outcome = protect_file(plan, provider, run="r1", table="db.t")
    assert outcome.status == "failed"
    assert "no-such-key" in outcome.problem.error
    assert orc_file.read_bytes() == before
    assert os.stat(orc_file).st_mtime_ns == stat.st_mtime_ns
    assert _leftovers(orc_file) == []


def test_stale_temp_of_a_killed_writer_is_removed(orc_file, provider):
    # a temp of our naming whose writer (pid 2**22 + 1, beyond pid_max defaults) is gone
    stale = orc_file.parent / f".{orc_file.name}.{2**22 + 1}.{'0' * 16}.tmp"
    stale.write_bytes(b"half written")
    outcome = protect_file(_plan(orc_file, WANT), provider, run="r1", table="db.t")
    assert outcome.status == "done"
    assert _leftovers(orc_file) == []


def test_reencrypt_under_another_key_then_decrypt(orc_file, provider):
    assert protect_file(_plan(orc_file, WANT), provider, run="r1", table="db.t").status == "done"
    # the level rose: ssn moves to key fin with redact; email stays as it was
    want = {"ssn": ColumnKey(key="fin", mask="redact"), "email": ColumnKey(key="pii", mask="sha256")}
    outcome = protect_file(_plan(orc_file, want, "reencrypt"), provider, run="r2", table="db.t")
    assert outcome.status == "done", outcome.problem
    held = file_protection(read_tail(orc_file))
    assert {n: (k.key, k.mask) for n, k in held.items()} == {
        "ssn": ("fin", "redact"),
        "email": ("pii", "sha256"),
    }
    assert read_table(orc_file, provider).to_pylist() == _table().to_pylist()
    assert {r["ssn"] for r in read_table(orc_file).to_pylist()} == {"999999999"}
    # released with on_release: decrypt -> back to plaintext
    outcome = protect_file(_plan(orc_file, {}, "decrypt"), provider, run="r3", table="db.t")
    assert outcome.status == "done", outcome.problem
    assert not read_tail(orc_file).is_encrypted
    assert orc.ORCFile(orc_file).read().to_pylist() == _table().to_pylist()
    assert _leftovers(orc_file) == []


def test_rewrap_recorded_files_after_a_roll(tmp_path, graph_store):
    """apply (in process), roll the key, rewrap from the records: every file at the new version,
    records renewed, a second rewrap changes nothing."""
    from watershed.graph.protection import ProtectionPlan, TablePlan
    from watershed.orc_crypto.keys.memory import InMemoryKeyProvider
    from watershed.orc_crypto.protect import records
    from watershed.orc_crypto.protect.spark_apply import apply_plan, rewrap_files

    provider = InMemoryKeyProvider({"pii": b"a" * 32})
    paths = []
    for i in range(3):
        path = tmp_path / f"part-{i}.orc"
        orc.write_table(_table(), path, compression="zstd")
        paths.append(path)
    plan = ProtectionPlan(
        created_at="2024-01-01T00:00:00+00:00",
        policy_digest="t",
        tables=[TablePlan(table="db.t", files=[_plan(p, WANT) for p in paths])],
    )
    add_table(graph_store, "db.t", tmp_path)
    assert apply_plan(plan, graph_store, provider=provider).files_done == 3
    provider.add("pii", b"b" * 32)  # the roll: version 1
    run = rewrap_files(graph_store, provider=provider)
    assert (run.kind, run.files_done, run.files_unchanged, run.errors) == ("rewrap", 3, 0, [])
    assert 0 < run.bytes_rewritten < sum(p.stat().st_size for p in paths)
    saved = records.files_of(graph_store, ["db.t"])
    for path in paths:
        held = file_protection(read_tail(path))
        assert {k.version for k in held.values()} == {1}
        assert saved[str(path)].columns == held
        assert saved[str(path)].sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        assert read_table(path, provider).to_pylist() == _table().to_pylist()
    again = rewrap_files(graph_store, tables=["db.t"], provider=provider)
    assert (again.files_done, again.files_unchanged) == (0, 3)


# ------------------------------------------------------------------ a plan file is not trusted


def _apply_plan(tables, key_provider_path=None):
    from watershed.graph.protection import ProtectionPlan

    return ProtectionPlan(
        created_at="2024-01-01T00:00:00+00:00",
        policy_digest="t",
        key_provider_path=key_provider_path,
        tables=tables,
    )


def test_plan_with_create_or_edited_ddl_is_refused_before_anything_runs(tmp_path, graph_store, orc_file):
    from watershed.graph.protection import TablePlan
    from watershed.orc_crypto.ddl import create_statement
    from watershed.orc_crypto.keys.memory import InMemoryKeyProvider
    from watershed.orc_crypto.protect import records
    from watershed.orc_crypto.protect.ddl import alter_table_ddl
    from watershed.orc_crypto.protect.spark_apply import ApplyError, apply_plan

    provider = InMemoryKeyProvider({"pii": b"a" * 32})
    add_table(graph_store, "db.t", orc_file.parent)
    before = orc_file.read_bytes()
    create = create_statement("db.t", [("ssn", "string"), ("email", "string")], WANT, "kms://x")
    edited = alter_table_ddl("db.t", WANT, "kms://x")[0].replace("pii", "pii') , ('x'='y")
    for ddl, words in (([create], "plan without --create"), ([edited], "not the one its target")):
        plan = _apply_plan(
            [TablePlan(table="db.t", target=WANT, ddl=ddl, files=[_plan(orc_file, WANT)])], "kms://x"
        )
        with pytest.raises(ApplyError, match=r"table db\.t ") as raised:
            apply_plan(plan, graph_store, provider=provider)
        assert words in str(raised.value)
    assert orc_file.read_bytes() == before
    assert records.runs(graph_store) == []
    # the planner's own DDL passes (no Spark: reported as not run, the files rewritten)
    good = _apply_plan(
        [
            TablePlan(
                table="db.t",
                target=WANT,
                ddl=alter_table_ddl("db.t", WANT, "kms://x"),
                files=[_plan(orc_file, WANT)],
            )
        ],
        "kms://x",
    )
    run = apply_plan(good, graph_store, provider=provider)
    assert run.files_done == 1
    assert [e.error for e in run.errors] == ["DDL not run: no Spark session"]


def test_file_outside_the_graphs_table_location_is_never_rewritten(tmp_path, graph_store):
    from watershed.graph.protection import TablePlan
    from watershed.orc_crypto.keys.memory import InMemoryKeyProvider
    from watershed.orc_crypto.protect.spark_apply import apply_plan

    provider = InMemoryKeyProvider({"pii": b"a" * 32})
    inside = tmp_path / "warehouse" / "t" / "part-0.orc"
    sibling = tmp_path / "warehouse" / "t2" / "part-0.orc"  # shares the prefix, not the directory
    elsewhere = tmp_path / "etc" / "part-0.orc"
    for path in (inside, sibling, elsewhere):
        path.parent.mkdir(parents=True)
        orc.write_table(_table(), path)
    escape = tmp_path / "warehouse" / "t" / "link"
    escape.symlink_to(elsewhere.parent)
    befores = {p: p.read_bytes() for p in (sibling, elsewhere)}
    # the graph's location (a file: URI), not the plan's, decides
    add_table(graph_store, "db.t", f"file://{tmp_path / 'warehouse' / 't'}")
    files = [_plan(inside, WANT), _plan(sibling, WANT), _plan(escape / "part-0.orc", WANT)]
    plan = _apply_plan([TablePlan(table="db.t", location=str(tmp_path), files=files)])
    run = apply_plan(plan, graph_store, provider=provider)
    assert (run.files_planned, run.files_done) == (3, 1)
    assert sorted(e.path for e in run.errors) == sorted([str(sibling), str(escape / "part-0.orc")])
    assert all("not under the table's location" in e.error for e in run.errors)
    assert {p: p.read_bytes() for p in befores} == befores
    # a table the graph has no location for: nothing of it is rewritten
    lost = _apply_plan([TablePlan(table="db.unknown", files=[_plan(sibling, WANT)])])
    run = apply_plan(lost, graph_store, provider=provider)
    assert run.files_done == 0 and "not under the table's location" in run.errors[0].error
    assert sibling.read_bytes() == befores[sibling]


def test_table_record_holds_the_whole_target():
    """apply with a protected, tag b, apply again: the record holds {a, b}, not just the change."""
    from watershed.graph.protection import ColumnChange, TablePlan
    from watershed.orc_crypto.protect.ddl import alter_table_ddl
    from watershed.orc_crypto.protect.spark_apply import _table_record

    target = {"a": ColumnKey(key="pii", mask="nullify"), "b": ColumnKey(key="pii", mask="nullify")}
    second = TablePlan(
        table="db.t",
        target=target,
        columns=[ColumnChange(column="db.t.b", name="b", action="encrypt", want=target["b"])],
        ddl=alter_table_ddl("db.t", target),
    )
    assert _table_record(second, "r2").columns == target


def test_run_record_lists_at_most_max_problems(graph_store):
    from watershed.graph.protection import MAX_RUN_PROBLEMS, FileProblem, ProtectionRun
    from watershed.orc_crypto.protect import records
    from watershed.orc_crypto.protect.apply import FileOutcome
    from watershed.orc_crypto.protect.spark_apply import _Tally

    run = ProtectionRun(id="bounded", started_at="2024-01-01T00:00:00")
    tally = _Tally(graph_store, run, 0, None)
    for status in ("skipped", "failed"):
        for start in range(0, MAX_RUN_PROBLEMS + 7, 50):
            tally.add(
                [
                    FileOutcome(
                        status, f"/f{i}", "db.t", problem=FileProblem(path=f"/f{i}", table="db.t", error="x")
                    )
                    for i in range(start, min(start + 50, MAX_RUN_PROBLEMS + 7))
                ]
            )
    saved = records.run(graph_store, "bounded")
    assert (len(saved.skipped), saved.more_skipped) == (MAX_RUN_PROBLEMS, 7)
    assert (len(saved.errors), saved.more_errors) == (MAX_RUN_PROBLEMS, 7)


def test_rewrap_covers_protected_files_without_a_record(tmp_path, graph_store):
    from watershed.graph.protection import TablePlan
    from watershed.orc_crypto.keys.memory import InMemoryKeyProvider
    from watershed.orc_crypto.protect import records
    from watershed.orc_crypto.protect.spark_apply import apply_plan, rewrap_files

    provider = InMemoryKeyProvider({"pii": b"a" * 32})
    location = tmp_path / "t"
    location.mkdir()
    paths = []
    for i in range(2):
        path = location / f"part-{i}.orc"
        orc.write_table(_table(), path)
        paths.append(path)
    (location / "notes.txt").write_text("not an ORC file")
    add_table(graph_store, "db.t", location)
    plan = _apply_plan([TablePlan(table="db.t", files=[_plan(p, WANT) for p in paths])])
    assert apply_plan(plan, graph_store, provider=provider).files_done == 2
    # the driver died before this file's record was saved
    graph_store.execute("MATCH (f:ProtectedFile {path: $path}) DETACH DELETE f", {"path": str(paths[1])})
    assert sorted(records.files_of(graph_store, ["db.t"])) == [str(paths[0])]
    provider.add("pii", b"b" * 32)
    run = rewrap_files(graph_store, provider=provider)
    assert (run.files_done, run.errors, run.skipped) == (2, [], [])
    saved = records.files_of(graph_store, ["db.t"])
    assert sorted(saved) == [str(p) for p in paths]
    held = file_protection(read_tail(paths[1]))
    assert {k.version for k in held.values()} == {1}
    assert saved[str(paths[1])].columns == held
    assert saved[str(paths[1])].sha256 == hashlib.sha256(paths[1].read_bytes()).hexdigest()
    assert saved[str(paths[1])].mtime_ns == paths[1].stat().st_mtime_ns
    again = rewrap_files(graph_store, provider=provider)
    assert (again.files_done, again.files_unchanged) == (0, 2)
