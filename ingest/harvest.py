"""The Spark harvest job: extract every task's lineage in the executors, load it into the graph.

    spark-submit [--master M] ingest/harvest.py --tasks TASKS [--source NAME] [--catalog catalog.json]
        [--out DIR] [--graph falkordb|neo4j|none] [--no-prune | --prune-force]
    watershed harvest --tasks TASKS ...

Both entry points take the graph backend, the Spark master and the rest from
the same settings: the graph is WATERSHED_BACKEND's (unless `--graph` names
one), `--out` defaults to DATA_DIR/harvest, and the master is `--master`,
else WATERSHED_SPARK_MASTER, else local[*] -- except that a job launched by
spark-submit runs on the master spark-submit gave it (it never sets its own).

TASKS is a directory of .sql files, a .jsonl/.parquet export, or (with
`--tasks-table`) a Spark/Hive table with the export's columns. The catalog is
broadcast; extraction runs in `mapPartitions` and returns one row per task
(its lineage as compressed JSON). The driver streams the rows back
(`toLocalIterator`), loads them into the graph in batches, and writes in a
directory of its own under OUT `errors.jsonl` (task id, statement index or
source, message: bad SQL and bad records never stop the harvest) and
`run.json` (run id, status, inputs, counts, what pruning did, duration). A
source that cannot be read fails before that directory exists; a run that
fails later leaves a run.json saying `"status": "failed"` and why; run.json
also names the Spark master the run used.

The driver's memory is bounded by settings (ingest/settings.py), not by the warehouse: the
catalog goes to the graph `harvest_catalog_tables` tables at a time, a file corpus is split into
Spark partitions of at most `harvest_partition_tasks` tasks (the driver holds two partitions'
rows), at most `batch_size` tasks wait to be loaded, and the store's memory of which columns the
graph has is dropped past `harvest_known_columns`. What grows with the corpus is a few hundred
bytes a task (its packed text until it loads, its id) and the catalog the caller loaded
(`Catalog.load` keeps one object per distinct column). A task table's partitions are the table's.

A task id that the corpus defines more than once is an error naming every
place (file:line, .sql file, Parquet row, or the table, where Spark finds
them before extraction): none of its records is loaded and the graph keeps
the version it has, so every re-harvest gives the same graph and errors.

Every task is loaded as the run's source (`--source NAME`, default
`files:<absolute path>` of TASKS or `table:<name>` of the table: the same corpus
always gives the same name), and marked seen at the run's start (`seen_at`). A
task another source loaded last is taken over (run.json's `taken_over`).

After loading, the source's tasks the graph has and the corpus lacks are pruned
(never another source's; tasks loaded before sources existed are adopted by the
first corpus that defines one of them: `_adopt`), unless the corpus is empty or
pruning would remove more than `prune_max_fraction` (default 0.5) of the
source's tasks: then nothing is removed, the lineage loaded stays, the output
and run.json say how many tasks (and the first ids) would have gone, and the
exit status is 1 (`--prune-force` removes them).
Exit status: 0 done, 1 bad input, failure or refused prune, 2 usage.

On a cluster, ship the packages with `--py-files watershed.zip` or install
the wheel on the nodes.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TypeVar

import cramjam
from pydantic import BaseModel

from watershed.graph.catalog import Catalog, CatalogError
from watershed.graph.errors import WatershedError
from watershed.graph.lineage import SqlTask, StatementProblem, TaskLineage
from watershed.graph.store import GraphStore
from watershed.ingest.limits import current_limits
from watershed.ingest.settings import IngestSettings
from watershed.ingest.sources import (
    DuplicateTask,
    SourceProblem,
    TaskSourceError,
    check_task_source,
    read_task_source,
)

#: what an executor sends back for each record: ("lineage", task id, the task's packed JSON or
#: b"" when the driver has the task already, the lineage's packed JSON, its errors' JSON or ""
#: when it has none) or ("problem", task id or None, message); packed: `pack_model`
ExtractedRow = tuple[str, str | None, bytes, bytes, str] | tuple[str, str | None, str]

M = TypeVar("M", bound=BaseModel)

#: how many tables an executor's catalog keeps parsed at once (the rest stay JSON text): about
#: 5 KB each with the column sets the extractor asks for (30 columns, bench/harvest_bench.py's
#: warehouse), so about 90 MB at most
WORKER_PARSED_TABLES = 16384

#: how many tasks an executor extracts between two settlings of its heap (`_settle_worker_heap`)
SETTLE_EVERY_TASKS = 50

#: an executor's catalog, built once per worker process from the broadcast it came from
_catalog_cache: tuple[object, Catalog] | None = None


def pack_model(model: BaseModel) -> bytes:
    """A task or lineage as an executor sends it: its JSON without the fields that hold their
    defaults, compressed (an LZ4 block).

    Spark's JVM copies every byte of a row (from the worker, into its cache, out to the driver).
    bench/harvest_bench.py's lineages average seven kilobytes of JSON and compress eightfold
    with zlib: per job of 4,000 tasks the JVM's CPU fell from about 0.6 s to 0.4 s and the
    driver's streaming by half, for 0.1 s of compression in the workers. LZ4 does it in 0.015 s
    for a sevenfold cut. Without the defaults the driver also decodes a fifth faster.
    """
    return bytes(cramjam.lz4.compress_block(model.model_dump_json(exclude_defaults=True).encode()))


def unpack_model(model: type[M], packed: bytes) -> M:
    """`pack_model`'s bytes read back as `model` (pydantic reads the JSON directly, no dict in between)."""
    return model.model_validate_json(bytes(cramjam.lz4.decompress_block(packed)))


def _worker_catalog(packed: dict | None) -> Catalog:
    """The catalog of `packed` (`Catalog.packed`), built once per Python worker: Spark reuses the
    worker for the job's later partitions. Tables are parsed as tasks name them, a bounded number
    kept: a worker never holds a warehouse-sized catalog as objects."""
    global _catalog_cache
    if not packed:
        return Catalog()
    if _catalog_cache is None or _catalog_cache[0] is not packed:
        # keyed by the broadcast value itself (kept alive here), so a new harvest's catalog never
        # reuses an old one's
        _catalog_cache = (packed, Catalog.unpacked(packed, parsed_tables=WORKER_PARSED_TABLES))
    return _catalog_cache[1]


def _extract_partition(
    rows: Iterator,
    catalog_broadcast,
    settings_data: dict,
    send_task: bool = True,
    limits_data: dict | None = None,
) -> Iterator[ExtractedRow]:
    """Runs in an executor: one row (`ExtractedRow`) per record, never an exception for a bad one.

    The extraction settings are the driver's (`settings_data`, its IngestSettings dumped): an
    executor on another machine has neither the driver's environment nor its settings file, and
    one harvest must read every task the same way. So are the analysis limits (`limits_data`):
    a task beyond them, or whose analysis outlasts `analysis_task_seconds`, comes back with
    that as its error.

    A record is a task, or a dict or Spark row of one; one that is no valid task (a field of the
    wrong type) comes back as a `problem`, skipped like a bad line of an export; a task whose
    extraction fails comes back with the failure as its error and is loaded without edges.
    Each result is serialised once (`pack_model`), its errors apart as JSON (the driver counts and
    records them without decoding the lineage, which it decodes only for a task it loads), and
    the task only when the driver lacks it (`send_task`: a table's rows; the driver read a file
    source itself).
    """
    from pydantic import ValidationError

    from watershed.ingest.extract import extract_lineage
    from watershed.ingest.limits import AnalysisLimits, analysis_limits
    from watershed.ingest.sources import describe_error, record_task_id, task_from_record

    catalog = _worker_catalog(catalog_broadcast.value if catalog_broadcast is not None else None)
    # validated on the driver; constructing them here must not read this machine's sources
    settings = IngestSettings.model_construct(**settings_data)
    limits = AnalysisLimits.model_construct(**limits_data) if limits_data else None
    for index, row in enumerate(rows, start=1):
        if index % SETTLE_EVERY_TASKS == 0:
            # between two tasks, where no parsed tree is alive to be frozen with the tables
            _settle_worker_heap()
        if isinstance(row, SqlTask):
            task = row
        elif isinstance(row, bytes):
            # a task the driver read itself, as `pack_model` packed it
            task = unpack_model(SqlTask, row)
        else:
            record = row.asDict(recursive=True) if hasattr(row, "asDict") else dict(row)
            try:
                task = task_from_record(record)
            except (ValueError, ValidationError) as exc:
                yield ("problem", record_task_id(record), describe_error(exc))
                continue
        try:
            with analysis_limits(limits, deadline="analysis_task_seconds"):
                lineage = extract_lineage(task, catalog, settings)
        except Exception as exc:
            lineage = TaskLineage(
                task_id=task.task_id,
                dialect=task.dialect,
                errors=[
                    StatementProblem(
                        task_id=task.task_id, statement_index=0, message=f"{type(exc).__name__}: {exc}"
                    )
                ],
            )
        yield (
            "lineage",
            task.task_id,
            pack_model(task) if send_task else b"",
            pack_model(lineage),
            json.dumps([error.model_dump() for error in lineage.errors]) if lineage.errors else "",
        )
    _settle_worker_heap()


def _settle_worker_heap() -> None:
    """In a Spark worker, every few tasks and after a partition: one full collection, then
    freeze what survives.

    PySpark's daemon runs a full `gc.collect()` after every task, and Python runs its own full
    collections as the heap grows; each walked every long-lived object again -- mostly the
    catalog tables parsed so far, about three tracked objects per column -- which measured a
    tenth of a worker's CPU (bench/harvest_bench.py) after each partition, and within one, while
    a fresh catalog's tables were being parsed, a fifth of the extraction's time (twelve full
    collections per 2,000 tasks). Frozen objects are skipped by later collections and still
    freed by reference counting when the catalog's cache drops a table (tables hold no cycles);
    collecting first means no garbage is frozen, so each settling walks only what came since the
    last. Outside a Spark task (a test calling `_extract_partition` directly) the caller's heap
    is left alone.
    """
    # a Spark worker has imported pyspark already; nothing else needs to (it is an extra)
    pyspark = sys.modules.get("pyspark")
    if pyspark is None or pyspark.TaskContext.get() is None:
        return
    gc.collect()
    gc.freeze()


def _materialise(rdd) -> None:
    """Compute and cache every partition of `rdd` in parallel.

    The count runs on the JVM's side of the RDD: PySpark's own `count()` adds a second Python
    stage that unpickles every cached row again in another set of Python workers, which measured
    about 40% of the harvest's Python CPU (bench/harvest_bench.py).
    """
    java_rdd = getattr(rdd, "_jrdd", None)
    if java_rdd is None:
        rdd.count()
    else:
        java_rdd.count()


class HarvestError(WatershedError, RuntimeError):
    """The harvest cannot run: the message names the input (table, output directory) and why."""


@dataclass
class HarvestReport:
    run_id: str
    inputs: list[str]
    #: ok | prune-refused | failed
    status: str = "ok"
    error: str = ""
    tasks: int = 0
    tasks_with_errors: int = 0
    statement_errors: int = 0
    source_problems: list[SourceProblem] = field(default_factory=list)
    duplicates: list[DuplicateTask] = field(default_factory=list)
    loaded: int = 0
    unchanged: int = 0
    deleted: int = 0
    #: the source every task of the run was loaded as (`source_name`)
    source: str = ""
    #: tasks another source had loaded that this run took over, and the first of them
    taken_over: int = 0
    taken_over_first: list[str] = field(default_factory=list)
    #: tasks loaded before sources existed that this run adopted as its own (`_adopt`)
    adopted: int = 0
    #: done | nothing | off | skipped (records without a known id) | refused (the safety limit) | ""
    prune: str = ""
    prune_message: str = ""
    #: how many tasks a refused or skipped prune would have removed, and the first of them
    prune_would_remove: int = 0
    prune_first: list[str] = field(default_factory=list)
    extract_seconds: float = 0.0
    #: the driver's time streaming and decoding the executors' rows (loading excluded)
    decode_seconds: float = 0.0
    load_seconds: float = 0.0
    seconds: float = 0.0
    out_dir: str = ""
    #: the master of the Spark application that extracted the lineage
    spark_master: str = ""
    #: when the run began (UTC ISO): every task it loads or finds unchanged was seen then
    started_at: str = ""

    def summary(self) -> dict:
        """What run.json and the job's last output line hold."""
        return {
            "run_id": self.run_id,
            "status": self.status,
            **({"error": self.error} if self.error else {}),
            "inputs": self.inputs,
            "source": self.source,
            "tasks": self.tasks,
            "tasks_with_errors": self.tasks_with_errors,
            "statement_errors": self.statement_errors,
            "source_problems": len(self.source_problems),
            "duplicate_task_ids": len(self.duplicates),
            "loaded": self.loaded,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "taken_over": {"count": self.taken_over, "first": self.taken_over_first},
            "adopted": self.adopted,
            "prune": {
                "status": self.prune,
                "message": self.prune_message,
                "would_remove": self.prune_would_remove,
                "first": self.prune_first,
            },
            "extract_seconds": round(self.extract_seconds, 3),
            "decode_seconds": round(self.decode_seconds, 3),
            "load_seconds": round(self.load_seconds, 3),
            "seconds": round(self.seconds, 3),
            "out_dir": self.out_dir,
            "spark_master": self.spark_master,
            "started_at": self.started_at,
        }


#: how many task ids a prune message and run.json list
PRUNE_EXAMPLES = 10

#: the longest source name (a corpus's absolute path fits; a name is stored on every task)
SOURCE_MAX_CHARS = 512
#: the prefix of OpenLineage producers' sources (api/service/lineage_intake.py): never a harvest's
OPENLINEAGE_PREFIX = "openlineage:"


def default_source(tasks: str | Path | None, tasks_table: str | None) -> str:
    """A corpus's source name when none is given: the same corpus always gives the same name.

    `files:<absolute path>` for a directory of .sql files or an export file (the path as
    resolved, so a relative path and its absolute twin agree), `table:<name>` (lower case, as
    Spark and Hive read names) for a task table.
    """
    if tasks_table is not None:
        return f"table:{tasks_table.strip().lower()}"
    if tasks is None:
        raise HarvestError("a harvest needs --tasks or --tasks-table to name its source")
    return f"files:{Path(tasks).resolve()}"


def source_name(name: str | None, tasks: str | Path | None = None, tasks_table: str | None = None) -> str:
    """The checked source name of a harvest: `name` (`--source`), else `default_source`'s.

    A HarvestError names the input when it is blank, longer than SOURCE_MAX_CHARS, holds a
    character that does not print (a newline, a control character), or claims an OpenLineage
    producer's prefix (a harvest would then prune that producer's tasks).
    """
    given = name is not None
    text = name.strip() if given else default_source(tasks, tasks_table)
    what = f"--source {name!r}" if given else f"the source name {text!r} of {tasks_table or tasks}"
    if not text:
        raise HarvestError(f"{what}: a source name must not be blank")
    if len(text) > SOURCE_MAX_CHARS:
        hint = "" if given else " (name it with --source)"
        raise HarvestError(f"{what[:80]}...: longer than {SOURCE_MAX_CHARS} characters{hint}")
    if not text.isprintable():
        bad = next(c for c in text if not c.isprintable())
        hint = "" if given else " (name it with --source)"
        raise HarvestError(f"{what}: holds the character {bad!r}, which does not print{hint}")
    if text.startswith(OPENLINEAGE_PREFIX):
        raise HarvestError(f"{what}: {OPENLINEAGE_PREFIX}* names OpenLineage producers, not a harvest")
    return text


def check_out_dir(out_dir: str | Path) -> Path:
    """Fail before any work when run records cannot be written under `out_dir` (nothing is created)."""
    path = Path(out_dir)
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise HarvestError(f"--out {path}: {existing} is not a directory")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise HarvestError(f"--out {path}: cannot write run records in {existing} ({exc.strerror})") from None
    return path


def _make_run_dir(out_dir: Path, run_id: str) -> Path:
    out = out_dir / run_id
    try:
        out.mkdir(parents=True)
    except OSError as exc:
        raise HarvestError(f"--out {out_dir}: cannot create the run directory ({exc.strerror})") from None
    return out


def _table_corpus(spark, table: str) -> tuple[object, list[DuplicateTask]]:
    """The task table without the ids it holds more than once, and those ids (found by Spark, before extraction)."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    try:
        frame = spark.table(table)
    except AnalysisException as exc:
        raise HarvestError(f"--tasks-table {table}: {str(exc).splitlines()[0]}") from None
    missing = [name for name in ("task_id", "sql") if name not in frame.columns]
    if missing:
        raise HarvestError(
            f"--tasks-table {table}: no column {', '.join(missing)} (it has {', '.join(frame.columns)})"
        )
    task_id = F.trim(F.col("task_id").cast("string"))
    repeated = (
        frame.where(task_id.isNotNull() & (task_id != ""))
        .groupBy(task_id.alias("_duplicate_id"))
        .count()
        .where(F.col("count") > 1)
    )
    duplicates = [
        DuplicateTask(row["_duplicate_id"], row["count"], (f"table {table}",))
        for row in repeated.orderBy("_duplicate_id").collect()
    ]
    if duplicates:
        frame = frame.join(F.broadcast(repeated), task_id == repeated["_duplicate_id"], "left_anti")
    return frame, duplicates


def run_harvest(
    spark,
    *,
    tasks: str | None = None,
    tasks_table: str | None = None,
    catalog: Catalog | None = None,
    store=None,
    out_dir: str | Path = "var/harvest",
    batch_size: int = 1000,
    prune: bool = True,
    prune_force: bool = False,
    prune_max_fraction: float | None = None,
    progress: Callable[[str], None] = print,
    settings: IngestSettings | None = None,
    source: str | None = None,
) -> HarvestReport:
    """Harvest a task corpus as the source `source` (else the corpus's `default_source`); with
    `prune`, tasks of that source the graph has but the corpus lacks are deleted.

    Every task loaded, or found unchanged, is marked with the source and the run's start time
    (`seen_at`); a task another source had loaded is taken over (counted in the report). Only
    the source's own tasks are ever pruned, and those loaded before sources existed when this
    run adopts them (`_adopt`). Pruning refuses (the report's `status` is `prune-refused`,
    nothing is deleted, the lineage loaded stays) when the corpus is empty or would remove more
    than `prune_max_fraction` of the source's tasks (the setting `prune_max_fraction`, 50% by
    default), unless `prune_force`. Ids the corpus defines more than once, and bad records whose
    id is known, are never pruned.

    A source that cannot be read raises `TaskSourceError` before anything is
    written; an unusable `--out` or task table raises `HarvestError`. A run
    that fails later writes `run.json` with `status: failed` and the error,
    then raises the original exception (with a note naming the run record).
    `settings` (else IngestSettings read here, on the driver) are the extraction settings every
    executor uses.
    """
    began = time.monotonic()
    run_id = f"harvest-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    report = HarvestReport(
        run_id=run_id,
        inputs=[tasks or f"table:{tasks_table}"],
        spark_master=spark.sparkContext.master,
        source=source_name(source, tasks, tasks_table),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    settings = settings or IngestSettings()
    if prune_max_fraction is None:
        prune_max_fraction = settings.prune_max_fraction

    # The corpus first: a source that cannot be read fails before a run directory exists.
    # The tasks the driver read itself (a file source), packed: the executors need not send them back.
    known: dict[str, bytes] | None = None
    if tasks_table:
        frame, report.duplicates = _table_corpus(spark, tasks_table)
        rdd = frame.rdd
    else:
        known, report.duplicates = _read_corpus(tasks, report.source_problems)
        # a partition's rows are what the driver holds (two at a time): at most
        # `harvest_partition_tasks` tasks each, and enough partitions to keep every core busy
        slices = max(
            1,
            min(len(known) // 50 + 1, spark.sparkContext.defaultParallelism * 4),
            -(-len(known) // settings.harvest_partition_tasks),
        )
        rdd = spark.sparkContext.parallelize(list(known.values()), slices)
    out = _make_run_dir(Path(out_dir), run_id)
    report.out_dir = str(out)
    try:
        # The safety limit is a share of what the source had before this run loaded anything.
        own_before: set[str] = set()
        sourceless_before: set[str] = set()
        if store is not None and prune:
            own_before = set(store.task_ids_of_source(report.source))
            sourceless_before = set(store.task_ids_of_source(None))
        seen = _extract_and_load(
            spark, rdd, out, catalog, settings, store, batch_size, report, progress, known
        )
        if store is not None and prune:
            adopting = _adopt(store, seen, sourceless_before, report, progress)
            tasks_before = len(own_before | sourceless_before) if adopting else len(own_before)
            _prune(store, seen, tasks_before, report, prune_force, prune_max_fraction, progress)
        else:
            report.prune = "off"
    except BaseException as exc:
        report.status = "failed"
        report.error = f"{type(exc).__name__}: {exc}".splitlines()[0]
        report.seconds = time.monotonic() - began
        _write_run_record(out, report)
        exc.add_note(f"harvest {run_id} failed; its run record: {out / 'run.json'}")
        raise
    report.seconds = time.monotonic() - began
    _write_run_record(out, report)
    if store is not None:
        from watershed.graph.model import HarvestRun

        store.record_run(
            HarvestRun(
                id=run_id,
                started_at=datetime.now(UTC).isoformat(),
                inputs=report.inputs,
                tasks=report.tasks,
                errors=report.tasks_with_errors,
                loaded=report.loaded,
                unchanged=report.unchanged,
                seconds=report.seconds,
            )
        )
    return report


def _read_corpus(tasks: str, problems: list[SourceProblem]) -> tuple[dict[str, bytes], list[DuplicateTask]]:
    """A file corpus's tasks by id, each packed (`pack_model`: a few hundred bytes where the task
    object is a few kilobytes), without the ids it defines more than once, and those ids with
    every place (as `split_duplicates`, which needs every task object at once)."""
    packed: dict[str, bytes] = {}
    first: dict[str, str] = {}
    places: dict[str, list[str]] = {}
    for item in read_task_source(tasks, problems):
        task_id = item.task.task_id
        if task_id in first:
            places.setdefault(task_id, [first[task_id]]).append(item.location)
            continue
        first[task_id] = item.location
        packed[task_id] = pack_model(item.task)
    for task_id in places:
        del packed[task_id]
    return packed, [DuplicateTask(task_id, len(where), tuple(where)) for task_id, where in places.items()]


def _write_run_record(out: Path, report: HarvestReport) -> None:
    (out / "run.json").write_text(json.dumps(report.summary(), indent=2) + "\n")


def _extract_and_load(
    spark,
    rdd,
    out: Path,
    catalog,
    settings: IngestSettings,
    store,
    batch_size,
    report,
    progress,
    known: dict[str, bytes] | None = None,
) -> set[str]:
    """Extract in the executors, stream the rows back, load them in batches; the ids of the tasks seen.

    `known` holds the tasks by id, packed, when the driver read them itself (the executors then
    send only their lineage back); without it each row carries its task.

    What the driver holds is bounded by settings, not by the warehouse: the catalog is written
    `harvest_catalog_tables` tables at a time, the rows stream a partition at a time (at most
    `harvest_partition_tasks` tasks each, the next one prefetched), at most `batch_size` tasks
    wait to be loaded, and the store's memory of the columns in the graph is dropped past
    `harvest_known_columns`. What still grows with the corpus is a few hundred bytes a task (its
    packed text in `known`, its id in the set returned) and the caller's catalog.
    """
    # The executors' function by its module: run as spark-submit's __main__, this file's own
    # functions would be pickled by value, with fresh globals for every partition, and each
    # partition would build the worker's catalog anew.
    from watershed.ingest.harvest import _extract_partition as extract_partition

    catalog_data = catalog.packed() if catalog is not None and catalog.tables else None
    broadcast = spark.sparkContext.broadcast(catalog_data)
    # pickled to the broadcast's file: the texts are the executors' now
    del catalog_data
    settings_data = settings.model_dump()
    limits_data = current_limits().model_dump()
    send_task = known is None
    lines = rdd.mapPartitions(
        lambda rows: extract_partition(rows, broadcast, settings_data, send_task, limits_data)
    )

    if store is not None and catalog is not None and catalog.tables:
        # With the catalog's nodes in place, task loads only match ids and create edges.
        began_catalog = time.monotonic()
        names = iter(catalog.tables)
        while step := list(itertools.islice(names, settings.harvest_catalog_tables)):
            part = Catalog.model_construct(
                default_database=catalog.default_database,
                tables={name: catalog.tables[name] for name in step},
            )
            store.upsert_catalog(part)
            _bound_known_columns(store, settings)
        report.load_seconds += time.monotonic() - began_catalog
    extract_began = time.monotonic()
    # Extract every partition in parallel first; the driver then streams the cached rows.
    lines = lines.persist()
    _materialise(lines)
    report.extract_seconds = time.monotonic() - extract_began
    pending: list[tuple[SqlTask, Callable[[], TaskLineage]]] = []
    seen: set[str] = set()
    table = report.inputs[0].removeprefix("table:")
    with (out / "errors.jsonl").open("w") as errors:
        for duplicate in report.duplicates:
            errors.write(json.dumps(_duplicate_error(duplicate)) + "\n")
        for index, duplicate in enumerate(report.duplicates):
            if index == PRUNE_EXAMPLES:
                progress(f"  ... and {len(report.duplicates) - index} more duplicate task ids (errors.jsonl)")
                break
            progress(f"  error: {duplicate.message}")
        for problem in report.source_problems:
            errors.write(json.dumps(_problem_error(problem)) + "\n")
        stream_began, load_before = time.monotonic(), report.load_seconds
        #: seconds spent decoding lineages inside the loads: decoding, not loading
        decoding = [0.0]
        for row in lines.toLocalIterator(prefetchPartitions=True):
            if row[0] == "problem":
                _, task_id, message = row
                where = f"table {table}, task {task_id}" if task_id else f"table {table}"
                problem = SourceProblem(where, message, task_id)
                report.source_problems.append(problem)
                errors.write(json.dumps(_problem_error(problem)) + "\n")
                continue
            _, task_id, task_packed, lineage_packed, errors_json = row
            report.tasks += 1
            if errors_json:
                task_errors = json.loads(errors_json)
                report.tasks_with_errors += 1
                report.statement_errors += len(task_errors)
                for error in task_errors:
                    errors.write(json.dumps(error) + "\n")
            seen.add(task_id)
            if store is None:
                continue
            # popped: a task's packed text is freed once it is loaded
            task = unpack_model(SqlTask, known.pop(task_id) if known is not None else task_packed)
            # the corpus's records never name a source: the run's is every task's
            task.source = report.source
            # decoded by the store only when the task's version changed; an unchanged task's
            # lineage is never parsed
            pending.append((task, partial(_decode_lineage, lineage_packed, decoding)))
            if len(pending) >= batch_size:
                _load(store, pending, catalog, report, progress)
                _bound_known_columns(store, settings)
                pending = []
        if store is not None and pending:
            _load(store, pending, catalog, report, progress)
            _bound_known_columns(store, settings)
        report.load_seconds -= decoding[0]
        report.decode_seconds = time.monotonic() - stream_began - (report.load_seconds - load_before)
    lines.unpersist()
    return seen


def _bound_known_columns(store, settings: IngestSettings) -> None:
    """Drop the store's memory of which columns the graph has once it passes
    `harvest_known_columns` ids: it would grow to every column of the warehouse (about 100 bytes
    each), where forgetting costs the next loads an index look-up per column they name."""
    if len(store.known_columns()) > settings.harvest_known_columns:
        store.forget_columns()


def _decode_lineage(lineage_packed: bytes, seconds: list[float]) -> TaskLineage:
    """An executor's packed lineage read back; its time added to `seconds`."""
    began = time.monotonic()
    lineage = unpack_model(TaskLineage, lineage_packed)
    seconds[0] += time.monotonic() - began
    return lineage


def _duplicate_error(duplicate: DuplicateTask) -> dict:
    return {
        "task_id": duplicate.task_id,
        "statement_index": None,
        "source": "; ".join(duplicate.locations),
        "locations": list(duplicate.locations),
        "message": duplicate.message,
    }


def _problem_error(problem: SourceProblem) -> dict:
    return {
        "task_id": problem.task_id,
        "statement_index": None,
        "source": problem.location,
        "message": problem.message,
    }


def _prune(
    store,
    seen: set[str],
    tasks_before: int,
    report: HarvestReport,
    force: bool,
    max_fraction: float,
    progress,
) -> None:
    """Delete the source's tasks the graph has and the corpus lacks, unless that looks like a
    corpus gone wrong. Tasks of other sources are never looked at."""
    graph_ids = set(store.task_ids_of_source(report.source))
    # Ids the corpus names but does not load (defined twice, or a bad record) keep what the graph has.
    kept = {d.task_id for d in report.duplicates} | {p.task_id for p in report.source_problems if p.task_id}
    gone = sorted(graph_ids - seen - kept)
    report.prune_would_remove = len(gone)
    report.prune_first = gone[:PRUNE_EXAMPLES]
    if not gone:
        report.prune = "nothing"
        return
    listed = ", ".join(gone[:PRUNE_EXAMPLES]) + (
        f" and {len(gone) - PRUNE_EXAMPLES} more" if len(gone) > PRUNE_EXAMPLES else ""
    )
    unknown = [p for p in report.source_problems if not p.task_id]
    if unknown and not force:
        # A record we could not read may be one of these tasks: removing it would lose its lineage.
        report.prune = "skipped"
        report.prune_message = (
            f"prune skipped: {len(unknown)} records of the corpus could not be read and name no task id, "
            f"so {len(gone)} tasks missing from it stay in the graph ({listed}); fix the records listed "
            "in errors.jsonl"
        )
        progress(f"  {report.prune_message}")
        return
    tasks_before = max(tasks_before, len(gone))
    share = len(gone) / tasks_before
    reason = (
        "the corpus holds no task"
        if not seen
        else f"{share:.0%} of the {tasks_before} tasks of source {report.source}, more than the limit of "
        f"{max_fraction:.0%} "
        "(setting prune_max_fraction)"
        if share > max_fraction
        else None
    )
    if reason is not None and not force:
        report.status = "prune-refused"
        report.prune = "refused"
        report.prune_message = (
            f"prune refused: it would remove {len(gone)} tasks from the graph, {reason}: {listed}; "
            "the lineage loaded stays; rerun with --prune-force to remove them (or --no-prune)"
        )
        progress(f"  {report.prune_message}")
        return
    store.delete_tasks(gone)
    report.deleted = len(gone)
    report.prune = "done"
    report.prune_message = f"{len(gone)} tasks no longer in the corpus: their lineage was removed ({listed})"
    progress(f"  {report.prune_message}")


def _adopt(store, seen: set[str], sourceless_before: set[str], report: HarvestReport, progress) -> bool:
    """Adopt the tasks loaded before sources existed, when this corpus is theirs; whether it is.

    The rule: a pruning harvest whose corpus defines at least one source-less task takes every
    task still without a source as its own (marked with its source, so later runs prune them
    too, and the guard counts them). A graph from before sources had one corpus (a second was
    refused): re-harvesting it adopts and prunes what it no longer has, as before. A new corpus
    that shares no task with them leaves them alone: it never prunes another corpus's lineage.
    """
    if not sourceless_before & seen:
        return False
    orphans = sorted(store.task_ids_of_source(None))
    if orphans:
        store.adopt_tasks(orphans, report.source)
        report.adopted = len(orphans)
        progress(f"  {len(orphans)} tasks loaded before sources existed are now {report.source}'s")
    return True


def _load(store, pending, catalog, report: HarvestReport, progress) -> None:
    began = time.monotonic()
    result = store.upsert_tasks(pending, catalog, seen_at=report.started_at)
    report.loaded += result.loaded
    report.unchanged += result.unchanged
    if result.taken_over:
        room = PRUNE_EXAMPLES - len(report.taken_over_first)
        report.taken_over_first += result.taken_over[: max(room, 0)]
        report.taken_over += len(result.taken_over)
    report.load_seconds += time.monotonic() - began
    progress(
        f"  {report.tasks} tasks extracted, {report.loaded} loaded, {report.unchanged} unchanged, "
        f"{report.tasks_with_errors} with errors"
    )


def catalog_from_spark(spark, databases: list[str] | None = None) -> Catalog:
    """The Spark session's catalog (the Hive metastore when Spark runs with Hive support) as a Catalog."""
    from watershed.graph.catalog import CatalogColumn, CatalogTable

    tables: dict[str, CatalogTable] = {}
    names = databases or [db.name for db in spark.catalog.listDatabases()]
    for database in names:
        for table in spark.catalog.listTables(database):
            if table.isTemporary:
                continue
            table_id = f"{database}.{table.name}".lower()
            columns = spark.catalog.listColumns(f"{database}.{table.name}")
            details = _details(spark, database, table.name)
            location, file_format = (None, None) if table.tableType == "VIEW" else _storage(details)
            # the tables' and columns' COMMENTs are their descriptions; the owner is the one
            # TBLPROPERTIES name ('watershed.owner'='crm-team'), not the metastore's `Owner`: Spark
            # reserves `owner` and sets it to the account that ran the CREATE, a service user
            # more often than not
            tables[table_id] = CatalogTable(
                name=table_id,
                columns=[
                    CatalogColumn(name=c.name, type=c.dataType, description=c.description or None)
                    for c in columns
                    if not c.isPartition
                ],
                partitioned_by=[
                    CatalogColumn(name=c.name, type=c.dataType, description=c.description or None)
                    for c in columns
                    if c.isPartition
                ],
                location=location,
                format=file_format,
                owner=_property(details.get("Table Properties", ""), OWNER_PROPERTY),
                description=table.description or None,
            )
    return Catalog(tables=tables)


#: the table property a Spark or Hive table names its owner by (a person or a team)
OWNER_PROPERTY = "watershed.owner"


def _details(spark, database: str, table: str) -> dict[str, str]:
    """`DESCRIBE TABLE EXTENDED`'s detail rows by name (Location, Provider, Table Properties, ...)."""
    name = ".".join("`" + part.replace("`", "``") + "`" for part in (database, table))
    return {
        row.col_name.strip(): (row.data_type or "").strip()
        for row in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
        if row.col_name
    }


def _property(properties: str, key: str) -> str | None:
    """One entry of DESCRIBE's `Table Properties` text, `[k1=v1, watershed.owner=crm-team, ...]`."""
    for item in properties.strip("[]").split(", "):
        name, sep, value = item.partition("=")
        if sep and name.strip() == key:
            return value.strip() or None
    return None


def _storage(details: dict[str, str]) -> tuple[str | None, str | None]:
    """A table's location and file format from `DESCRIBE TABLE EXTENDED` (protection finds a
    table's files there). A Hive table's provider is `hive`: its format is read from its input
    format class (`...OrcInputFormat` -> `orc`)."""
    provider = details.get("Provider", "").lower() or None
    if provider == "hive":
        input_format = details.get("InputFormat", "").lower()
        provider = next((f for f in ("orc", "parquet", "avro", "text") if f in input_format), "hive")
    return details.get("Location") or None, provider


#: the master when nothing chose one (no --master, no WATERSHED_SPARK_MASTER, not launched by spark-submit)
DEFAULT_MASTER = "local[*]"


def master_chosen_by_launcher() -> str | None:
    """The master spark-submit (or a Spark already running in this process) chose, if any.

    Under spark-submit the driver's JVM is already up (PYSPARK_GATEWAY_PORT is set) and its
    SparkConf holds the `--master` given there (`spark.master`): setting another one from the
    job would silently run a `--master yarn` submission on local[*].
    """
    import os

    from pyspark import SparkConf, SparkContext

    active = SparkContext._active_spark_context
    if active is not None:
        return active.master
    if not os.environ.get("PYSPARK_GATEWAY_PORT"):
        return None
    SparkContext._ensure_initialized()
    conf = SparkConf()
    return conf.get("spark.master") if conf.contains("spark.master") else None


def spark_session(master: str | None = None, app_name: str = "watershed-harvest"):
    """A Spark session on `master`; without one, the launcher's master, else local[*]."""
    import os

    from watershed.graph.extras import require_extra

    require_extra("spark", "pyspark", purpose="the harvest (a Spark job)")
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    elif master_chosen_by_launcher() is None:
        builder = builder.master(DEFAULT_MASTER)
    session = (
        builder.config("spark.ui.enabled", "false")
        # Executors run this interpreter, so they import the same installed packages.
        .config("spark.pyspark.python", sys.executable)
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def open_graph(settings) -> GraphStore:
    """The configured graph (`settings.backend`), reachable and with its schema; HarvestError naming it if not."""
    from watershed.graph.backends import UnreachableGraphError, open_answering

    try:
        return open_answering(settings, schema=True)
    except UnreachableGraphError as exc:
        raise HarvestError(str(exc)) from None


def _run_date_argument(text: str) -> str:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a date of the form YYYY-MM-DD")
    return text


def main(argv: list[str] | None = None) -> int:
    """The spark-submit entry point: exit 0 when done, 1 on bad input, a failure or a refused prune, 2 on usage."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", help="directory of .sql files, or a .jsonl/.parquet task export")
    parser.add_argument("--tasks-table", help="a Spark/Hive table with the export's columns")
    parser.add_argument(
        "--source",
        default=None,
        help="the source name the tasks are loaded as, and pruned within "
        "(default files:<absolute path> or table:<name>)",
    )
    parser.add_argument("--catalog", help="JSON catalog file")
    parser.add_argument(
        "--spark-catalog", action="store_true", help="take the schemas from the Spark/Hive catalog"
    )
    parser.add_argument(
        "--out", default=None, help="where the run's errors.jsonl and run.json go (default DATA_DIR/harvest)"
    )
    parser.add_argument(
        "--graph",
        choices=["falkordb", "neo4j", "none"],
        default=None,
        help="the graph to load into (default: WATERSHED_BACKEND's); none extracts only",
    )
    parser.add_argument(
        "--master",
        default=None,
        help="Spark master (default WATERSHED_SPARK_MASTER, else local[*]); under spark-submit, give it there",
    )
    parser.add_argument(
        "--no-prune", dest="prune", action="store_false", help="keep tasks the graph has but the corpus lacks"
    )
    parser.add_argument(
        "--prune-force",
        action="store_true",
        help="prune even an empty corpus or one that shrank by more than prune_max_fraction",
    )
    parser.add_argument(
        "--run-date",
        default=None,
        type=_run_date_argument,
        help="YYYY-MM-DD: the run date of tasks whose vars set none (default WATERSHED_RUN_DATE)",
    )
    args = parser.parse_args(argv)
    if (args.tasks is None) == (args.tasks_table is None):
        parser.error("give exactly one of --tasks or --tasks-table")
    if args.catalog and args.spark_catalog:
        parser.error("give --catalog or --spark-catalog, not both")
    if args.prune_force and not args.prune:
        parser.error("give --prune-force or --no-prune, not both")
    try:
        return _main(args)
    except (TaskSourceError, CatalogError, HarvestError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _main(args: argparse.Namespace) -> int:
    from watershed.graph.settings import GraphSettings, data_dir

    settings = IngestSettings() if args.run_date is None else IngestSettings(run_date=args.run_date)
    graph_settings = GraphSettings() if args.graph in (None, "none") else GraphSettings(backend=args.graph)
    out = Path(args.out) if args.out else data_dir() / "harvest"
    launched = master_chosen_by_launcher()
    if launched is not None and args.master and args.master != launched:
        raise HarvestError(
            f"--master {args.master}: this job was launched on {launched}; give the master to spark-submit only"
        )
    if args.tasks:
        check_task_source(args.tasks)
    source_name(args.source, args.tasks, args.tasks_table)
    check_out_dir(out)
    catalog = Catalog.load(args.catalog) if args.catalog else None
    store = None if args.graph == "none" else open_graph(graph_settings)
    spark = spark_session(None if launched is not None else args.master or settings.spark_master)
    if args.spark_catalog:
        catalog = catalog_from_spark(spark)
    report = run_harvest(
        spark,
        tasks=args.tasks,
        tasks_table=args.tasks_table,
        catalog=catalog,
        store=store,
        out_dir=out,
        prune=args.prune,
        prune_force=args.prune_force,
        prune_max_fraction=settings.prune_max_fraction,
        settings=settings,
        source=args.source,
    )
    print(json.dumps(report.summary()))
    if report.status == "prune-refused":
        print(f"error: {report.prune_message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
