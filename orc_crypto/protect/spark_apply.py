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
    FilePlan,
    FileProblem,
    ProtectedFile,
    ProtectionPlan,
    ProtectionRun,
    TablePlan,
    TableProtection,
)
from watershed.graph.store import GraphStore
from watershed.orc_crypto.keys.base import KeyProvider
from watershed.orc_crypto.protect import records
from watershed.orc_crypto.protect.apply import FileOutcome, protect_file, rewrap_recorded_file

#: files per Spark task at most: results (and their records) come back partition by partition
FILES_PER_PARTITION = 8

#: progress(files finished, files planned)
Progress = Callable[[int, int], None]


class ApplyError(WatershedError, RuntimeError):
    """The apply could not run at all (no key provider, a plan file that does not read)."""


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
                    self.run.skipped.append(outcome.problem)
                elif outcome.problem:
                    self.run.errors.append(outcome.problem)
            self.finished += len(outcomes)
            self.run.seconds = round(time.monotonic() - self.started, 3)
            records.save_run(self.store, self.run)
            if self.progress:
                self.progress(self.finished, self.total)


def _run_ddl(plan: ProtectionPlan, store: GraphStore, spark, run: ProtectionRun) -> None:
    """Each table's DDL through Spark SQL, unless its record says that same DDL already ran."""
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
            continue
        records.save_table(store, _table_record(table, run.id))


def _table_record(table: TablePlan, run: str) -> TableProtection:
    columns = {
        change.name: change.want
        for change in table.columns
        if change.want is not None and change.action in ("encrypt", "reencrypt", "keep")
    }
    return TableProtection(table=table.table, columns=columns, ddl=table.ddl, at=_now(), run=run)


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
    settings = ProviderSettings(kms, token_file) if kms else None
    run = ProtectionRun(
        id=run_id or new_run_id(),
        started_at=_now(),
        policy_digest=plan.policy_digest,
        tables=len(plan.tables),
    )
    records.save_run(store, run)
    known = records.files_of(store, [table.table for table in plan.tables])
    items = [
        _item(table.table, file, known.get(file.path))
        for table in plan.tables
        for file in sorted(table.files, key=lambda f: f.path)
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
    before: Callable[[], None] | None = None,
) -> ProtectionRun:
    """Run the items on Spark (or here), recording as results come back; the run ends `done`,
    or `failed` (and the error raised) when the job itself broke."""
    run.files_planned = len(items)
    tally = _Tally(store, run, len(items), progress)
    try:
        if before is not None:
            before()
            records.save_run(store, run)
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
        tables = [row[0] for row in store.read(PROTECTED_TABLES, {})]
    known = records.files_of(store, tables)
    run = ProtectionRun(id=run_id or new_run_id(), kind="rewrap", started_at=_now(), tables=len(tables))
    records.save_run(store, run)
    items = [
        json.dumps(["rewrap", record.table, record.model_dump_json(), None])
        for _, record in sorted(known.items())
    ]
    settings = ProviderSettings(kms, token_file) if kms else None
    return _run_items(items, store, run, spark=spark, settings=settings, provider=provider, progress=progress)


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
        run = apply_plan(plan, store, spark=spark, kms=args.kms, token_file=args.token_file)
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
