"""The protection planner's peak memory and seconds, the whole catalog in one batch against the
default batch of tables (issue 16).

    .venv/bin/python bench/plan_memory_bench.py [--columns 300000] [--repeats 2]

It generates a warehouse (watershed.ingest.generator, about 46 columns per task), starts its own
FalkorDB (watershed.graph.server), loads the catalog's tables and columns (upsert_catalog, as a
harvest does first) and tags every column as a propagation would leave it: an `app` tag with its
path, and every 100th column `pii` (L4 or L2, so the default policy's rules plan those tables);
every other table with a pii column gets a protection record (as after an apply).

Then the default policy's plan of the whole graph runs in a fresh Python process per measurement
(this script with `--measure`), so its peak RSS (VmHWM) is the plan's alone, in three ways,
alternating, `--repeats` times each:

- `whole_catalog`: the planner before batches (a private copy of its loop below): every table's
  columns and tags in one query and one dict, then one record query per table;
- `one_batch`: `plan_protection` with one batch as large as the graph (the old memory shape);
- `default_batch`: `plan_protection` with its default batch size.

Each process prints its seconds, peak RSS, RSS before the plan, and a digest of the plan (its
model dump without created_at), which must be the same for all. Results go to
bench/results/plan_memory_bench.json (one entry per --columns, kept across runs) with the ratios
of each to the default. Nothing here
asserts a timing.

Incremental against full (issue 41):

    .venv/bin/python bench/plan_memory_bench.py --incremental 100000,500000

For each size, a graph of its own is loaded as above; then, each in a fresh process: the first
incremental plan (no plan recorded yet: a full one, recording each table's), a full plan, one
table's column tagged pii=L4 by propagation's own tag write (a one-task change reaching one
table), the incremental plan after it and a full plan after it (the two must be the same plan).
Written to bench/results/plan_incremental_bench.json with the command: seconds, peak RSS and
tables read of each, the ratio incremental/full per size and each one's size exponent.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.scale_bench import status_kib  # noqa: E402

RESULTS = REPO / "bench" / "results" / "plan_memory_bench.json"
INCREMENTAL_RESULTS = REPO / "bench" / "results" / "plan_incremental_bench.json"
COLUMNS_PER_TASK = 46
GRAPH = "plan_bench"
PII_EVERY = 100
TAG_BATCH = 5000
#: the planner's whole-catalog read before batches (kept here only to measure it)
WHOLE_CATALOG = (
    "MATCH (t:Table) OPTIONAL MATCH (t)-[:HAS_COLUMN]->(c:Column) "
    "RETURN t.id, t.location, t.format, c.id, c.name, c.type, c.tags"
)
SAVE_RECORDS = (
    "UNWIND $rows AS r MERGE (p:TableProtection {table: r[0]}) "
    "SET p.columns = r[1], p.ddl = '[]', p.at = 't', p.run = 'bench'"
)
#: batch size per way of planning: 0 the whole-catalog planner, None plan_protection's default
MODES = {"whole_catalog": 0, "one_batch": 10**9, "default_batch": None}


def tags_text(column_id: str, index: int) -> str:
    """A column's tags as propagation writes them (`Column.tags`): app always, pii on some."""
    table = column_id.rsplit(".", 1)[0]
    tags = {
        "app": {"v": ["crm", "billing"], "o": "propagated", "p": [[f"{table}.app", "t1", "direct", "id", 1]]}
    }
    if index % PII_EVERY == 0:
        level = "L4" if index % (2 * PII_EVERY) == 0 else "L2"
        tags["pii"] = {"v": [level], "o": "propagated", "p": [[f"ods.src.{index}", "t2", "direct", "id", 1]]}
    return json.dumps(tags, separators=(",", ":"))


def load_graph(port: int, warehouse: Path) -> dict:
    """The catalog's tables and columns, then every column's tags; the graph's counts."""
    from watershed.graph.catalog import Catalog
    from watershed.graph.falkordb_store import FalkorDBStore

    store = FalkorDBStore("127.0.0.1", port, graph=GRAPH)
    store.ensure_schema()
    began = time.monotonic()
    store.upsert_catalog(Catalog.load(warehouse / "catalog.json"))
    loaded = time.monotonic() - began
    ids = sorted(row[0] for row in store.read("MATCH (c:Column) RETURN c.id"))
    for start in range(0, len(ids), TAG_BATCH):
        rows = [[cid, tags_text(cid, start + i)] for i, cid in enumerate(ids[start : start + TAG_BATCH])]
        store.write_all([("UNWIND $rows AS r MATCH (c:Column {id: r[0]}) SET c.tags = r[1]", {"rows": rows})])
    # what an apply records: every other pii table's wanted columns (pii key; L4 nullify, L2 sha256)
    wanted: dict[str, dict[str, dict]] = {}
    for index in range(0, len(ids), PII_EVERY):
        table, name = ids[index].rsplit(".", 1)
        mask = "nullify" if index % (2 * PII_EVERY) == 0 else "sha256"
        wanted.setdefault(table, {})[name] = {"key": "pii", "mask": mask, "version": 0}
    rows = [[table, json.dumps(columns, sort_keys=True)] for table, columns in sorted(wanted.items())[::2]]
    for start in range(0, len(rows), TAG_BATCH):
        store.write_all([(SAVE_RECORDS, {"rows": rows[start : start + TAG_BATCH]})])
    tables = store.read("MATCH (t:Table) RETURN count(t)")[0][0]
    store.close()
    return {
        "tables": tables,
        "columns": len(ids),
        "pii_columns": -(-len(ids) // PII_EVERY),
        "table_records": len(rows),
        "load_seconds": round(loaded, 1),
        "tag_seconds": round(time.monotonic() - began - loaded, 1),
    }


def whole_catalog_plan(store, protection):
    """The planner before batches (issue 16): the whole catalog in one dict, one record query per table."""
    from watershed.graph.protection import ProtectionPlan
    from watershed.orc_crypto.protect import records
    from watershed.orc_crypto.protect.checks import check_protection
    from watershed.orc_crypto.protect.plan import (
        RECORDED_TABLES,
        CatalogColumn,
        CatalogTable,
        now,
        plan_table,
    )

    check_protection(protection)
    catalog: dict[str, CatalogTable] = {}
    for table_id, location, fmt, column_id, name, type_, tags in store.read(WHOLE_CATALOG):
        table = catalog.setdefault(table_id, CatalogTable(table_id, location, fmt))
        if column_id is not None:
            table.columns.append(CatalogColumn(column_id, name, type_, tags))
    for (name,) in store.read(RECORDED_TABLES):
        catalog.setdefault(name, CatalogTable(name, None, None))
    plan = ProtectionPlan(
        created_at=now(), policy_digest=protection.digest(), key_provider_path=protection.key_provider_path
    )
    for name in sorted(catalog):
        table_plan = plan_table(catalog[name], protection, records.table_protection(store, name))
        if table_plan is not None:
            plan.tables.append(table_plan)
    return plan


def measure_here(port: int, batch_size: int, incremental: bool = False) -> None:
    """The `--measure` entry: one plan of the whole graph (batch size 0: the whole-catalog planner;
    `incremental`: the nightly's incremental plan); its numbers as the last line."""
    from watershed.graph.falkordb_store import FalkorDBStore
    from watershed.orc_crypto.protect.plan import plan_protection
    from watershed.propagation.policy import default_policy

    store = FalkorDBStore("127.0.0.1", port, graph=GRAPH)
    protection = default_policy().protection
    store.ping()
    before = status_kib("VmRSS") or 0
    began = time.monotonic()
    if batch_size == 0:
        plan = whole_catalog_plan(store, protection)
    else:
        # FalkorDB runs one query at a time: no change commits after the plan read the clock
        plan = plan_protection(
            store, protection, batch_size=batch_size, incremental=incremental, clock_margin_seconds=0
        )
    seconds = time.monotonic() - began
    peak = status_kib("VmHWM") or 0
    digest = hashlib.sha256(plan.model_dump_json(exclude={"created_at"}).encode()).hexdigest()
    result = {
        "batch_size": batch_size,
        "seconds": round(seconds, 2),
        "peak_rss_mib": round(peak / 1024, 1),
        "rss_before_plan_mib": round(before / 1024, 1),
        "tables_planned": len(plan.tables),
        "plan_digest": digest,
    }
    print("MEASURE " + json.dumps(result), flush=True)


def measure(port: int, batch_size: int, incremental: bool = False) -> dict:
    extra = ["--incremental-plan"] if incremental else []
    done = subprocess.run(
        [sys.executable, __file__, "--measure", "--port", str(port), "--batch-size", str(batch_size), *extra],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("MEASURE ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"the plan process failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(lines[-1].removeprefix("MEASURE "))


def best(runs: list[dict], key: str) -> float:
    return min(r[key] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--columns", type=int, default=300_000, help="warehouse columns (about)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--work", default=None, help="a directory for the warehouse and the server")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--batch-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--incremental-plan", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--incremental", help="column counts (comma-separated): time full against incremental plans"
    )
    args = parser.parse_args()
    if args.measure:
        measure_here(args.port, args.batch_size, args.incremental_plan)
        return
    if args.incremental:
        incremental_main([int(n) for n in args.incremental.split(",")], args.work)
        return

    from watershed.graph.server import ServerSpec, free_port, start, stop
    from watershed.ingest.generator import generate_warehouse
    from watershed.orc_crypto.protect.plan import PLAN_BATCH

    work = Path(tempfile.mkdtemp(prefix="plan-memory-bench-", dir=args.work))
    tasks = max(20, round(args.columns / COLUMNS_PER_TASK))
    began = time.monotonic()
    summary = generate_warehouse(work / "warehouse", tasks=tasks, seed=7)
    print(f"generated {summary.tables} tables, {summary.columns} columns in {time.monotonic() - began:.1f} s")
    server = ServerSpec("falkordb", "127.0.0.1", free_port(), work / "server", with_falkordb=True)
    start(server)
    try:
        graph = load_graph(server.port, work / "warehouse")
        print(f"graph: {graph}", flush=True)
        runs: dict[str, list[dict]] = {name: [] for name in MODES}
        for _ in range(args.repeats):
            for name, size in MODES.items():
                runs[name].append(measure(server.port, PLAN_BATCH if size is None else size))
                print(f"  {name}: {runs[name][-1]}", flush=True)
    finally:
        stop(server, wait_seconds=120)
        shutil.rmtree(work, ignore_errors=True)
    digests = {r["plan_digest"] for rs in runs.values() for r in rs}
    default = runs["default_batch"]

    def above_start(rs: list[dict]) -> float:
        return max(0.1, min(r["peak_rss_mib"] - r["rss_before_plan_mib"] for r in rs))

    result = {
        "machine": {"python": platform.python_version(), "cores": len(os.sched_getaffinity(0))},
        "warehouse": {"tasks": tasks, "tables": summary.tables, "columns": summary.columns},
        "graph": graph,
        "default_batch_size": PLAN_BATCH,
        "same_plan": len(digests) == 1,
        "runs": runs,
        "best": {
            name: {
                "seconds": best(rs, "seconds"),
                "peak_rss_mib": best(rs, "peak_rss_mib"),
                "peak_above_start_mib": round(above_start(rs), 1),
            }
            for name, rs in runs.items()
        },
        "ratios_over_default_batch": {
            name: {
                "peak_rss": round(best(rs, "peak_rss_mib") / best(default, "peak_rss_mib"), 2),
                "peak_rss_above_start": round(above_start(rs) / above_start(default), 2),
                "seconds": round(best(rs, "seconds") / best(default, "seconds"), 2),
            }
            for name, rs in runs.items()
            if name != "default_batch"
        },
    }
    result["load_average"] = os.getloadavg()  # seconds are noisy when the cores are shared
    # one entry per size, kept across runs
    runs_by_size = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    runs_by_size[str(args.columns)] = result
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(runs_by_size, indent=1, sort_keys=True) + "\n")
    print(json.dumps({k: result[k] for k in ("same_plan", "best", "ratios_over_default_batch")}, indent=1))
    if not result["same_plan"]:
        raise SystemExit("the plans differ between batch sizes")


def tag_one_table(port: int) -> str:
    """One table's first column tagged pii=L4 by propagation's own (fenced) tag write; its table."""
    from watershed.graph.falkordb_store import FalkorDBStore
    from watershed.propagation.queries import write_tags

    store = FalkorDBStore("127.0.0.1", port, graph=GRAPH)
    [[column, table]] = store.read(
        "MATCH (t:Table)-[:HAS_COLUMN]->(c:Column) WHERE NOT c.tags CONTAINS 'pii' RETURN c.id, t.id LIMIT 1"
    )
    tags = {"pii": {"v": ["L4"], "o": "propagated", "p": [["ods.src.x", "t9", "direct", "id", 1]]}}
    store.write_all(
        [
            ("MERGE (f:PropagationFence {id: 'plan-bench'}) SET f.token = 1", {}),
            (
                write_tags("Column"),
                {
                    "fence": "plan-bench",
                    "token": 1,
                    "rows": [[column, json.dumps(tags), []]],
                    "run": "b",
                    "stamp": "b",
                },
            ),
        ]
    )
    store.close()
    return table


def incremental_main(sizes: list[int], work_dir: str | None) -> None:
    """Full and incremental plans after a one-table change, at each size (see the docstring)."""

    from watershed.graph.server import ServerSpec, free_port, start, stop
    from watershed.ingest.generator import generate_warehouse
    from watershed.orc_crypto.protect.plan import PLAN_BATCH

    found = []
    for columns in sizes:
        work = Path(tempfile.mkdtemp(prefix="plan-incremental-bench-", dir=work_dir))
        tasks = max(20, round(columns / COLUMNS_PER_TASK))
        summary = generate_warehouse(work / "warehouse", tasks=tasks, seed=7)
        server = ServerSpec("falkordb", "127.0.0.1", free_port(), work / "server", with_falkordb=True)
        start(server)
        try:
            graph = load_graph(server.port, work / "warehouse")
            runs = {"first_incremental": measure(server.port, PLAN_BATCH, incremental=True)}
            runs["full"] = measure(server.port, PLAN_BATCH)
            changed = tag_one_table(server.port)
            runs["incremental"] = measure(server.port, PLAN_BATCH, incremental=True)
            runs["full_after"] = measure(server.port, PLAN_BATCH)
        finally:
            stop(server, wait_seconds=120)
            shutil.rmtree(work, ignore_errors=True)
        if runs["incremental"]["plan_digest"] != runs["full_after"]["plan_digest"]:
            raise SystemExit(f"{columns} columns: the incremental plan differs from the full plan")
        full_seconds = (runs["full"]["seconds"] + runs["full_after"]["seconds"]) / 2
        entry = {
            "columns": summary.columns,
            "tables": summary.tables,
            "graph": graph,
            "changed_table": changed,
            "runs": runs,
            "same_plan": True,
            "incremental_over_full_seconds": round(runs["incremental"]["seconds"] / full_seconds, 4),
        }
        found.append(entry)
        print(
            f"{summary.columns} columns ({summary.tables} tables): full {full_seconds:.1f} s, incremental "
            f"{runs['incremental']['seconds']:.2f} s, ratio {entry['incremental_over_full_seconds']}",
            flush=True,
        )
        write_incremental(sizes, found)


def write_incremental(sizes: list[int], found: list[dict]) -> None:
    """The results so far (after each size: a long run cut short keeps its smaller sizes)."""
    import math

    exponents = {}
    if len(found) >= 2:
        scale = math.log(found[-1]["columns"] / found[0]["columns"])
        for name in ("full", "incremental"):
            a, b = found[0]["runs"][name]["seconds"], found[-1]["runs"][name]["seconds"]
            exponents[name] = round(math.log(b / a) / scale, 2) if a > 0 and b > 0 else None
        print(f"size exponent of seconds: full {exponents['full']}, incremental {exponents['incremental']}")
    INCREMENTAL_RESULTS.write_text(
        json.dumps(
            {
                "command": "bench/plan_memory_bench.py --incremental " + ",".join(map(str, sizes)),
                "machine": {"cores": len(os.sched_getaffinity(0)), "shared": True},
                "load_average": os.getloadavg(),
                "sizes": found,
                "seconds_exponent": exponents,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
