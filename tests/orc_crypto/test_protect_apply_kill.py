"""An apply driver killed (SIGKILL) half-way, then run again, ends with the files and records of an
uninterrupted run; no input is ever left half-written and no temp file stays behind."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc

from watershed.graph.protection import ColumnKey, FilePlan, ProtectionPlan, TablePlan
from watershed.orc_crypto.codec.tail import read_tail
from watershed.orc_crypto.decrypt import read_table
from watershed.orc_crypto.keys.kms_client import KmsClient
from watershed.orc_crypto.protect import records
from watershed.orc_crypto.protect.spark_apply import apply_plan
from watershed.orc_crypto.protect.tails import file_protection

FILES = 32
ROWS = 3000
WANT = {"ssn": ColumnKey(key="pii", mask="nullify"), "email": ColumnKey(key="fin", mask="sha256")}
REPO = Path(__file__).resolve().parents[2]


def _write_files(directory: Path) -> list[Path]:
    paths = []
    for f in range(FILES):
        part = directory / f"dt=2024-01-{f % 4 + 1:02d}"
        part.mkdir(parents=True, exist_ok=True)
        base = f * ROWS
        table = pa.table(
            {
                "id": pa.array(range(base, base + ROWS), pa.int64()),
                "ssn": [f"{(base + i) * 7919 % 10**9:09d}" for i in range(ROWS)],
                "email": [None if i % 11 == 0 else f"user{base + i}@example.com" for i in range(ROWS)],
                "amount": pa.array([float(i) for i in range(ROWS)]),
            }
        )
        path = part / f"part-{f:03d}.orc"
        orc.write_table(table, path, stripe_size=16384, compression="snappy")
        paths.append(path)
    return paths


def _plan(table: str, directory: Path, files: list[Path], kms: str) -> ProtectionPlan:
    plans = [
        FilePlan(
            path=str(p), size=p.stat().st_size, mtime_ns=p.stat().st_mtime_ns, action="encrypt", columns=WANT
        )
        for p in files
    ]
    return ProtectionPlan(
        created_at=datetime.now(UTC).isoformat(),
        policy_digest="test",
        key_provider_path=kms,
        tables=[TablePlan(table=table, location=str(directory), files=plans)],
    )


def _state(directory: Path, table: str, store, provider) -> dict[str, tuple]:
    """Per file (relative path): its decrypted rows' digest, its encryption, and its record."""
    saved = records.files_of(store, [table])
    state = {}
    for path in sorted(directory.rglob("*.orc")):
        rows = read_table(path, provider).to_pylist()
        record = saved.get(str(path))
        assert record is not None, f"no record for {path}"
        assert record.sha256 == hashlib.sha256(path.read_bytes()).hexdigest(), path
        held = file_protection(read_tail(path))
        state[str(path.relative_to(directory))] = (
            hashlib.sha256(repr(rows).encode()).hexdigest(),
            {n: (k.key, k.mask, k.version) for n, k in held.items()},
            {n: (k.key, k.mask, k.version) for n, k in record.columns.items()},
        )
    return state


def _temps(directory: Path) -> list[Path]:
    return [p for p in directory.rglob(".*") if p.is_file() and p.name.endswith(".tmp")]


def test_killed_apply_resumes_to_the_clean_result(spark, kms_server, graph_store, falkordb_server, tmp_path):
    killed_dir, clean_dir = tmp_path / "killed", tmp_path / "clean"
    files = _write_files(killed_dir)
    shutil.copytree(killed_dir, clean_dir)
    clean_files = sorted(clean_dir.rglob("*.orc"))
    provider = KmsClient(kms_server.provider_path)

    # the reference: one uninterrupted apply (in this process)
    # apply rewrites only files under the location the graph records for the table
    for table, directory in (("db.clean", clean_dir), ("db.killed", killed_dir)):
        graph_store.execute(
            "MERGE (t:Table {id: $id}) SET t.location = $location", {"id": table, "location": str(directory)}
        )
    clean = apply_plan(
        _plan("db.clean", clean_dir, clean_files, kms_server.provider_path), graph_store, provider=provider
    )
    assert clean.files_done == FILES and not clean.errors

    # the same apply as a Spark driver of its own, killed once some files are recorded
    plan_file = tmp_path / "plan.json"
    plan = _plan("db.killed", killed_dir, files, kms_server.provider_path)
    plan_file.write_text(plan.model_dump_json())
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "WATERSHED_FALKORDB_HOST": falkordb_server.host,
        "WATERSHED_FALKORDB_PORT": str(falkordb_server.port),
        "WATERSHED_GRAPH_NAME": graph_store.graph_name,
    }
    command = [sys.executable, "-m", "watershed.orc_crypto.protect.spark_apply", "--plan", str(plan_file)]
    command += ["--master", "local[2]"]
    driver = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    threshold = random.randint(1, FILES // 3)
    deadline = time.monotonic() + 120
    recorded = 0
    try:
        while driver.poll() is None and time.monotonic() < deadline:
            recorded = len(records.files_of(graph_store, ["db.killed"]))
            if recorded >= threshold:
                os.kill(driver.pid, signal.SIGKILL)
                break
            time.sleep(0.02)
        driver.wait(timeout=30)
    finally:
        # the driver's JVM and Python workers end when it does; make sure before looking at files
        try:
            os.killpg(driver.pid, 0)
            time.sleep(3)
            os.killpg(driver.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert driver.returncode == -signal.SIGKILL, (driver.returncode, driver.stderr.read()[-3000:])
    assert threshold <= recorded < FILES

    # whatever the kill interrupted, every input is whole: the original plaintext or fully encrypted
    for path in files:
        tail = read_tail(path)
        assert {n: (k.key, k.mask) for n, k in file_protection(tail).items()} in (
            {},
            {n: (k.key, k.mask) for n, k in WANT.items()},
        )
        read_table(path, provider)

    # run again (on the test session's Spark): it finishes the rest, leaves what was done
    again = apply_plan(plan, graph_store, spark=spark, kms=kms_server.provider_path)
    assert again.status == "done" and not again.errors and not again.skipped, again
    assert again.files_done + again.files_unchanged == FILES
    assert again.files_unchanged >= recorded
    assert _temps(killed_dir) == []
    assert _state(killed_dir, "db.killed", graph_store, provider) == _state(
        clean_dir, "db.clean", graph_store, provider
    )
    provider.close()
