"""Runs the lineage cases in tests/ingest/cases/*.yaml: one pytest test per case, id `family::name`.

The case format is described in tests/ingest/README.md. Every key of `expect` is optional;
what is given is compared exactly (as sets where order does not matter).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.lineage_cases import catalog_for, load_cases
from watershed.graph.lineage import SqlTask, TaskLineage
from watershed.ingest.extract import extract_lineage


def _parse_source(spec: str | dict[str, Any]) -> dict[str, Any]:
    """A source is `{column, kind, key?, functions?}` or the shorthand
    `"db.t.col[#key] kind [f1+f2]"` (functions from the source outward, `-` for none)."""
    if isinstance(spec, dict):
        return {
            "column": spec["column"],
            "key": spec.get("key"),
            "kind": spec["kind"],
            "functions": spec.get("functions"),
        }
    parts = spec.split()
    if len(parts) not in (2, 3):
        raise ValueError(f"bad source spec {spec!r}: want 'db.t.col[#key] kind [f1+f2]'")
    column, _, key = parts[0].partition("#")
    functions = None
    if len(parts) > 2:
        functions = [] if parts[2] == "-" else parts[2].split("+")
    return {"column": column, "key": key or None, "kind": parts[1], "functions": functions}


def _fmt_source(source: dict[str, Any]) -> str:
    text = source["column"] + (f"#{source['key']}" if source["key"] else "")
    text += f" {source['kind']}"
    if source.get("functions") is not None:
        text += " " + ("+".join(source["functions"]) or "-")
    return text


def _check_set(failures: list[str], what: str, expected: Any, actual: Any) -> None:
    expected_set, actual_set = set(expected), set(actual)
    if expected_set != actual_set:
        failures.append(
            f"{what}:\n    expected: {sorted(expected_set)}\n    actual:   {sorted(actual_set)}"
            f"\n    missing:  {sorted(expected_set - actual_set)}"
            f"\n    extra:    {sorted(actual_set - expected_set)}"
        )


def _check_columns(failures: list[str], expected: dict[str, list], result: TaskLineage) -> None:
    actual = {c.target: c.sources for c in result.columns}
    _check_set(failures, "written columns", expected, actual)
    for target, specs in expected.items():
        if target not in actual:
            continue
        wanted = [_parse_source(s) for s in specs or []]
        # Functions are compared only for the sources that give them.
        compare_functions = {(w["column"], w["key"]) for w in wanted if w["functions"] is not None}
        got = []
        for s in actual[target]:
            item = {"column": s.column, "key": s.key, "kind": s.kind, "functions": None}
            if (s.column, s.key) in compare_functions:
                item["functions"] = list(s.functions)
            got.append(item)
        # Sets: one column reached along two paths appears once per distinct path.
        expected_texts = sorted({_fmt_source(w) for w in wanted})
        actual_texts = sorted({_fmt_source(g) for g in got})
        if expected_texts != actual_texts:
            full = sorted(f"{s.id} {s.kind} {'+'.join(s.functions) or '-'}" for s in actual[target])
            failures.append(f"sources of {target}:\n    expected: {expected_texts}\n    actual:   {full}")


def _check_errors(failures: list[str], expected: Any, result: TaskLineage) -> None:
    actual = [(e.statement_index, e.line, e.message) for e in result.errors]
    if isinstance(expected, int):
        if len(actual) != expected:
            failures.append(f"errors: expected {expected}, actual {len(actual)}: {actual}")
        return
    if len(actual) != len(expected):
        failures.append(f"errors: expected {len(expected)}, actual {len(actual)}: {actual}")
        return
    for want in expected:
        hit = [
            a
            for a in actual
            if a[0] == want["statement_index"]
            and ("line" not in want or a[1] == want["line"])
            and want.get("message_contains", "").lower() in a[2].lower()
        ]
        if not hit:
            failures.append(f"errors: no error matching {want}; actual {actual}")


def _check_unresolved(failures: list[str], expected: Any, result: TaskLineage) -> None:
    actual = list(result.unresolved)
    if isinstance(expected, int):
        if len(actual) != expected:
            failures.append(f"unresolved: expected {expected} entries, actual {actual}")
        return
    for needle in expected:
        if not any(needle.lower() in entry.lower() for entry in actual):
            failures.append(f"unresolved: no entry contains {needle!r}; actual {actual}")


def check_case(expect: dict[str, Any], result: TaskLineage) -> list[str]:
    failures: list[str] = []
    reads = {r.table: r for r in result.reads}
    if "reads" in expect:
        _check_set(failures, "reads", expect["reads"] or [], reads)
    if "writes" in expect:
        _check_set(failures, "writes", expect["writes"] or [], result.writes)
    if "columns" in expect:
        _check_columns(failures, expect["columns"] or {}, result)
    if "weak" in expect:
        actual_weak = [f"{w.column} {w.role} {w.target_table}" for w in result.weak_references]
        _check_set(failures, "weak references", expect["weak"] or [], actual_weak)
    if "table_edges" in expect:
        actual_edges = [f"{e.source} -> {e.target}" for e in result.table_edges]
        _check_set(failures, "table edges", expect["table_edges"] or [], actual_edges)
    for table, texts in (expect.get("predicates") or {}).items():
        if table not in reads:
            failures.append(f"predicates of {table}: table not read (reads: {sorted(reads)})")
            continue
        actual_texts = [p.text for p in reads[table].predicates]
        _check_set(failures, f"predicates of {table}", texts or [], actual_texts)
    for table, days in (expect.get("windows") or {}).items():
        if table not in reads:
            failures.append(f"window of {table}: table not read (reads: {sorted(reads)})")
        elif reads[table].partition_window_days != days:
            failures.append(
                f"window of {table}: expected {days}, actual "
                f"{reads[table].partition_window_days} (predicates "
                f"{[p.text for p in reads[table].predicates]}, unparsed "
                f"{reads[table].unparsed_partition_predicates})"
            )
    if "unresolved" in expect:
        _check_unresolved(failures, expect["unresolved"], result)
    if "errors" in expect:
        _check_errors(failures, expect["errors"], result)
    return failures


@pytest.mark.parametrize(("case", "catalog"), load_cases())
def test_lineage_case(case: dict[str, Any], catalog: dict[str, Any] | None) -> None:
    task = SqlTask(
        task_id=case["name"],
        sql=case["sql"],
        dialect=case.get("dialect", "hive"),
        vars=case.get("vars") or {},
    )
    result = extract_lineage(task, catalog=catalog_for(catalog))
    failures = check_case(case.get("expect") or {}, result)
    if failures:
        pytest.fail(f"{case['name']}:\n" + "\n".join(failures), pytrace=False)
