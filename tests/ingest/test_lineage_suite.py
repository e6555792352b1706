"""The lineage suite: expected lineage as data, one YAML file per family under lineage_cases/.

Format of a file:

    catalog: {tables: {...}}          # optional, shared by the file's cases (a case may set its own)
    vars: {date: "2024-01-31"}        # optional, shared
    cases:
      - name: short-name
        dialect: hive                 # default hive
        vars: {...}                   # merged over the file's; null = no variables at all
        sql: "..."
        expect:
          reads: [db.t, ...]          # exact set of tables read
          writes: [db.t, ...]         # exact set of tables written
          columns:                    # exact set of written columns, each with its exact set of sources:
            db.t.c: ["db.s.a direct", "db.s.js#$.k direct get_json_object", "db.s.b expression upper,substr"]
            # a source is "<column>[#key] <kind> [f1+f2]"; functions compared only when given ("-" = none)
          columns_include: {...}      # like columns, but only the listed targets are checked
          weak: ["db.s.a filter db.t"]          # exact set of "column role target_table"
          weak_include: [...]                    # listed ones must be present
          weak_exclude: [...]                    # listed ones must be absent
          predicates: {db.s: ["dt = '2024-01-31'"]}  # exact set of normalised texts per table
          windows: {db.s: 21}         # partition window per table (null = unbounded)
          edges: ["db.s -> db.t"]     # exact set of table-level edges
          unresolved: 0 | ["substring", ...]
          errors: 0 | [{index: 1, contains: "..."}]
        xfail: "reason"               # a known gap, kept visible
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask, TaskLineage
from watershed.ingest.extract import extract_lineage

CASES_DIR = Path(__file__).parent / "lineage_cases"


def _load_cases():
    params = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        family = path.stem
        for case in data["cases"]:
            marks = [pytest.mark.xfail(reason=case["xfail"], strict=True)] if case.get("xfail") else []
            params.append(pytest.param(data, case, id=f"{family}::{case['name']}", marks=marks))
    return params


def _source_text(source) -> str:
    return f"{source.id} {source.kind}"


def _parse_source(spec: str) -> tuple[str, str, list[str] | None]:
    parts = spec.split()
    if len(parts) not in (2, 3):
        raise ValueError(f"bad source spec {spec!r}")
    functions = None
    if len(parts) == 3:
        functions = [] if parts[2] == "-" else parts[2].split("+")
    return parts[0], parts[1], functions


def _check_columns(result: TaskLineage, expected: dict, exact: bool) -> list[str]:
    problems = []
    actual = {c.target: c.sources for c in result.columns}
    if exact and set(actual) != set(expected):
        problems.append(
            f"written columns differ:\n  missing {sorted(set(expected) - set(actual))}\n"
            f"  unexpected {sorted(set(actual) - set(expected))}"
        )
    for target, specs in expected.items():
        sources = actual.get(target)
        if sources is None:
            if not exact:
                problems.append(f"{target}: not written")
            continue
        wanted = [_parse_source(s) for s in specs]
        got = {(s.id, s.kind) for s in sources}
        if {(i, k) for i, k, _ in wanted} != got:
            problems.append(
                f"{target}: expected {sorted(specs)}, got {sorted(_source_text(s) for s in sources)}"
            )
            continue
        for source_id, kind, functions in wanted:
            if functions is None:
                continue
            match = [s for s in sources if s.id == source_id and s.kind == kind]
            if not any(s.functions == functions for s in match):
                problems.append(
                    f"{target}: {source_id} functions expected {functions}, got {[s.functions for s in match]}"
                )
    return problems


def _check(result: TaskLineage, expect: dict) -> list[str]:
    problems: list[str] = []
    if "reads" in expect and {r.table for r in result.reads} != set(expect["reads"]):
        problems.append(
            f"reads: expected {sorted(expect['reads'])}, got {sorted(r.table for r in result.reads)}"
        )
    if "writes" in expect and set(result.writes) != set(expect["writes"]):
        problems.append(f"writes: expected {sorted(expect['writes'])}, got {sorted(result.writes)}")
    if "columns" in expect:
        problems += _check_columns(result, expect["columns"] or {}, exact=True)
    if "columns_include" in expect:
        problems += _check_columns(result, expect["columns_include"], exact=False)
    weak = {f"{w.column} {w.role} {w.target_table}" for w in result.weak_references}
    if "weak" in expect and weak != set(expect["weak"] or []):
        problems.append(
            f"weak references:\n  missing {sorted(set(expect['weak'] or []) - weak)}\n"
            f"  unexpected {sorted(weak - set(expect['weak'] or []))}"
        )
    for item in expect.get("weak_include", []):
        if item not in weak:
            problems.append(f"weak reference missing: {item} (have {sorted(weak)})")
    for item in expect.get("weak_exclude", []):
        if item in weak:
            problems.append(f"weak reference should be absent: {item}")
    reads = {r.table: r for r in result.reads}
    for table, texts in (expect.get("predicates") or {}).items():
        got = {p.text for p in reads[table].predicates} if table in reads else None
        if got != set(texts):
            problems.append(f"predicates of {table}: expected {sorted(texts)}, got {sorted(got or [])}")
    for table, window in (expect.get("windows") or {}).items():
        got = reads[table].partition_window_days if table in reads else "not read"
        if got != window:
            problems.append(f"window of {table}: expected {window}, got {got}")
    if "edges" in expect:
        edges = {f"{e.source} -> {e.target}" for e in result.table_edges}
        if edges != set(expect["edges"]):
            problems.append(f"table edges: expected {sorted(expect['edges'])}, got {sorted(edges)}")
    if "unresolved" in expect:
        wanted = expect["unresolved"]
        if isinstance(wanted, int):
            if len(result.unresolved) != wanted:
                problems.append(f"unresolved: expected {wanted}, got {result.unresolved}")
        else:
            for part in wanted:
                if not any(part in u for u in result.unresolved):
                    problems.append(f"unresolved: nothing mentions {part!r} in {result.unresolved}")
    if "errors" in expect:
        wanted = expect["errors"]
        if isinstance(wanted, int):
            if len(result.errors) != wanted:
                problems.append(
                    f"errors: expected {wanted}, got {[(e.statement_index, e.message) for e in result.errors]}"
                )
        else:
            got = [(e.statement_index, e.message) for e in result.errors]
            if len(got) != len(wanted):
                problems.append(f"errors: expected {wanted}, got {got}")
            for error in wanted:
                if not any(i == error["index"] and error.get("contains", "") in m for i, m in got):
                    problems.append(
                        f"errors: no error at statement {error['index']} with {error.get('contains')!r}: {got}"
                    )
    return problems


@pytest.mark.parametrize(("family", "case"), _load_cases())
def test_lineage_case(family: dict, case: dict) -> None:
    catalog_data = case.get("catalog", family.get("catalog"))
    catalog = Catalog.from_dict(catalog_data) if catalog_data else None
    # `vars: null` on a case runs it without any variable, the file's included.
    variables = (
        {} if "vars" in case and case["vars"] is None else {**family.get("vars", {}), **case.get("vars", {})}
    )
    task = SqlTask(task_id=case["name"], sql=case["sql"], dialect=case.get("dialect", "hive"), vars=variables)
    result = extract_lineage(task, catalog)
    problems = _check(result, case.get("expect", {}))
    assert not problems, "\n".join(problems)


def test_the_suite_is_large_enough() -> None:
    assert len(_load_cases()) >= 150
