"""Writes tests/ingest/points_snapshot/cases.json: statements with their catalogs and, for each,
a digest of what `query_points` answers (or its error), for test_points_snapshot.py to compare.

    .venv/bin/python tests/ingest/points_snapshot/make.py [--record recorded.jsonl]

The statements: TPC-DS's 99 and TPC-H's 22 queries (bench/corpora, read there by the test), the
SELECT part of the generated warehouse's 200 tasks (as bench/authz_bench.py checks them), every
case of the lineage suites (tests/ingest/cases, tests/ingest/lineage_cases) and, with
`--record`, the calls record.py recorded in a test run (texts over 50,000 characters left out:
the limits tests' deep statements, checked by their own tests). Every text and catalog except
the vendored corpora's is stored, so the snapshot does not move when a suite does. Run it with
the code whose answers are the reference (it was run on the code before the points walk's
speed-up, issue 41)."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import sqlglot
import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from bench.lineage_bench import CORPORA, read_queries  # noqa: E402
from watershed.graph.catalog import Catalog, CatalogColumn, CatalogTable  # noqa: E402
from watershed.graph.errors import WatershedError  # noqa: E402
from watershed.ingest.generator import RUN_DATE, generate_warehouse  # noqa: E402
from watershed.ingest.points import query_points  # noqa: E402

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases.json"
SUITES = (ROOT / "tests" / "ingest" / "cases", ROOT / "tests" / "ingest" / "lineage_cases")
LONGEST = 50_000


def corpus_catalog(name: str) -> Catalog:
    """A vendored TPC corpus's tables in `default`, as bench/authz_bench.py loads them."""
    schema = json.loads((CORPORA / f"{name}_schema.json").read_text())
    return Catalog(
        tables={
            f"default.{table}": CatalogTable(
                name=f"default.{table}", columns=[CatalogColumn(name=c, type=t) for c, t in columns.items()]
            )
            for table, columns in schema.items()
        }
    )


def corpus_queries(name: str) -> list[str]:
    return read_queries(CORPORA / f"{name}.sql")


def answer(case: dict, catalog: Catalog) -> dict:
    """What `query_points` answers for a case: the digest of its points as JSON (every list in
    its order) with two counts to tell a changed case at a glance, or its error."""
    try:
        points = query_points(
            case["sql"],
            catalog,
            dialect=case["dialect"],
            default_database=case["default_database"],
            variables=case["variables"],
        )
    except WatershedError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    text = json.dumps(points.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return {
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "outputs": len(points.columns),
        "sources": sum(len(c.sources) for c in points.columns),
    }


def resolved(cases: list[dict], catalogs: dict[str, dict]):
    """(case, its inputs, its catalog) for every case: a corpus case's text and catalog read
    from bench/corpora, each catalog built once."""
    corpora = {name: (corpus_catalog(name), corpus_queries(name)) for name in ("tpcds", "tpch")}
    built = {key: Catalog.model_validate(raw) for key, raw in catalogs.items()}
    for case in cases:
        if "corpus" in case:
            catalog, queries = corpora[case["corpus"]]
            sql = queries[case["query"] - 1]
            yield (
                case,
                {"sql": sql, "dialect": "spark", "default_database": "default", "variables": None},
                catalog,
            )
        else:
            yield case, case, built[case["catalog"]]


def generated_cases(catalogs: dict[str, dict]) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="points-snapshot-") as tmp:
        work = Path(tmp)
        generate_warehouse(work, tasks=200, seed=7)
        raw = json.loads((work / "catalog.json").read_text())
        lines = (work / "tasks.jsonl").read_text().splitlines()
    key = catalog_key(Catalog.from_dict(raw).model_dump(mode="json"), catalogs)
    cases = []
    for number, line in enumerate(lines, start=1):
        sql = json.loads(line)["sql"].replace("${date}", RUN_DATE)
        try:
            statement = sqlglot.parse_one(sql, read="hive")
        except sqlglot.errors.SqlglotError:
            continue  # the generator's deliberately broken tasks
        query = (
            statement.expression if isinstance(statement, sqlglot.exp.Insert | sqlglot.exp.Create) else None
        )
        if not isinstance(query, sqlglot.exp.Query):
            continue
        if isinstance(statement, sqlglot.exp.Insert) and statement.args.get("with_") is not None:
            query.set("with_", statement.args["with_"])
        cases.append(plain(f"generated::task{number}", query.sql("spark"), "spark", key))
    return cases


def suite_cases(catalogs: dict[str, dict]) -> list[dict]:
    cases = []
    for folder in SUITES:
        for path in sorted(folder.glob("*.yaml")):
            data = yaml.safe_load(path.read_text())
            for case in data["cases"]:
                raw = case["catalog"] if "catalog" in case else data.get("catalog")
                catalog = Catalog.from_dict(raw) if raw is not None else Catalog()
                entry = plain(
                    f"{folder.name}/{path.stem}::{case['name']}",
                    case["sql"],
                    case.get("dialect", "hive"),
                    catalog_key(catalog.model_dump(mode="json"), catalogs),
                )
                entry["variables"] = case.get("vars") or None
                cases.append(entry)
    return cases


def recorded_cases(path: Path, catalogs: dict[str, dict]) -> list[dict]:
    cases, seen = [], set()
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        record = json.loads(line)
        if len(record["sql"]) > LONGEST:
            continue
        entry = plain(
            f"recorded::{number}", record["sql"], record["dialect"], catalog_key(record["catalog"], catalogs)
        )
        entry["default_database"] = record["default_database"]
        entry["variables"] = record["variables"]
        identity = json.dumps({k: v for k, v in entry.items() if k != "name"}, sort_keys=True)
        if identity not in seen:
            seen.add(identity)
            cases.append(entry)
    return cases


def plain(name: str, sql: str, dialect: str, catalog: str) -> dict:
    return {
        "name": name,
        "sql": sql,
        "dialect": dialect,
        "default_database": "default",
        "variables": None,
        "catalog": catalog,
    }


def catalog_key(dumped: dict, catalogs: dict[str, dict]) -> str:
    key = hashlib.sha256(json.dumps(dumped, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    catalogs.setdefault(key, dumped)
    return key


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--record", type=Path, help="record.py's JSON lines from a test run")
    args = parser.parse_args()
    catalogs: dict[str, dict] = {}
    cases = []
    for corpus in ("tpcds", "tpch"):
        for number, _sql in enumerate(corpus_queries(corpus), start=1):
            cases.append({"name": f"{corpus}::q{number}", "corpus": corpus, "query": number})
    cases.extend(generated_cases(catalogs))
    cases.extend(suite_cases(catalogs))
    if args.record is not None:
        cases.extend(recorded_cases(args.record, catalogs))
    for case, inputs, catalog in resolved(cases, catalogs):
        case["expected"] = answer(inputs, catalog)
    # one line per catalog and per case: a changed answer is a one-line diff
    lines = [
        '{"catalogs": {',
        ",\n".join(f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in catalogs.items()),
        '}, "cases": [',
        ",\n".join(json.dumps(c, sort_keys=True) for c in cases),
        "]}",
    ]
    CASES.write_text("\n".join(lines) + "\n")
    errors = sum("error" in c["expected"] for c in cases)
    print(f"wrote {CASES}: {len(cases)} cases ({errors} errors), {len(catalogs)} catalogs")


if __name__ == "__main__":
    main()
