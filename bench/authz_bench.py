"""Query-time authorization latency against a sqlglot parse of the same query, in one run.

    .venv/bin/python bench/authz_bench.py [--columns 1000000] [--tasks 200] [--repeat 3]
        [--out bench/results/authz_bench.json] [--skip-pipeline] [--modes service,service_fresh]

Starts its own FalkorDB on a free port and loads a catalog of >= `--columns` columns: TPC-DS's
tables (in `default`), the generated warehouse's tables (ingest.generator, `--tasks` tasks) and
filler tables of 100 columns; pii tags (L2..L4) on a share of the columns (customer and ODS
email/phone/uid columns among them) and app values seeded on the ODS tables.

Per query (TPC-DS's 99, and the SELECT part of each generated task, rendered in Spark SQL: checks run in the engine's dialect): the time of
  parse    `sqlglot.parse_one(sql, read=dialect)` alone,
  pipeline the check without grants: the tables named, their catalog entries from the graph
           (ingest.points.catalog_for with GraphStore.catalog_entries), the query's points, the
           current tags of every base column behind an output (GraphTagStore.current_tags), the masks
           those tags call for (the policy's protection rules), the masked SQL (masked_query);
  service  `AuthzService.rewrite` for a user with select on every database and unmask on
           pii<=L2: points, the grants decision, masks, rewrite and the decision's audit entry,
           keeping its reads under the graph's data stamp as the API does
           (`authz_reuse_seconds`, 60 s): a repeat reads the stamp instead of the catalog
           entries, grants and tags it read before, which is what a gateway's check of a query
           over tables it has seen since the last graph write costs; the text itself is
           parsed and analysed on every check (`keep_analyses=False`), as a text not seen
           under the stamp is,
  service_repeat  the same, the text's analysis kept too (the API's default): a query text
           checked again while the stamp stays is neither parsed nor analysed again,
  service_fresh  the same with nothing kept (`reuse_seconds` 0): every check reads the
           catalog entries, grants and tags from the graph, as the first check of a query over
           tables not seen since the last graph write does,
and p50/p99 of each with the ratio to parse: `per_query_ratio_p50/p99` are the median and p99 of
check / parse of the same query (the targets: service p99 <= 3x, service_fresh p99 <= 5x);
`ratio_p50/p99` divide the checks' percentile by the parses' (a ratio of maxima at p99).
Each service mode is also run once more over all queries under cProfile (after the timing, so it
does not count there): `profile` holds the functions with the most time of their own and the
check's stages by cumulative time, to show where a check's time beyond the parse goes. Each query runs `--repeat` times; the best of
the repeats counts (the machine is shared). Results: bench/results/authz_bench.json.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import json
import pstats
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sqlglot  # noqa: E402

from bench.lineage_bench import CORPORA, read_queries  # noqa: E402
from watershed.graph.catalog import Catalog, CatalogColumn, CatalogTable  # noqa: E402
from watershed.graph.falkordb_store import FalkorDBStore  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402
from watershed.ingest.generator import RUN_DATE, generate_warehouse, seed_apps  # noqa: E402
from watershed.ingest.points import QueryError, catalog_for, query_points  # noqa: E402
from watershed.ingest.rewrite import masked_query  # noqa: E402
from watershed.propagation.graph_store import GraphTagStore  # noqa: E402
from watershed.propagation.policy import default_policy  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "authz_bench.json"
FILLER_COLUMNS = 100
#: TPC-DS columns that carry personal data, with their pii level
TPCDS_PII = {
    "customer.c_email_address": "L3",
    "customer.c_first_name": "L2",
    "customer.c_last_name": "L2",
    "customer.c_login": "L3",
    "customer.c_birth_day": "L2",
    "customer_address.ca_street_name": "L3",
    "customer_address.ca_zip": "L2",
}
ODS_PII = {"email": "L3", "phone": "L2", "uid": "L2"}


def build_catalog(columns: int, tasks: int, work: Path) -> tuple[Catalog, list[str]]:
    """TPC-DS + generated warehouse + filler tables; returns the catalog and the task queries."""
    tables: dict[str, CatalogTable] = {}
    schema = json.loads((CORPORA / "tpcds_schema.json").read_text())
    for name, cols in schema.items():
        tables[f"default.{name}"] = CatalogTable(
            name=f"default.{name}", columns=[CatalogColumn(name=c, type=t) for c, t in cols.items()]
        )
    generate_warehouse(work, tasks=tasks, seed=7)
    generated = Catalog.from_dict(json.loads((work / "catalog.json").read_text()))
    tables.update(generated.tables)
    have = sum(len(t.all_columns) for t in tables.values())
    for i in range(max(0, -(-(columns - have) // FILLER_COLUMNS))):
        name = f"filler.t{i}"
        tables[name] = CatalogTable(
            name=name, columns=[CatalogColumn(name=f"c{c}", type="string") for c in range(FILLER_COLUMNS)]
        )
    queries = []
    for line in (work / "tasks.jsonl").read_text().splitlines():
        sql = json.loads(line)["sql"].replace("${date}", RUN_DATE)
        try:
            statement = sqlglot.parse_one(sql, read="hive")
        except sqlglot.errors.SqlglotError:
            continue  # the generator's deliberately broken tasks
        query = (
            statement.expression if isinstance(statement, (sqlglot.exp.Insert, sqlglot.exp.Create)) else None
        )
        if query is None or not isinstance(query, sqlglot.exp.Query):
            continue
        if isinstance(statement, sqlglot.exp.Insert) and statement.args.get("with_") is not None:
            query.set("with_", statement.args["with_"])
        queries.append(query.sql("spark"))
    return Catalog(tables=tables), queries


def seed_tags(tags: GraphTagStore, catalog: Catalog, rng: random.Random, share: float) -> int:
    seeded = 0
    for column, level in TPCDS_PII.items():
        tags.set_tag(f"default.{column}", "pii", [level], by="bench")
        seeded += 1
    for table_id, entry in catalog.tables.items():
        if table_id.startswith("ods."):
            for column, level in ODS_PII.items():
                if column in entry.column_set:
                    tags.set_tag(f"{table_id}.{column}", "pii", [level], by="bench")
                    seeded += 1
    seed_apps(tags, catalog)
    fillers = [t for t in catalog.tables if t.startswith("filler.")]
    for table_id in rng.sample(fillers, int(len(fillers) * share)):
        tags.set_tag(
            f"{table_id}.c{rng.randrange(FILLER_COLUMNS)}",
            "pii",
            [rng.choice(["L2", "L3", "L4"])],
            by="bench",
        )
        seeded += 1
    return seeded


class Pipeline:
    """What a check costs without the grants (the decision is an in-memory match over them)."""

    def __init__(self, graph: FalkorDBStore, tags: GraphTagStore, policy) -> None:
        self.graph, self.tags, self.policy = graph, tags, policy
        self.rules = policy.protection.rules if policy.protection else []
        #: queries the check masked at least one output of (so the rewrite is timed too)
        self.masked: set[str] = set()

    def mask_of(self, column_tags: dict) -> str | None:
        for rule in self.rules:
            value = column_tags.get(rule.tag)
            levels = getattr(value, "values", value) or []
            if any(level in rule.levels for level in levels):
                return rule.mask
        return None

    def __call__(self, sql: str, dialect: str) -> str:
        catalog = catalog_for(sql, self.graph.catalog_entries, dialect=dialect)
        points = query_points(sql, catalog, dialect=dialect)
        sources = sorted({s.column for c in points.columns for s in c.sources})
        found = self.tags.current_tags(sources) if sources else {}
        masks = {}
        for output in points.columns:
            for source in output.sources:
                mask = self.mask_of(found.get(source.column, {}))
                if mask is not None and source.kind == "direct" and not source.functions:
                    masks[output.position] = mask
                    break
        if masks:
            self.masked.add(sql)
        return masked_query(sql, points.columns, masks, dialect=dialect)


BENCH_USER = "bench_analyst"


def authz_service(
    graph: FalkorDBStore, policy, catalog: Catalog, reuse_seconds: float, keep_analyses: bool = False
):
    """AuthzService with a user holding select on every database and unmask on pii<=L2."""
    try:
        from watershed.api.service.accounts.rights import Me
        from watershed.api.service.authz import AuthzService
        from watershed.graph.authz import Grant
    except ImportError:
        return None
    service = AuthzService(graph, policy, reuse_seconds=reuse_seconds, keep_analyses=keep_analyses)
    admin = Me(name="bench", role="admin")
    service.grants.add_role(admin, "analyst")
    service.grants.assign(admin, "analyst", "user", BENCH_USER)
    for database in sorted({t.split(".")[0] for t in catalog.tables} - {"filler"}):
        service.grants.grant(admin, Grant(id="", role="analyst", actions=["select"], database=database))
    service.grants.grant(admin, Grant(id="", role="analyst", actions=["unmask"], tag="pii<=L2"))
    return service


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - began)
    return best


def measure(name: str, queries: list[str], dialect: str, check, repeat: int) -> dict:
    parse_ms, check_ms, failed = [], [], []
    gc.disable()
    try:
        for index, sql in enumerate(queries):
            try:
                check(sql, dialect)
            except QueryError as exc:
                failed.append({"query": index + 1, "error": str(exc)[:200]})
                continue
            parse_ms.append(1000 * best_of(lambda s=sql: sqlglot.parse_one(s, read=dialect), repeat))
            check_ms.append(1000 * best_of(lambda s=sql: check(s, dialect), repeat))
            gc.collect()
    finally:
        gc.enable()
    ratios = [c / p for c, p in zip(check_ms, parse_ms, strict=True)]
    measured = [i for i in range(len(queries)) if not any(f["query"] == i + 1 for f in failed)]
    worst = sorted(zip(ratios, measured, parse_ms, check_ms, strict=True), reverse=True)[:5]
    result = {
        "queries": len(queries),
        "measured": len(check_ms),
        "failed": failed,
        "parse_ms": {"p50": percentile(parse_ms, 0.5), "p99": percentile(parse_ms, 0.99)},
        "check_ms": {"p50": percentile(check_ms, 0.5), "p99": percentile(check_ms, 0.99)},
        "ratio_p50": percentile(check_ms, 0.5) / percentile(parse_ms, 0.5),
        "ratio_p99": percentile(check_ms, 0.99) / percentile(parse_ms, 0.99),
        "per_query_ratio_p50": percentile(ratios, 0.5),
        "per_query_ratio_p99": percentile(ratios, 0.99),
        "slowest_per_query": [
            {"query": i + 1, "ratio": round(r, 2), "parse_ms": round(p, 3), "check_ms": round(c, 3)}
            for r, i, p, c in worst
        ],
    }
    print(
        f"{name}: {result['measured']}/{len(queries)} queries  parse p50 {result['parse_ms']['p50']:.2f} ms"
        f" p99 {result['parse_ms']['p99']:.2f} ms  check p50 {result['check_ms']['p50']:.2f} ms"
        f" p99 {result['check_ms']['p99']:.2f} ms  ratio p50 {result['ratio_p50']:.2f}x"
        f" p99 {result['ratio_p99']:.2f}x  per query p50 {result['per_query_ratio_p50']:.2f}x"
        f" p99 {result['per_query_ratio_p99']:.2f}x"
    )
    return result


#: the check's stages, as the profile names them (file:line(function) ends with these)
STAGES = {
    "parse_query": "points.py",
    "catalog_for": "points.py",
    "query_points": "points.py",
    "join_decisions": "points.py",
    "current_tags": "graph_store.py",
    "decide": "decide.py",
    "output_masks": "masking.py",
    "masked_query": "rewrite.py",
    "record_decision": "grants.py",
    "catalog_entries": "store.py",
    "grants_of": "grants.py",
    # the check's one batched read of entries, tags, grants and admins (authz.reads)
    "read_for_check": "reads.py",
}


def profile(queries: list[str], dialect: str, check) -> dict:
    """One cProfile pass of `check` over `queries`: each stage's share of the checks' time and
    the functions with the most time of their own."""
    profiler = cProfile.Profile()
    profiler.enable()
    for sql in queries:
        with contextlib.suppress(QueryError):
            check(sql, dialect)
    profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    total = max(stats.total_tt, 1e-9)
    stages = {}
    for (path, _line, function), (_cc, _nc, _tt, cumulative, _callers) in stats.stats.items():
        if STAGES.get(function) and path.endswith(STAGES[function]):
            stages[function] = round(stages.get(function, 0.0) + cumulative / total, 3)
    own = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:15]
    return {
        "profiled_seconds": round(total, 3),
        "stage_share": dict(sorted(stages.items(), key=lambda item: -item[1])),
        "own_time_share": [
            {"function": f"{Path(path).name}:{line}({function})", "share": round(tt / total, 3)}
            for (path, line, function), (_cc, _nc, tt, _cum, _callers) in own
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--columns", type=int, default=1_000_000)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the results go")
    parser.add_argument(
        "--skip-pipeline", action="store_true", help="measure the service modes only (a shorter run)"
    )
    parser.add_argument(
        "--tag-share", type=float, default=0.2, help="share of filler tables with a pii column"
    )
    parser.add_argument(
        "--modes",
        default="service,service_repeat,service_fresh",
        help="the service modes to measure, comma-separated (a shorter run: service,service_fresh)",
    )
    args = parser.parse_args()
    policy = default_policy()
    with tempfile.TemporaryDirectory(prefix="authz-bench-") as tmp:
        work = Path(tmp)
        catalog, task_queries = build_catalog(args.columns, args.tasks, work / "warehouse")
        total_columns = sum(len(t.all_columns) for t in catalog.tables.values())
        spec = ServerSpec("falkordb", "127.0.0.1", free_port(), work / "falkordb", with_falkordb=True)
        start(spec)
        try:
            graph = FalkorDBStore(spec.host, spec.port, graph="authz_bench")
            graph.ensure_schema()
            began = time.perf_counter()
            graph.upsert_catalog(catalog)
            load_seconds = time.perf_counter() - began
            tags = GraphTagStore(graph, policy)
            seeded = seed_tags(tags, catalog, random.Random(7), args.tag_share)
            print(
                f"graph: {len(catalog.tables)} tables, {total_columns} columns in {load_seconds:.1f}s; {seeded} tags"
            )
            pipeline = Pipeline(graph, tags, policy)
            tpcds = read_queries(CORPORA / "tpcds.sql")
            results = {
                "command": "bench/authz_bench.py " + " ".join(sys.argv[1:]),
                "machine": "shared with other sessions' work while it ran: ratios are within one run",
                "graph": {"tables": len(catalog.tables), "columns": total_columns, "tags": seeded},
                "load_seconds": round(load_seconds, 1),
                "repeat": args.repeat,
            }
            if not args.skip_pipeline:
                results["pipeline"] = {
                    "what": "catalog_for + query_points + current_tags + masks + masked_query (no grants)",
                    "tpcds": measure("pipeline tpcds", tpcds, "spark", pipeline, args.repeat),
                    "generated": measure("pipeline generated", task_queries, "spark", pipeline, args.repeat),
                    "queries_with_masks": len(pipeline.masked),
                }
            for name, reuse, keep, what in (
                (
                    "service",
                    60.0,
                    False,
                    "reads kept under the data stamp (the API's default), the text analysed "
                    "(parse, points) on every check: a query text not seen under the stamp",
                ),
                (
                    "service_repeat",
                    60.0,
                    True,
                    "reads and the text's analysis kept under the data stamp: the same text checked again",
                ),
                ("service_fresh", 0.0, False, "every read from the graph"),
            ):
                if name not in args.modes.split(","):
                    continue
                service = authz_service(graph, policy, catalog, reuse, keep)
                if service is None:
                    break

                def check(sql: str, dialect: str, service=service) -> object:
                    rewrite = service.rewrite(BENCH_USER, sql, dialect)
                    if not rewrite.decision.allowed:
                        raise QueryError(rewrite.decision.error or "denied")
                    return rewrite

                results[name] = {
                    "what": f"AuthzService.rewrite: points, grants decision, masks, rewrite, audit entry; {what}",
                    "tpcds": measure(f"{name} tpcds", tpcds, "spark", check, args.repeat),
                    "generated": measure(f"{name} generated", task_queries, "spark", check, args.repeat),
                    "profile": profile([*tpcds, *task_queries], "spark", check),
                }
            graph.close()
        finally:
            stop(spec)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
