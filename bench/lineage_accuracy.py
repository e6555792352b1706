"""Lineage accuracy against the project's case suites: Watershed's extractor beside its peers.

    .venv/bin/python bench/lineage_accuracy.py [--family NAME] [--misses]

Reads every case of tests/ingest/lineage_cases/ and tests/ingest/cases/ (formats: the top of
tests/ingest/test_lineage_suite.py and tests/ingest/README.md; a family is the file name, the same
family in both folders is one family) and runs on each case's SQL:
  (a) Watershed's extractor, `extract_lineage` with the case's catalog, variables and dialect;
  (b) sqlglot's lineage done the best-practice way: parse each statement, `qualify` it once with
      the catalog as a `MappingSchema` (unqualified tables in the current database, `USE` followed),
      then `sqlglot.lineage.lineage` for every output column reusing that qualified tree (the
      same call as bench/lineage_bench.py). Its tables are the base tables of the qualified tree's
      scopes (for UPDATE/MERGE/DELETE, which `lineage` does not take, the statement's tables);
  (c) openlineage-sql (`openlineage_sql.parse`, statement by statement) when it is installed.
The peers get the SQL with the task's variables substituted (the extractor's own substitution), as
a user renders a template before handing it over; a peer's statement that fails adds nothing.
Output columns of an INSERT name target columns by the INSERT's column list, else by position
against the catalog's columns of the target when their counts match (Hive's rule), else by name;
a leading `spark_catalog.` is dropped from peers' names, as the extractor does by default.

Scored against each case's `expect`, micro-averaged over the cases that give the dimension:
  tables:  reads ∪ writes (only the roles the case gives), precision / recall / exact-match rate;
  columns: (target column, source column) pairs of `columns` (every target) or `columns_include`
           (the listed targets only); kinds and keys ignored. The row "watershed strict" also
           requires the extractor's kind and key of each source to match.
Cases marked xfail (known extractor gaps) are scored like the rest. Results (per family, overall
and each case's misses) go to bench/results/lineage_accuracy.json.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sqlglot  # noqa: E402
import yaml  # noqa: E402
from sqlglot import exp  # noqa: E402
from sqlglot.errors import SqlglotError  # noqa: E402
from sqlglot.optimizer.scope import build_scope  # noqa: E402
from sqlglot.schema import MappingSchema  # noqa: E402
from sqlglot.tokens import TokenType  # noqa: E402

from bench.lineage_bench import CORPORA, query_of, read_queries, sqlglot_all_columns  # noqa: E402
from watershed.graph import ids  # noqa: E402
from watershed.graph.catalog import Catalog  # noqa: E402
from watershed.graph.lineage import SqlTask  # noqa: E402
from watershed.ingest.extract import extract_lineage  # noqa: E402
from watershed.ingest.variables import script_variables, substitute  # noqa: E402

try:
    import openlineage_sql
except ImportError:  # an optional peer: the bench says it is missing and runs without it
    openlineage_sql = None

SUITES = [ROOT / "tests" / "ingest" / "lineage_cases", ROOT / "tests" / "ingest" / "cases"]
OUT = ROOT / "bench" / "results" / "lineage_accuracy.json"
DEFAULT_CATALOG = "spark_catalog"
#: openlineage-sql's names for the case dialects it has under another name.
OPENLINEAGE_DIALECTS = {"spark": "databricks", "tsql": "mssql", "spark2": "databricks"}
_USE = re.compile(r"^\s*use\s+(?:database\s+|schema\s+)?`?([\w.]+)`?\s*$", re.IGNORECASE)


@dataclass
class Case:
    suite: str
    family: str
    name: str
    sql: str
    dialect: str
    variables: dict[str, str]
    catalog: dict | None
    expect: dict
    xfail: bool


@dataclass
class Prediction:
    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    pairs: set[tuple[str, str]] = field(default_factory=set)
    #: (target, source#key, kind): only the extractor gives kinds.
    strict: set[tuple[str, str, str]] | None = None
    failures: list[str] = field(default_factory=list)


def load_cases() -> list[Case]:
    cases = []
    for folder in SUITES:
        for path in sorted(folder.glob("*.yaml")):
            data = yaml.safe_load(path.read_text())
            family = data.get("family", path.stem)
            for raw in data["cases"]:
                # `vars: null` on a case runs it without any variable, the file's included.
                variables = (
                    {}
                    if "vars" in raw and raw["vars"] is None
                    else {**(data.get("vars") or {}), **(raw.get("vars") or {})}
                )
                cases.append(
                    Case(
                        suite=folder.name,
                        family=family,
                        name=raw["name"],
                        sql=raw["sql"],
                        dialect=raw.get("dialect", "hive"),
                        variables={str(k): str(v) for k, v in variables.items()},
                        catalog=raw["catalog"] if "catalog" in raw else data.get("catalog"),
                        expect=raw.get("expect") or {},
                        xfail=bool(raw.get("xfail")),
                    )
                )
    return cases


#: TPC table names that a query uses only as an alias or a column name, never as a table: read
#: in the SQL (TPC-DS 49: `web.item`, `store.item`; TPC-DS 51: `FULL OUTER JOIN store_v1 store`).
NOT_TABLES = {("tpcds", 49): {"item", "store"}, ("tpcds", 51): {"store"}}


def public_cases() -> list[Case]:
    """The vendored TPC-H/TPC-DS queries as table-level cases (bench/corpora/).

    Each query runs as `INSERT OVERWRITE TABLE bench.q<N> <query>` (as in bench/lineage_bench.py).
    Its expected reads are the TPC tables its text names (identifier tokens equal to a table of
    the TPC schema), less the names NOT_TABLES lists after reading the query; CTE names are not
    TPC table names. Neither the extractor nor a peer is consulted.
    """
    cases = []
    for corpus in ("tpch", "tpcds"):
        schema = json.loads((CORPORA / f"{corpus}_schema.json").read_text())
        catalog = {"tables": {f"default.{t}": {"columns": list(cols)} for t, cols in schema.items()}}
        tokenizer = sqlglot.Dialect.get_or_raise("hive")
        for n, query in enumerate(read_queries(CORPORA / f"{corpus}.sql"), start=1):
            named = {
                token.text.lower()
                for token in tokenizer.tokenize(query)
                if token.token_type == TokenType.VAR and token.text.lower() in schema
            }
            reads = sorted(f"default.{t}" for t in named - NOT_TABLES.get((corpus, n), set()))
            cases.append(
                Case(
                    suite="bench/corpora",
                    family=corpus,
                    name=f"q{n}",
                    sql=f"INSERT OVERWRITE TABLE bench.q{n} {query}",
                    dialect="hive",
                    variables={},
                    catalog=catalog,
                    expect={"reads": reads, "writes": [f"bench.q{n}"]},
                    xfail=False,
                )
            )
    return cases


# --- expectations -------------------------------------------------------------------------


def _source(spec: str | dict) -> tuple[str, str | None, str]:
    """(column, key, kind) of a source written `db.t.col[#key] kind [f1+f2]` or in the long form."""
    if isinstance(spec, dict):
        return spec["column"], spec.get("key"), spec["kind"]
    parts = spec.split()
    column, _, key = parts[0].partition("#")
    return column, key or None, parts[1]


def expected_tables(expect: dict) -> set[str] | None:
    if "reads" not in expect and "writes" not in expect:
        return None
    return set(expect.get("reads") or []) | set(expect.get("writes") or [])


def predicted_tables(expect: dict, prediction: Prediction) -> set[str]:
    """The predicted tables of the roles the case gives (a case giving only writes scores writes)."""
    tables: set[str] = set()
    if "reads" in expect:
        tables |= prediction.reads
    if "writes" in expect:
        tables |= prediction.writes
    return tables


def expected_columns(expect: dict) -> tuple[dict[str, list], bool] | None:
    """The expected sources by target, and whether every written target is given (`columns`)."""
    if "columns" in expect:
        return expect["columns"] or {}, True
    if "columns_include" in expect:
        return expect["columns_include"] or {}, False
    return None


def expected_pairs(columns: dict[str, list]) -> set[tuple[str, str]]:
    return {(target, _source(s)[0]) for target, specs in columns.items() for s in specs or []}


def expected_strict(columns: dict[str, list]) -> set[tuple[str, str, str]]:
    out = set()
    for target, specs in columns.items():
        for spec in specs or []:
            column, key, kind = _source(spec)
            out.add((target, f"{column}#{key}" if key else column, kind))
    return out


# --- (a) the extractor --------------------------------------------------------------------


_catalogs: dict[int, Catalog] = {}


def _catalog(raw: dict | None) -> Catalog | None:
    if raw is None:
        return None
    if id(raw) not in _catalogs:
        _catalogs[id(raw)] = Catalog.from_dict(raw)
    return _catalogs[id(raw)]


def run_watershed(case: Case) -> Prediction:
    task = SqlTask(task_id=case.name, sql=case.sql, dialect=case.dialect, vars=case.variables)
    result = extract_lineage(task, _catalog(case.catalog))
    prediction = Prediction(
        reads={r.table for r in result.reads},
        writes=set(result.writes),
        pairs={(c.target, s.column) for c in result.columns for s in c.sources},
        strict={
            (c.target, f"{s.column}#{s.key}" if s.key else s.column, s.kind)
            for c in result.columns
            for s in c.sources
        },
    )
    prediction.failures = [e.message for e in result.errors]
    return prediction


# --- what the peers share: rendered SQL, statements, names --------------------------------


def rendered(case: Case) -> str:
    return substitute(case.sql, script_variables(case.sql, case.variables))


def statements(sql: str, dialect: str) -> list[str]:
    """The statement texts of a script, cut where the dialect's tokenizer sees `;`."""
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except (SqlglotError, ValueError):
        return [sql.strip()] if sql.strip() else []
    out, start = [], 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            out.append(sql[start : token.start].strip())
            start = token.end + 1
    out.append(sql[start:].strip())
    return [s for s in out if s]


def table_id(parts: list[str]) -> str:
    parts = [p.lower() for p in parts if p]
    if len(parts) == 3 and parts[0] == DEFAULT_CATALOG:
        parts = parts[1:]
    return ids.join(*parts)


def _sqlglot_table_id(table: exp.Table, db: str) -> str:
    return table_id([table.catalog, table.db or db, table.name])


def _current_db(case: Case) -> str:
    catalog = _catalog(case.catalog)
    return ((catalog and catalog.default_database) or "default").lower()


# --- (b) sqlglot --------------------------------------------------------------------------


_schemas: dict[int, MappingSchema] = {}


def _schema(case: Case) -> MappingSchema:
    key = id(case.catalog)
    if key not in _schemas:
        catalog = _catalog(case.catalog)
        mapping: dict[str, dict] = {}
        for name, table in (catalog.tables if catalog else {}).items():
            parts = ids.split(name)
            if len(parts) != 2:
                continue  # MappingSchema wants one depth; three-part tables are rare in the cases
            columns = [*table.columns, *table.partitioned_by]
            mapping.setdefault(parts[0], {})[parts[1]] = {c.name: c.type for c in columns}
        try:
            _schemas[key] = MappingSchema(mapping, dialect=case.dialect, normalize=False)
        except (SqlglotError, ValueError):
            # A type sqlglot cannot read: the names are what lineage needs.
            plain = {
                db: {t: dict.fromkeys(cols, "string") for t, cols in ts.items()} for db, ts in mapping.items()
            }
            _schemas[key] = MappingSchema(plain, dialect=case.dialect, normalize=False)
    return _schemas[key]


def _target_columns(target: exp.Expression, outputs: list[str], case: Case, db: str) -> tuple[str, list[str]]:
    """The target table id and the column each output goes to (the INSERT's rule, see the doc)."""
    names = None
    if isinstance(target, exp.Schema):
        names = [c.name.lower() for c in target.expressions]
        target = target.this
    table = _sqlglot_table_id(target, db)
    catalog = _catalog(case.catalog)
    known = catalog.get(table) if catalog else None
    if names is None and known is not None:
        partition = target.args.get("partition")
        dynamic = [
            e.name.lower()
            for e in (partition.expressions if partition is not None else [])
            if isinstance(e, exp.Column)
        ]
        by_position = [c.name for c in known.columns] + dynamic
        if len(by_position) == len(outputs):
            names = by_position
    if names is None or len(names) != len(outputs):
        names = [o.lower() for o in outputs]
    return table, names


def _query_pairs(
    query: exp.Expression, target: exp.Expression | None, case: Case, db: str, prediction: Prediction
) -> None:
    schema = _schema(case)
    try:
        qualified, by_column = sqlglot_all_columns(query, schema, case.dialect, db=db)
    except (SqlglotError, RecursionError, KeyError, ValueError, AttributeError, TypeError) as exc:
        prediction.failures.append(f"sqlglot: {type(exc).__name__}: {exc}")
        prediction.reads |= _plain_tables(query, db)
        return
    for scope in build_scope(qualified).traverse():
        for source in scope.sources.values():
            if isinstance(source, exp.Table) and source.name:
                prediction.reads.add(_sqlglot_table_id(source, db))
    if target is None:
        return
    outputs = list(by_column)
    table, names = _target_columns(target, outputs, case, db)
    for output, column in zip(outputs, names, strict=True):
        for node in by_column[output].walk():
            if isinstance(node.expression, exp.Table):
                source = _sqlglot_table_id(node.expression, db)
                prediction.pairs.add((ids.child(table, column), ids.child(source, _leaf_column(node.name))))


def _leaf_column(name: str) -> str:
    """The column of a lineage leaf, whose name is `table.column` as sqlglot writes SQL (quotes kept)."""
    try:
        return exp.to_column(name).name.lower()
    except (SqlglotError, TypeError):  # `t.*` parses to a star
        return name.rsplit(".", 1)[-1].strip('"').lower()


def _plain_tables(statement: exp.Expression, db: str) -> set[str]:
    ctes = {c.alias_or_name.lower() for c in statement.find_all(exp.CTE)}
    return {
        _sqlglot_table_id(t, db)
        for t in statement.find_all(exp.Table)
        if t.name and not (not t.db and t.name.lower() in ctes)
    }


def _is_temporary_view(statement: exp.Expression) -> bool:
    return (
        isinstance(statement, exp.Create)
        and str(statement.args.get("kind") or "").upper() == "VIEW"
        and isinstance(statement.this, exp.Table)
        and isinstance(statement.expression, exp.Query)
        and statement.find(exp.TemporaryProperty) is not None
    )


def _expand_views(statement: exp.Expression, views: dict[str, exp.Query]) -> None:
    """Put each temporary view's query in place of its (unqualified) name, as `sources=` does."""
    if not views:
        return
    for table in list(statement.find_all(exp.Table)):
        query = views.get(table.name.lower())
        if query is not None and not table.db and table.parent is not None:
            if isinstance(table.parent, (exp.Schema, exp.Insert, exp.Create, exp.Drop)):
                continue  # a target, not a source
            table.replace(query.copy().subquery(table.alias_or_name))


def run_sqlglot(case: Case) -> Prediction:
    prediction = Prediction()
    db = _current_db(case)
    views: dict[str, exp.Query] = {}
    for text in statements(rendered(case), case.dialect):
        try:
            statement = sqlglot.parse_one(text, read=case.dialect)
        except (SqlglotError, ValueError, RecursionError) as exc:
            prediction.failures.append(f"sqlglot parse: {type(exc).__name__}")
            continue
        if isinstance(statement, exp.Use):
            db = statement.this.name.lower() if statement.this else db
            continue
        _expand_views(statement, views)
        if _is_temporary_view(statement):
            # sqlglot's way to see through a view is `lineage(..., sources=)`: the view's query
            # stands in for its name in later statements, and the view is no table.
            query = statement.expression
            ctes = {c.alias_or_name.lower() for c in query.find_all(exp.CTE)}
            for table in query.find_all(exp.Table):  # its names belong to the database of now
                if not table.db and table.name.lower() not in ctes | set(views):
                    table.set("db", exp.to_identifier(db))
            views[statement.this.name.lower()] = query
            continue
        if isinstance(statement, exp.Drop) and isinstance(statement.this, exp.Table):
            views.pop(statement.this.name.lower(), None)
        inserts: list[exp.Insert | exp.Create] = []
        if isinstance(statement, exp.MultitableInserts):
            # Hive's FROM src INSERT … SELECT … INSERT …: each SELECT reads the shared FROM.
            for insert in statement.expressions:
                select = insert.expression
                if isinstance(select, exp.Select) and not select.args.get("from_"):
                    select.set("from_", exp.From(this=statement.args["source"].copy()))
                inserts.append(insert)
        elif isinstance(statement, (exp.Insert, exp.Create)):
            inserts.append(statement)
        elif isinstance(statement, exp.Query):
            _query_pairs(statement, None, case, db, prediction)
            continue
        elif isinstance(statement, (exp.Update, exp.Merge, exp.Delete)):
            # `lineage` takes queries only: the statement's tables, its target written.
            target = statement.this
            if isinstance(target, exp.Table):
                prediction.writes.add(_sqlglot_table_id(target, db))
            prediction.reads |= _plain_tables(statement, db) - prediction.writes
            continue
        for insert in inserts:
            target = insert.this
            query = insert.expression
            table = target.this if isinstance(target, exp.Schema) else target
            if isinstance(table, exp.Table):
                prediction.writes.add(_sqlglot_table_id(table, db))
            else:
                target = None  # a directory or a function: no table to name columns in
            if isinstance(query, exp.Query):
                _query_pairs(query_of(insert), target, case, db, prediction)
    return prediction


# --- (c) openlineage-sql ------------------------------------------------------------------


def _ol_id(meta: Any) -> str:
    return table_id([meta.database or "", meta.schema or "", meta.name])


def run_openlineage(case: Case) -> Prediction:
    prediction = Prediction()
    db = _current_db(case)
    dialect = OPENLINEAGE_DIALECTS.get(case.dialect, case.dialect)
    for text in statements(rendered(case), case.dialect):
        use = _USE.match(text)
        if use:
            db = use.group(1).lower()
            continue
        try:
            meta = openlineage_sql.parse([text], dialect=dialect, default_schema=db)
        except BaseException as exc:  # the Rust side raises its own types; a failure adds nothing
            # (a Rust panic arrives as pyo3's PanicException, a BaseException: Snowflake INSERT ALL)
            if isinstance(exc, KeyboardInterrupt | SystemExit | GeneratorExit):
                raise
            prediction.failures.append(f"openlineage: {type(exc).__name__}")
            continue
        if meta is None:
            continue
        prediction.failures += [str(e.message) for e in meta.errors]
        writes = {_ol_id(t) for t in meta.out_tables}
        prediction.reads |= {_ol_id(t) for t in meta.in_tables}
        prediction.writes |= writes
        if len(writes) != 1:
            continue  # a column's target table is known only when the statement writes one
        (target,) = writes
        for lineage in meta.column_lineage:
            for source in lineage.lineage:
                if source.origin is not None:
                    prediction.pairs.add(
                        (
                            ids.child(target, lineage.descendant.name.lower()),
                            ids.child(_ol_id(source.origin), source.name.lower()),
                        )
                    )
    return prediction


# --- scoring ------------------------------------------------------------------------------


@dataclass
class Tally:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    exact: int = 0
    cases: int = 0

    def add(self, expected: set, predicted: set) -> None:
        self.tp += len(expected & predicted)
        self.fp += len(predicted - expected)
        self.fn += len(expected - predicted)
        self.exact += expected == predicted
        self.cases += 1

    def scores(self) -> dict[str, float | int | None]:
        if not self.cases:
            return {"precision": None, "recall": None, "exact": None, "cases": 0}
        predicted, wanted = self.tp + self.fp, self.tp + self.fn
        return {
            # Nothing predicted and nothing wanted is right; nothing predicted of something wanted is not.
            "precision": self.tp / predicted if predicted else float(not wanted),
            "recall": self.tp / wanted if wanted else float(not predicted),
            "exact": self.exact / self.cases,
            "cases": self.cases,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
        }


def score(cases: list[Case], tools: dict[str, Any]) -> tuple[dict, list[dict]]:
    # tallies[family][tool][dimension]
    tallies: dict[str, dict[str, dict[str, Tally]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(Tally))
    )
    details = []
    for case in cases:
        case_id = f"{case.family}::{case.name}"
        detail: dict[str, Any] = {"case": case_id, "suite": case.suite}
        tables = expected_tables(case.expect)
        columns = expected_columns(case.expect)
        for tool, run in tools.items():
            prediction = run(case)
            misses: dict[str, Any] = {}
            for family in (case.family, "overall"):
                by_dimension = tallies[family][tool]
                if tables is not None:
                    got = predicted_tables(case.expect, prediction)
                    by_dimension["tables"].add(tables, got)
                if columns is not None:
                    wanted, every = columns
                    got_pairs = prediction.pairs
                    if not every:
                        got_pairs = {p for p in got_pairs if p[0] in wanted}
                    by_dimension["columns"].add(expected_pairs(wanted), got_pairs)
                    if prediction.strict is not None:
                        got_strict = prediction.strict
                        if not every:
                            got_strict = {p for p in got_strict if p[0] in wanted}
                        tallies[family][f"{tool} strict"]["columns"].add(expected_strict(wanted), got_strict)
            if tables is not None:
                got = predicted_tables(case.expect, prediction)
                if got != tables:
                    misses["tables"] = {"missing": sorted(tables - got), "extra": sorted(got - tables)}
            if columns is not None:
                wanted, every = columns
                want = expected_pairs(wanted)
                got_pairs = prediction.pairs if every else {p for p in prediction.pairs if p[0] in wanted}
                if got_pairs != want:
                    misses["columns"] = {
                        "missing": [f"{t} <- {s}" for t, s in sorted(want - got_pairs)],
                        "extra": [f"{t} <- {s}" for t, s in sorted(got_pairs - want)],
                    }
            if prediction.failures:
                misses["failures"] = prediction.failures[:3]
            if misses:
                detail[tool] = misses
        details.append(detail)
    results = {
        family: {
            tool: {dimension: tally.scores() for dimension, tally in dims.items()}
            for tool, dims in by_tool.items()
        }
        for family, by_tool in tallies.items()
    }
    return results, details


# --- output -------------------------------------------------------------------------------


def _cell(scores: dict | None, metric: str) -> str:
    value = (scores or {}).get(metric)
    return "   - " if value is None else f"{value:5.2f}"


def print_table(results: dict, tools: list[str]) -> list[str]:
    """The side-by-side table; returns the families where a peer beats the extractor."""
    families = [*sorted(f for f in results if f != "overall"), "overall"]
    head = f"{'family':<24}{'cases t/c':>10} "
    for tool in tools:
        head += f"| {tool[:35]:<35} "
    print(head)
    sub = f"{'':<24}{'':>10} " + "| tP    tR    tEx   cP    cR    cEx   " * len(tools)
    print(sub)
    behind = []
    for family in families:
        by_tool = results[family]
        first = by_tool.get(tools[0], {})
        counts = f"{first.get('tables', {}).get('cases', 0)}/{first.get('columns', {}).get('cases', 0)}"
        line = f"{family:<24}{counts:>10} "
        for tool in tools:
            dims = by_tool.get(tool, {})
            t, c = dims.get("tables"), dims.get("columns")
            line += (
                "| " + " ".join(_cell(d, m) for d in (t, c) for m in ("precision", "recall", "exact")) + " "
            )
        if family == "overall":
            print("-" * len(line))
        print(line)
        ours = by_tool.get(tools[0], {})
        for peer in tools[1:]:
            if peer.startswith(tools[0]):
                continue
            for dimension in ("tables", "columns"):
                for metric in ("precision", "recall"):
                    mine = (ours.get(dimension) or {}).get(metric)
                    theirs = (by_tool.get(peer, {}).get(dimension) or {}).get(metric)
                    if mine is not None and theirs is not None and theirs > mine:
                        behind.append(f"{family}: {peer} {dimension} {metric} {theirs:.2f} > {mine:.2f}")
    return behind


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--family", help="only this family")
    parser.add_argument("--misses", action="store_true", help="print each case the extractor gets wrong")
    args = parser.parse_args()

    cases = load_cases()
    if args.family:
        cases = [c for c in cases if c.family == args.family]
    tools: dict[str, Any] = {"watershed": run_watershed, "sqlglot": run_sqlglot}
    if openlineage_sql is not None:
        tools["openlineage-sql"] = run_openlineage
        peer_note = f"openlineage-sql {_version('openlineage-sql')}"
    else:
        peer_note = "openlineage-sql not installed (pip install openlineage-sql): its column is left out"
    results, details = score(cases, tools)
    columns = ["watershed", "watershed strict", *list(tools)[1:]]

    xfails = sum(c.xfail for c in cases)
    print(
        f"{len(cases)} cases ({xfails} marked xfail) from "
        + ", ".join(str(s.relative_to(ROOT)) for s in SUITES)
        + f"; sqlglot {sqlglot.__version__}; {peer_note}"
    )
    print(
        "t = tables (reads ∪ writes), c = (target, source) column pairs; P precision, R recall, Ex exact-match"
    )
    print("'watershed strict' also requires each source's kind and key\n")
    behind = print_table(results, columns)
    overall = results.get("overall", {}).get("watershed", {})
    goal = all(
        (overall.get(d) or {}).get(m, 0) >= 0.97
        for d in ("tables", "columns")
        for m in ("precision", "recall")
    )
    print(f"\nwatershed overall P/R >= 0.97 on tables and columns: {'yes' if goal else 'no'}")
    print(f"families where a peer is ahead ({len(behind)}):" + ("" if behind else " none"))
    for line in behind:
        print(f"  {line}")
    public, public_details = score(public_cases(), tools)
    print("\npublic SQL, table level (reads from the query text, see public_cases): TPC-H 22, TPC-DS 99")
    print_table(public, columns)
    if args.misses:
        print("\nwatershed misses:")
        for detail in details + public_details:
            if "watershed" in detail:
                print(f"  {detail['case']}: {json.dumps(detail['watershed'])}")

    OUT.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "cases": len(cases),
        "xfail_cases": xfails,
        "family_filter": args.family,
        "sqlglot": sqlglot.__version__,
        "openlineage_sql": _version("openlineage-sql") if openlineage_sql is not None else None,
        "results": results,
        "watershed_goal_met": goal,
        "peer_ahead": behind,
        "misses": [d for d in details if len(d) > 2],
        "public": public,
        "public_misses": [d for d in public_details if len(d) > 2],
    }
    OUT.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
    print(f"\nresults written to {OUT.relative_to(ROOT)}")


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    main()
