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
    # c0 + c1 + c2 parses as (c0 + c1) + c2: an operand sits under one operator per level above it
    assert sources[f"ods.t.c{TERMS - 1}"].functions == [function]
    assert sources["ods.t.c1"].functions == [function] * (TERMS - 1)
    assert sources["ods.t.c0"].functions == [function] * (TERMS - 1)


def test_a_short_chain_keeps_one_operator_per_level() -> None:
    sql = "INSERT INTO dw.o SELECT a + b + upper(c) AS s FROM ods.t"
    result = extract_lineage(SqlTask(task_id="short", sql=sql, dialect="hive"))
    functions = {s.id: s.functions for s in result.columns[0].sources}
    assert functions == {"ods.t.a": ["add", "add"], "ods.t.b": ["add", "add"], "ods.t.c": ["upper", "add"]}


def test_a_long_where_chain_of_ands_keeps_its_filters() -> None:
    condition = " AND ".join(f"c{i} = {i}" for i in range(TERMS))
    sql = f"INSERT INTO dw.o SELECT c0 FROM ods.t WHERE {condition}"
    result = extract_lineage(SqlTask(task_id="where", sql=sql, dialect="hive"))
    assert result.errors == []
    assert len({w.column for w in result.weak_references}) == TERMS
