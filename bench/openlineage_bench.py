"""OpenLineage intake against the harvest's load of the same lineage (issue 38, "Measure").

    .venv/bin/python bench/openlineage_bench.py [--jobs 300] [--memory-events 100000]

Starts its own FalkorDB on a free port. Events are Spark-shaped: 5 input tables of 10 columns,
an output of 50 columns, each a DIRECT (IDENTITY, TRANSFORMATION with masking, or AGGREGATION)
of one input column, dataset-level INDIRECT JOIN/FILTER/GROUP_BY columns, `schema` facets on
every dataset, and the run facets the listener sends (processing_engine, nominalTime). Two kinds,
`--jobs` jobs each:

- facet-only (a DataFrame job): intake = `Intake.take` of the decoded JSON per event (validate,
  convert, read the run state, `upsert_tasks`, run state and audit entry), one event per call as
  the stock producers POST them; harvest = the same tasks and lineage through `upsert_tasks`,
  with the catalog of the events' schema facets as a harvest loads with its catalog (both paths
  write the columns' types);
- SQL (a `spark.sql` job): the same with a SQL job facet, a 5-way join of the inputs writing the
  50 columns; intake as above (the extractor reads the SQL); harvest = `extract_lineage` and
  `upsert_tasks` of the same task.

The harvest path is measured as the harvest loads (1000 tasks per `upsert_tasks`) and one task
per call; each on an emptied graph, in the same run. Prints tasks/s and the ratio harvest/intake
per task (the issue's target: intake within 2x of the harvest path).

The intake is also measured with the events posted as JSON arrays of 100 (`BATCH`), which it
loads with one `upsert_tasks`, against the batched harvest.

Memory: `--memory-events` events through one `Intake`, in arrays of 100 (new runs of
`--memory-jobs` jobs whose content changes every other run, so half reload and half are
`unchanged`; what a process keeps grows per event or per task, not per POST), the process's RSS
(and with `--tracemalloc` its traced size) sampled every tenth of the way; flat means the last sample is
within a few MB of the first after warm-up. Writes bench/results/openlineage_bench.json with the
command. Nothing here asserts a timing.

`--reconcile-only` loads the Spark listener's recorded events (tests/ingest/openlineage/events/)
and writes their reconcile report (edges only the SQL found, only the runtime found) to
bench/results/openlineage_reconcile.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import shlex
import signal
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from watershed.api.service.lineage_intake import Intake  # noqa: E402
from watershed.graph.catalog import Catalog  # noqa: E402
from watershed.graph.falkordb_store import FalkorDBStore  # noqa: E402
from watershed.graph.lineage import SqlTask  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402
from watershed.ingest.extract import extract_lineage  # noqa: E402
from watershed.ingest.openlineage.convert import Converter  # noqa: E402
from watershed.ingest.openlineage.events import parse_events  # noqa: E402
from watershed.ingest.settings import IngestSettings  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "openlineage_bench.json"
GRAPH = "openlineage_bench"
HIVE = "hive://metastore:9083"
INPUTS, COLUMNS_PER_INPUT = 5, 10
SUBTYPES = ("IDENTITY", "TRANSFORMATION", "AGGREGATION")
#: events per POST of the batched intake (a JSON array; the stock producers send one per POST)
BATCH = 100
#: the recorded Spark events' session catalog (no Hive): its tables are named under this URI
RECORDED_WAREHOUSE = "file:/tmp/watershed-openlineage-jobs/warehouse"
RECORDED = ROOT / "tests" / "ingest" / "openlineage" / "events"
RECONCILE_RESULTS = ROOT / "bench" / "results" / "openlineage_reconcile.json"


def _facet(producer: str) -> dict:
    return {"_producer": producer, "_schemaURL": "https://openlineage.io/spec/facets/1-0-0/X.json"}


def spark_event(job: int, *, sql: bool, run: int = 0, variant: int = 0) -> dict:
    """One Spark-shaped COMPLETE event of job `job`; `variant` changes the lineage's content."""
    producer = "https://github.com/OpenLineage/OpenLineage/tree/1.53.0/integration/spark"
    inputs = [f"ods.src_{job}_{i}" for i in range(INPUTS)]
    output = f"dw.out_{job}"
    schema = [{"name": f"c{c}", "type": "string"} for c in range(COLUMNS_PER_INPUT)]
    fields = {}
    selects = []
    for i in range(INPUTS):
        for c in range(COLUMNS_PER_INPUT):
            n = i * COLUMNS_PER_INPUT + c
            subtype = SUBTYPES[(n + variant) % 3]
            source = f"c{(c + variant) % COLUMNS_PER_INPUT}"
            fields[f"o{n}"] = {
                "inputFields": [
                    {
                        "namespace": HIVE,
                        "name": inputs[i],
                        "field": source,
                        "transformations": [
                            {
                                "type": "DIRECT",
                                "subtype": subtype,
                                "description": "",
                                "masking": subtype == "TRANSFORMATION",
                            }
                        ],
                    }
                ]
            }
            expression = {"IDENTITY": "{}", "TRANSFORMATION": "sha2({}, 256)", "AGGREGATION": "max({})"}[
                subtype
            ]
            selects.append(f"{expression.format(f't{i}.{source}')} AS o{n}")
    dataset = [
        {
            "namespace": HIVE,
            "name": inputs[i],
            "field": "c0",
            "transformations": [{"type": "INDIRECT", "subtype": "JOIN"}],
        }
        for i in range(INPUTS)
    ] + [
        {
            "namespace": HIVE,
            "name": inputs[0],
            "field": "c1",
            "transformations": [{"type": "INDIRECT", "subtype": "FILTER"}],
        }
    ]
    event = {
        "eventType": "COMPLETE",
        "eventTime": f"2024-01-31T02:{run // 60 % 60:02d}:{run % 60:02d}.000Z",
        "producer": producer,
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {
            "runId": str(uuid.UUID(int=(job << 32) + run + 1)),
            "facets": {
                "processing_engine": {**_facet(producer), "version": "3.5.1", "name": "spark"},
                "nominalTime": {**_facet(producer), "nominalStartTime": "2024-01-31T00:00:00Z"},
                "spark_properties": {
                    **_facet(producer),
                    "properties": {"spark.master": "yarn", "spark.app.name": "etl"},
                },
            },
        },
        "job": {
            "namespace": "spark-prod",
            "name": f"etl.execute_insert_into_hive_table.dw_out_{job}",
            "facets": {},
        },
        "inputs": [
            {"namespace": HIVE, "name": name, "facets": {"schema": {**_facet(producer), "fields": schema}}}
            for name in inputs
        ],
        "outputs": [
            {
                "namespace": HIVE,
                "name": output,
                "facets": {
                    "schema": {**_facet(producer), "fields": [{"name": f, "type": "string"} for f in fields]},
                    "columnLineage": {**_facet(producer), "fields": fields, "dataset": dataset},
                },
            }
        ],
    }
    if sql:
        joins = " ".join(f"JOIN {inputs[i]} t{i} ON t0.c0 = t{i}.c0" for i in range(1, INPUTS))
        event["job"]["facets"]["sql"] = {
            **_facet(producer),
            "query": f"INSERT OVERWRITE TABLE {output} SELECT {', '.join(selects)} FROM {inputs[0]} t0 {joins} "
            "WHERE t0.c1 = '${date}' GROUP BY "
            + ", ".join(f"t{i}.c{c}" for i in range(INPUTS) for c in range(COLUMNS_PER_INPUT)),
            "dialect": "spark",
        }
    return event


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fresh(graph: FalkorDBStore) -> None:
    """An empty graph with its indexes (deleting the graph drops them)."""
    graph.clear()
    graph.ensure_schema()


def measure_kind(graph: FalkorDBStore, jobs: int, sql: bool) -> dict:
    settings = IngestSettings()
    events = [spark_event(j, sql=sql) for j in range(jobs)]
    texts = [json.dumps(e) for e in events]
    body_kb = sum(len(t) for t in texts) / len(texts) / 1024

    fresh(graph)
    intake = Intake(graph, settings)
    began = time.perf_counter()
    for text in texts:
        intake.take(json.loads(text), "bench")
    intake_s = time.perf_counter() - began
    fresh(graph)
    intake = Intake(graph, settings)
    began = time.perf_counter()
    for at in range(0, len(texts), BATCH):
        intake.take(json.loads("[" + ",".join(texts[at : at + BATCH]) + "]"), "bench")
    intake_batched_s = time.perf_counter() - began

    # the harvest's record of the same task: what the intake converted (SQL text, version, catalog)
    converter = Converter(settings)
    converted = [converter.convert(parse_events(e)[0]) for e in events]
    tasks = [
        (SqlTask(task_id=c.task.task_id, sql=c.task.sql, dialect=c.task.dialect, vars=c.task.vars), c)
        for c in converted
    ]

    def harvest(per_call: int) -> float:
        fresh(graph)
        began = time.perf_counter()
        for at in range(0, len(tasks), per_call):
            batch, tables = [], {}
            for task, c in tasks[at : at + per_call]:
                lineage = extract_lineage(task, c.catalog, settings) if sql else c.lineage
                batch.append((task, lineage))
                tables.update(c.catalog.tables if c.catalog else {})
            # a harvest loads its tasks with its catalog (ingest/harvest.py), as the intake does the
            # events' schema facets: the columns' types are written on both paths
            graph.upsert_tasks(batch, Catalog(default_database=settings.default_database, tables=tables))
        return time.perf_counter() - began

    batched_s = harvest(1000)
    single_s = harvest(1)
    return {
        "jobs": jobs,
        "event_kb": round(body_kb, 1),
        "column_edges_per_task": sum(len(col.sources) for col in converted[0].lineage.columns),
        "intake_events_per_s": round(jobs / intake_s, 1),
        f"intake_arrays_of_{BATCH}_events_per_s": round(jobs / intake_batched_s, 1),
        "harvest_batched_tasks_per_s": round(jobs / batched_s, 1),
        "harvest_one_per_call_tasks_per_s": round(jobs / single_s, 1),
        "intake_over_harvest_batched": round(intake_s / batched_s, 2),
        "intake_over_harvest_one_per_call": round(intake_s / single_s, 2),
        f"intake_arrays_of_{BATCH}_over_harvest_batched": round(intake_batched_s / batched_s, 2),
    }


def measure_memory(graph: FalkorDBStore, events: int, jobs: int, traced: bool) -> dict:
    fresh(graph)
    intake = Intake(graph, IngestSettings())
    templates = {
        (j, v): json.dumps(spark_event(j, sql=False, variant=v)) for j in range(jobs) for v in (0, 1)
    }
    samples = []
    if traced:
        tracemalloc.start()
    began = time.perf_counter()
    step = max(BATCH, events // 10 // BATCH * BATCH)
    batch = []
    for n in range(events):
        job, run = n % jobs, n // jobs
        event = json.loads(templates[(job, run % 2)])
        event["run"]["runId"] = str(uuid.UUID(int=(job << 32) + run + 1))
        event["eventTime"] = (
            f"2024-02-{1 + run // 86400 % 28:02d}T{run // 3600 % 24:02d}:{run // 60 % 60:02d}:{run % 60:02d}Z"
        )
        batch.append(event)
        if len(batch) == BATCH or n + 1 == events:
            intake.take(batch, "bench")
            batch = []
        if (n + 1) % step == 0:
            sample = {"events": n + 1, "rss_mb": round(rss_mb(), 1)}
            if traced:
                sample["traced_mb"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 2)
            samples.append(sample)
            print(f"  memory after {n + 1} events: {samples[-1]}", flush=True)
    if traced:
        tracemalloc.stop()
    seconds = time.perf_counter() - began
    return {
        "events": events,
        "jobs": jobs,
        "seconds": round(seconds, 1),
        "events_per_s": round(events / seconds, 1),
        "samples": samples,
        "rss_growth_after_first_tenth_mb": round(samples[-1]["rss_mb"] - samples[0]["rss_mb"], 1),
        "traced_growth_after_first_tenth_mb": (
            round(samples[-1]["traced_mb"] - samples[0]["traced_mb"], 2) if traced else None
        ),
    }


def reconcile_recorded(graph: FalkorDBStore, directory: Path) -> dict:
    """The reconcile report of the Spark listener's recorded events (one JSON array per job, as
    tests/ingest/openlineage/events/README.md says), loaded in arrival order."""
    from watershed.api.service.lineage_reconcile import reconcile

    fresh(graph)
    settings = IngestSettings(openlineage_namespaces=[(RECORDED_WAREHOUSE, "table"), ("file", "path:fs")])
    intake = Intake(graph, settings)
    files = sorted(directory.glob("*.json"))
    for path in files:
        for event in json.loads(path.read_text()):
            intake.take(event, "bench")
    return {"events": [p.name for p in files], **reconcile(graph).model_dump()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=300, help="jobs (one event each) per kind")
    parser.add_argument("--memory-events", type=int, default=100_000)
    parser.add_argument("--memory-jobs", type=int, default=1000)
    parser.add_argument(
        "--tracemalloc",
        action="store_true",
        help="also sample tracemalloc (Python's own allocations; 2-3x slower)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--reconcile-only",
        action="store_true",
        help=f"only write the reconcile report of the recorded Spark events to {RECONCILE_RESULTS.name}",
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="watershed-openlineage-bench-"))
    spec = ServerSpec("falkordb", "127.0.0.1", free_port(), work, with_falkordb=True)
    start(spec)
    try:
        graph = FalkorDBStore(spec.host, spec.port, graph=GRAPH)
        graph.ensure_schema()
        if args.reconcile_only:
            report = reconcile_recorded(graph, RECORDED)
            report["command"] = shlex.join([".venv/bin/python", "bench/openlineage_bench.py", *sys.argv[1:]])
            RECONCILE_RESULTS.write_text(json.dumps(report, indent=2) + "\n")
            print(json.dumps(report, indent=2))
            return
        results = {}
        for kind, sql in (("facet_only", False), ("sql", True)):
            results[kind] = measure_kind(graph, args.jobs, sql)
            print(kind, json.dumps(results[kind]), flush=True)
        if args.memory_events:
            results["memory"] = measure_memory(graph, args.memory_events, args.memory_jobs, args.tracemalloc)
            print(
                "memory",
                json.dumps({k: v for k, v in results["memory"].items() if k != "samples"}),
                flush=True,
            )
        graph.close()
    finally:
        stop(spec)
    import os

    report = {
        "command": shlex.join([".venv/bin/python", "bench/openlineage_bench.py", *sys.argv[1:]]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "results": results,
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
