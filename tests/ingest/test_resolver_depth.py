"""Long operator chains (generated SQL: a sum of thousands of columns, a long `||`) must not
exhaust the stack and lose the statement (issue 13 bug 2): the chain is walked as a loop."""

from __future__ import annotations

import pytest

from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage

TERMS = 3000


@pytest.mark.parametrize(("operator", "function"), [("+", "add"), ("||", "concat"), ("*", "mul")])
def test_a_long_left_deep_chain_keeps_its_statement(operator: str, function: str) -> None:
    expression = f" {operator} ".join(f"c{i}" for i in range(TERMS))
    sql = f"INSERT INTO dw.o SELECT {expression} AS s FROM ods.t"
    result = extract_lineage(SqlTask(task_id="chain", sql=sql, dialect="hive"))
    assert result.errors == []
    (column,) = result.columns
    assert column.target == "dw.o.s"
    sources = {s.id: s for s in column.sources}
    assert set(sources) == {f"ods.t.c{i}" for i in range(TERMS)}
    assert {s.kind for s in column.sources} == {"expression"}
    # c0 + c1 + c2 parses as (c0 + c1) + c2, but a chain is one n-ary operator: each operand
    # gets it once (one per level was quadratic in the terms, issue 35 item 7)
    assert {tuple(s.functions) for s in column.sources} == {(function,)}


def test_a_short_chain_is_one_operator_and_what_is_under_it_keeps_its_functions() -> None:
    sql = "INSERT INTO dw.o SELECT a + b + upper(c) - d AS s FROM ods.t"
    result = extract_lineage(SqlTask(task_id="short", sql=sql, dialect="hive"))
    functions = {s.id: s.functions for s in result.columns[0].sources}
    assert functions == {
        "ods.t.a": ["add", "sub"],
        "ods.t.b": ["add", "sub"],
        "ods.t.c": ["upper", "add", "sub"],
        "ods.t.d": ["sub"],
    }


def test_a_long_where_chain_of_ands_keeps_its_filters() -> None:
    condition = " AND ".join(f"c{i} = {i}" for i in range(TERMS))
    sql = f"INSERT INTO dw.o SELECT c0 FROM ods.t WHERE {condition}"
    result = extract_lineage(SqlTask(task_id="where", sql=sql, dialect="hive"))
    assert result.errors == []
    assert len({w.column for w in result.weak_references}) == TERMS
