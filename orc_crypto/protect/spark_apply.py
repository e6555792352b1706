"""Apply a protection plan: each table's DDL through Spark SQL, then its files rewritten on Spark
executors (or in this process, without Spark), with every step recorded in the graph.

Resumable and idempotent: a file's record is saved as soon as the partition that rewrote it comes
back, and a file whose tail already holds what the plan asks is left alone, so an apply killed
half-way and run again finishes with the files and records of an uninterrupted run, and a second
apply of the same plan writes nothing. A file that fails is recorded with its error and the rest
go on; a file that changed since the plan is reported and never clobbered.

Run as `spark-submit .../spark_apply.py --plan plan.json --kms kms://http@HOST:PORT/kms` (or
`python -m watershed.orc_crypto.protect.spark_apply ...`): the graph comes from the usual
WATERSHED_* settings, executors need the `watershed` package (installed, or `--py-files`) and the
KMS delegation token (HADOOP_TOKEN_FILE_LOCATION, e.g. through `spark.executorEnv`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from watershed.graph.errors import WatershedError
from watershed.graph.protection import (
    MAX_RUN_PROBLEMS,
    FilePlan,
    FileProblem,
    ProtectedFile,
    ProtectionPlan,
    ProtectionRun,
    TablePlan,
    TableProtection,
)
from watershed.graph.store import GraphStore
from watershed.orc_crypto.errors import OrcCryptoError
from watershed.orc_crypto.keys.base import KeyProvider
from watershed.orc_crypto.protect import records
from watershed.orc_crypto.protect.apply import FileOutcome, protect_file, rewrap_recorded_file
from watershed.orc_crypto.protect.ddl import alter_table_ddl, unset_table_ddl
from watershed.orc_crypto.protect.plan import RECORDED_TABLES, local_path, read_file_state, walk_files

#: files per Spark task at most: results (and their records) come back partition by partition
FILES_PER_PARTITION = 8

#: progress(files finished, files planned)
Progress = Callable[[int, int], None]


#: where the graph says a table's files are: a plan's own `location` is not trusted
TABLE_LOCATION = "MATCH (t:Table {id: $id}) RETURN t.location"


class ApplyError(WatershedError, RuntimeError):
    """The apply could not run at all (no key provider, a plan file that does not read, a plan
    whose DDL is not what the planner makes)."""


@dataclass(frozen=True)
class ProviderSettings:
    """How an executor reaches the KMS (sent to executors: no secret in it, only where the
    token file is)."""

    kms_uri: str
    token_file: str | None = None

    def build(self) -> KeyProvider:
        from watershed.orc_crypto.keys.kms_client import KmsClient

        return KmsClient(self.kms_uri, token_file=Path(self.token_file) if self.token_file else None)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_run_id() -> str:
    return f"protect-{datetime.now(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(4)}"


def _apply_items(items: Iterable[str], provider: KeyProvider, run: str) -> Iterator[str]:
    """Each item's work, its outcome as a JSON line: the body of one Spark task. An item is
    ["apply", table, FilePlan, known record or None] or ["rewrap", table, record, None]."""
    for item in items:
        kind, table, payload, known_json = json.loads(item)
        if kind == "rewrap":
            outcome = rewrap_recorded_file(ProtectedFile.model_validate_json(payload), provider, run=run)
        else:
            known = ProtectedFile.model_validate_json(known_json) if known_json else None
            plan = FilePlan.model_validate_json(payload)
            outcome = protect_file(plan, provider, run=run, table=table, known=known)
        yield json.dumps(
            {
                "status": outcome.status,
                "path": outcome.path,
                "table": outcome.table,
                "record": outcome.record.model_dump(mode="json") if outcome.record else None,
                "problem": outcome.problem.model_dump(mode="json") if outcome.problem else None,
                "bytes": outcome.bytes_written,
            }
        )


def _outcome(line: str) -> FileOutcome:
    body = json.loads(line)
    return FileOutcome(
        status=body["status"],
        path=body["path"],
        table=body["table"],
        record=ProtectedFile.model_validate(body["record"]) if body["record"] else None,
        problem=FileProblem.model_validate(body["problem"]) if body["problem"] else None,
        bytes_written=body["bytes"],
    )


def _partition_task(settings: ProviderSettings, run: str):
    """The function each Spark task runs over its partition (builds its own KMS client)."""

    def task(items: Iterable[str]) -> Iterator[str]:
        provider = settings.build()
        try:
            yield from _apply_items(items, provider, run)
        finally:
            close = getattr(provider, "close", None)
            if close:
                close()

    return task


class _Tally:
    """The run record, updated from the driver's threads as partitions come back."""

    def __init__(self, store: GraphStore, run: ProtectionRun, total: int, progress: Progress | None) -> None:
        self.store, self.run, self.total, self.progress = store, run, total, progress
        self.finished = 0
        self.lock = threading.Lock()
        self.started = time.monotonic()

    def add(self, outcomes: list[FileOutcome]) -> None:
        saved = [o.record for o in outcomes if o.record is not None]
        with self.lock:
            if saved:
                records.save_files(self.store, saved)
            for outcome in outcomes:
                if outcome.status == "done":
                    self.run.files_done += 1
                    self.run.bytes_rewritten += outcome.bytes_written
                elif outcome.status == "unchanged":
                    self.run.files_unchanged += 1
                elif outcome.status == "skipped" and outcome.problem:
                    if len(self.run.skipped) < MAX_RUN_PROBLEMS:
                        self.run.skipped.append(outcome.problem)
                    else:
                        self.run.more_skipped += 1
                elif outcome.problem:
                    if len(self.run.errors) < MAX_RUN_PROBLEMS:
                        self.run.errors.append(outcome.problem)
                    else:
                        self.run.more_errors += 1
            self.finished += len(outcomes)
            self.run.seconds = round(time.monotonic() - self.started, 3)
            records.save_run(self.store, self.run)
            if self.progress:
                self.progress(self.finished, self.total)


def _run_ddl(plan: ProtectionPlan, store: GraphStore, spark, run: ProtectionRun) -> dict[str, str]:
    """Each table's DDL through Spark SQL, unless its record says that same DDL already ran; the
    tables whose DDL failed on Spark, with the failure."""
    failed: dict[str, str] = {}
    for table in plan.tables:
        if not table.ddl:
            continue
        recorded = records.table_protection(store, table.table)
        if recorded is not None and recorded.ddl == table.ddl:
            continue
        if spark is None:
            run.errors.append(
                FileProblem(path=table.table, table=table.table, error="DDL not run: no Spark session")
            )
            continue
        try:
            for statement in table.ddl:
                spark.sql(statement)
        except Exception as exc:  # Spark's AnalysisException, Py4J errors: recorded, the files go on
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            run.errors.append(FileProblem(path=table.table, table=table.table, error=f"DDL failed: {first}"))
            failed[table.table] = first
            continue
        records.save_table(store, _table_record(table, run.id))
    return failed


def _table_record(table: TablePlan, run: str) -> TableProtection:
    """What the table's options now protect: the plan's target, every protected column (the
    changes alone would drop the unchanged ones, and the next plan would set the DDL again)."""
    columns = dict(table.target)
    if not columns and any(not _is_unset(statement) for statement in table.ddl):
        # a plan written before TablePlan.target existed: only its changes say what it wants
        columns = {
            change.name: change.want
            for change in table.columns
            if change.want is not None and change.action in ("encrypt", "reencrypt", "keep")
        }
    return TableProtection(table=table.table, columns=columns, ddl=table.ddl, at=_now(), run=run)


def _is_unset(statement: str) -> bool:
    return " UNSET TBLPROPERTIES " in statement


# ------------------------------------------------------------------ checking a plan file


def check_ddl(plan: ProtectionPlan) -> None:
    """ApplyError unless every table's DDL is what the planner makes from its target and the plan's
    key provider path: a plan file is edited text, and its statements run on Spark as they are."""
    for table in plan.tables:
        if table.target:
            expected = alter_table_ddl(table.table, table.target, plan.key_provider_path)
        else:
            expected = [unset_table_ddl(table.table)]
        for statement in table.ddl:
            if statement in expected:
                continue
            if statement.lstrip().upper().startswith("CREATE"):
                raise ApplyError(
                    f"plan for table {table.table} has a CREATE TABLE statement: apply runs only the "
                    "ALTER TABLE statements the planner makes; plan without --create"
                )
            raise ApplyError(
                f"plan for table {table.table} has a DDL statement that is not the one its target "
                "protection makes: plan again (without --create) and apply that plan unedited"
            )


def _table_root(store: GraphStore, table: str) -> str | None:
    """The real path of the table's location as the graph records it (None: none, or not local)."""
    rows = store.read(TABLE_LOCATION, {"id": table})
    location = rows[0][0] if rows else None
    root = local_path(location) if location else None
    return os.path.realpath(root) if root is not None else None


def _outside(path: str, root: str | None) -> bool:
    if root is None:
        return True
    real = os.path.realpath(path)
    return os.path.commonpath([real, root]) != root or real == root


def _misplaced(plan: ProtectionPlan, store: GraphStore) -> list[FileOutcome]:
    """The planned files that do not lie under their table's location: errors, never rewritten."""
    found: list[FileOutcome] = []
    for table in plan.tables:
        if not table.files:
            continue
        root = _table_root(store, table.table)
        for file in table.files:
            if _outside(file.path, root):
                where = "the graph records no local location for it" if root is None else root
                error = f"{file.path}: not under the table's location ({where}): not rewritten"
                problem = FileProblem(path=file.path, table=table.table, error=error)
                found.append(FileOutcome("failed", file.path, table.table, problem=problem))
    return found


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def apply_plan(
    plan: ProtectionPlan,
    store: GraphStore,
    *,
    spark=None,
    kms: str | None = None,
    token_file: str | None = None,
    provider: KeyProvider | None = None,
    progress: Progress | None = None,
    run_id: str | None = None,
) -> ProtectionRun:
    """Apply `plan` and return its run record (also saved in the graph as it goes).

    With `spark` (a SparkSession) the DDL runs through `spark.sql` and the files are rewritten
    by executors, each building a KMS client for `kms` (default: the plan's key provider path);
    without it, the files are rewritten here with `provider` (or a client for `kms`) and the
    DDL is reported as not run.
    """
    kms = kms or plan.key_provider_path
    if spark is not None and not kms:
        raise ApplyError("applying on Spark needs the KMS URI (--kms, or the policy's key_provider_path)")
    if spark is None and provider is None and not kms:
        raise ApplyError("no key provider: give the KMS URI (--kms) or the policy's key_provider_path")
    check_ddl(plan)
    settings = ProviderSettings(kms, token_file) if kms else None
    run = ProtectionRun(
        id=run_id or new_run_id(),
        started_at=_now(),
        policy_digest=plan.policy_digest,
        tables=len(plan.tables),
    )
    misplaced = _misplaced(plan, store)
    refused = {outcome.path for outcome in misplaced}
    records.save_run(store, run)
    known = records.files_of(store, [table.table for table in plan.tables])
    items = [
        _item(table.table, file, known.get(file.path))
        for table in plan.tables
        for file in sorted(table.files, key=lambda f: f.path)
        if file.path not in refused
    ]
    return _run_items(
        items,
        store,
        run,
        spark=spark,
        settings=settings,
        provider=provider,
        progress=progress,
        before=lambda: _run_ddl(plan, store, spark, run),
        refused=misplaced,
    )


def _run_items(
    items: list[str],
    store: GraphStore,
    run: ProtectionRun,
    *,
    spark,
    settings: ProviderSettings | None,
    provider: KeyProvider | None,
    progress: Progress | None,
    before: Callable[[], dict[str, str]] | None = None,
    refused: list[FileOutcome] | None = None,
) -> ProtectionRun:
    """Run the items on Spark (or here), recording as results come back; the run ends `done`,
    or `failed` (and the error raised) when the job itself broke. `before` runs first and names
    the tables whose files must not be rewritten (their DDL failed); `refused` are files reported
    as they are, never run."""
    refused = list(refused or [])
    run.files_planned = len(items) + len(refused)
    tally = _Tally(store, run, run.files_planned, progress)
    try:
        if refused:
            tally.add(refused)
        if before is not None:
            failed = before()
            records.save_run(store, run)
            if failed:
                items = _hold_back(items, failed, tally)
        if spark is None:
            own = provider is None
            local = provider or settings.build()
            try:
                for chunk in _chunks(items, FILES_PER_PARTITION):
                    tally.add([_outcome(line) for line in _apply_items(chunk, local, run.id)])
            finally:
                if own and hasattr(local, "close"):
                    local.close()
        elif items:
            _apply_on_spark(spark, items, settings, run.id, tally)
    except BaseException:
        run.status = "failed"
        run.finished_at = _now()
        run.seconds = round(time.monotonic() - tally.started, 3)
        records.save_run(store, run)
        raise
    run.status = "done"
    run.finished_at = _now()
    run.seconds = round(time.monotonic() - tally.started, 3)
    records.save_run(store, run)
    return run


def _hold_back(items: list[str], failed: dict[str, str], tally: _Tally) -> list[str]:
    """Items of the tables whose DDL failed are reported skipped, not run: Spark would go on writing
    their new files in plaintext next to encrypted ones."""
    kept: list[str] = []
    held: list[FileOutcome] = []
    for item in items:
        _kind, table, payload, _known = json.loads(item)
        if table not in failed:
            kept.append(item)
            continue
        path = FilePlan.model_validate_json(payload).path
        error = f"not rewritten: the table's DDL failed ({failed[table]})"
        held.append(
            FileOutcome("skipped", path, table, problem=FileProblem(path=path, table=table, error=error))
        )
    for start in range(0, len(held), FILES_PER_PARTITION * 8):
        tally.add(held[start : start + FILES_PER_PARTITION * 8])
    return kept


def _item(table: str, file: FilePlan, known: ProtectedFile | None) -> str:
    return json.dumps(["apply", table, file.model_dump_json(), known.model_dump_json() if known else None])


#: the tables that have protected files (rewrap's default)
PROTECTED_TABLES = "MATCH (f:ProtectedFile) RETURN DISTINCT f.table ORDER BY f.table"


def rewrap_files(
    store: GraphStore,
    *,
    tables: list[str] | None = None,
    spark=None,
    kms: str | None = None,
    token_file: str | None = None,
    provider: KeyProvider | None = None,
    progress: Progress | None = None,
    run_id: str | None = None,
) -> ProtectionRun:
    """After `watershed kms roll KEY`: every protected file (of `tables`, default all) re-keyed to
    its master keys' current versions, only its encrypted bytes rewritten; records renewed.
    Files already at the current versions are left alone. Spark or not, as `apply_plan`."""
    if spark is not None and not kms:
        raise ApplyError("rewrapping on Spark needs the KMS URI (--kms)")
    if spark is None and provider is None and not kms:
        raise ApplyError("no key provider: give the KMS URI (--kms)")
    if tables is None:
        found = {row[0] for row in store.read(PROTECTED_TABLES, {})}
        found.update(row[0] for row in store.read(RECORDED_TABLES, {}))
        tables = sorted(name for name in found if name)
    known = records.files_of(store, tables)
    run = ProtectionRun(id=run_id or new_run_id(), kind="rewrap", started_at=_now(), tables=len(tables))
    records.save_run(store, run)
    for table in tables:
        for record in _unrecorded(store, table, known):
            known[record.path] = record
    items = [
        json.dumps(["rewrap", record.table, record.model_dump_json(), None])
        for _, record in sorted(known.items())
    ]
    settings = ProviderSettings(kms, token_file) if kms else None
    return _run_items(items, store, run, spark=spark, settings=settings, provider=provider, progress=progress)


def _unrecorded(store: GraphStore, table: str, known: dict[str, ProtectedFile]) -> list[ProtectedFile]:
    """Encrypted ORC files under the table's location that have no record (a driver killed after a
    swap but before its partition's records were saved; files Spark wrote after the DDL), each as a
    record built from its tail. Its mtime is unknown (-1), so rewrap always renews the record from
    the file it finds, checksum included."""
    root = _table_root(store, table)
    if root is None or not os.path.isdir(root):
        return []
    found: list[ProtectedFile] = []
    for path in walk_files(Path(root)):
        if str(path) in known:
            continue
        try:
            state = read_file_state(path, Path(root))
        except (OrcCryptoError, OSError):
            continue  # not an ORC file (or gone): nothing of ours to rewrap
        if state.current:
            found.append(
                ProtectedFile(
                    path=state.path,
                    table=table,
                    columns=state.current,
                    size=state.size,
                    mtime_ns=-1,
                    sha256="",
                    at=_now(),
                    run="",
                )
            )
    return found


def _apply_on_spark(spark, items: list[str], settings: ProviderSettings, run: str, tally: _Tally) -> None:
    """One small Spark job per partition, as many at a time as the cluster runs tasks: each job's
    results (and records) come back as soon as it ends, not when the last file is done."""
    context = spark.sparkContext
    parallelism = max(1, context.defaultParallelism)
    per_partition = max(1, min(FILES_PER_PARTITION, math.ceil(len(items) / (parallelism * 4))))
    chunks = _chunks(items, per_partition)
    # one chunk per partition: a list of lists parallelized into as many slices as it has items
    rdd = context.parallelize(chunks, len(chunks)).flatMap(lambda chunk: chunk)
    partitions = rdd.mapPartitions(_partition_task(settings, run))

    def one(index: int) -> None:
        tally.add([_outcome(line) for line in context.runJob(partitions, lambda lines: lines, [index])])

    with ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="protect-apply") as pool:
        for future in [pool.submit(one, index) for index in range(len(chunks))]:
            future.result()


# ------------------------------------------------------------------ spark-submit entry


def main(argv: list[str] | None = None) -> int:
    """spark-submit entry: apply a plan file, print the run record as JSON."""
    parser = argparse.ArgumentParser(prog="watershed-protect-apply", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--plan", required=True, type=Path, help="the plan JSON (`watershed protect plan -f json`)"
    )
    parser.add_argument(
        "--kms", help="KMS URI kms://http@HOST:PORT/kms (default: the plan's key provider path)"
    )
    parser.add_argument("--token-file", help="the KMS delegation token file executors read")
    parser.add_argument("--master", help="Spark master (spark-submit sets it; default local[*])")
    parser.add_argument(
        "--local", action="store_true", help="rewrite the files in this process, without Spark"
    )
    parser.add_argument(
        "--run-id", help="the id of the run record (default: a new one); the nightly run names its own"
    )
    args = parser.parse_args(argv)
    try:
        plan = ProtectionPlan.model_validate_json(args.plan.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"error: cannot read plan {args.plan}: {exc}", file=sys.stderr)
        return 1
    from watershed.graph.backends import open_store

    store = open_store()
    spark = None
    try:
        if not args.local:
            from pyspark.sql import SparkSession

            builder = SparkSession.builder.appName("watershed protect apply")
            if args.master:
                builder = builder.master(args.master)
            spark = builder.getOrCreate()
        run = apply_plan(
            plan, store, spark=spark, kms=args.kms, token_file=args.token_file, run_id=args.run_id
        )
    except ApplyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if spark is not None:
            spark.stop()
        store.close()
    print(run.model_dump_json(indent=2))
    return 0 if not run.errors else 1


if __name__ == "__main__":
    sys.exit(main())
