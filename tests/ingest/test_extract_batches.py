"""The extractor tokenizes a script a batch at a time (issue 11 item 16): the cut points never change the lineage.

A cut falls at a `;` ending a line; one inside a string or a block comment leaves the
batch untokenizable, and the batch is then joined to the next. Tiny batches put a cut
after nearly every statement, so every such case is crossed.
"""

from __future__ import annotations

import pytest

import watershed.ingest.extract as extract
from watershed.graph.lineage import SqlTask


def _script() -> str:
    parts = []
    for i in range(30):
        parts.append(f"INSERT INTO dw.t{i} SELECT 'a;\nb' AS s, x FROM ods.s /* c;\n d */ WHERE y = 'q;\n'")
        parts.append(f"-- note;\nINSERT INTO dw.u{i} SELECT z FROM ods.r{i}")
    return ";\n".join(parts) + ";\n"


def _lineage(sql: str):
    return extract.extract_lineage(SqlTask(task_id="batches", sql=sql))


@pytest.mark.parametrize("batch_chars", [1, 40, 200, 5000])
def test_batch_cuts_do_not_change_the_lineage(monkeypatch, batch_chars: int) -> None:
    sql = _script()
    whole = _lineage(sql)
    assert not whole.errors and len(whole.statements) == 60
    monkeypatch.setattr(extract, "BATCH_CHARS", batch_chars)
    batched = _lineage(sql)
    assert batched.model_dump() == whole.model_dump()


def test_a_bad_statement_in_a_batch_costs_only_itself(monkeypatch) -> None:
    monkeypatch.setattr(extract, "BATCH_CHARS", 40)
    sql = "INSERT INTO dw.a SELECT x FROM ods.s;\nINSERT INTO dw.b SELECT 'oops FROM ods.s;\nINSERT INTO dw.c SELECT y FROM ods.s;\n"
    result = _lineage(sql)
    assert set(result.writes) == {"dw.a", "dw.c"}
    assert [(e.statement_index, e.line) for e in result.errors] == [(1, 2)]
    assert "tokenize" in result.errors[0].message
    # statements keep their script positions across batches
    assert [(s.index, s.line) for s in result.statements] == [(0, 1), (2, 3)]
