"""Statements sqlglot cannot parse are reported in words: no class or token reprs in the message,
sqlglot's own description kept in `detail`."""

from __future__ import annotations

import pytest

from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "INSERT INTO a.b SELECT x FROM c.d WHERE",
            "the WHERE clause has no condition (at 'WHERE', the end of the statement)",
        ),
        (
            "INSERT INTO a.b SELECT x FROM c.d WHERE x =",
            "'=' has nothing on its right-hand side (at '=', the end of the statement)",
        ),
        (
            "INSERT INTO a.b SELECT x FROM c.d LIMIT",
            "LIMIT has no row count (at 'LIMIT', the end of the statement)",
        ),
        ("INSERT INTO a.b SELECT (x FROM c.d", "expected ')' (at 'FROM')"),
        (
            "INSERT INTO a.b SELECT x FROM",
            "expected table name, but the statement ended (at 'FROM', the end of the statement)",
        ),
        ("INSERT INTO a.b SELECT x FROM c.d GROUP x", "unexpected token (at 'x', the end of the statement)"),
    ],
)
def test_a_parse_error_is_said_in_words(sql, message):
    [error] = extract_lineage(SqlTask(task_id="t", sql=sql)).errors
    assert error.message == message
    assert error.detail and error.detail != message
    assert "<" not in error.message
