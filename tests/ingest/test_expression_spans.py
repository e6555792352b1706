"""Where a task's SQL writes a column: the select item named after it, found by its offsets."""

from __future__ import annotations

import pytest

from watershed.ingest.expression_spans import expression_spans


def _texts(sql: str, column: str, dialect: str = "spark") -> list[str]:
    return [sql[start:end] for start, end in expression_spans(sql, dialect, column)]


@pytest.mark.parametrize(
    "sql,column,expected",
    [
        (
            "INSERT OVERWRITE TABLE ads.report SELECT uid, contact AS report_contact FROM dws.contacts",
            "ads.report.report_contact",
            ["contact AS report_contact"],
        ),
        # a function, a CASE with parentheses inside, an item that opens with a parenthesis
        (
            "insert into d.t select case when a > 1 then upper(b) else (c) end as x, ((a) + b) y from s",
            "d.t.x",
            ["case when a > 1 then upper(b) else (c) end as x"],
        ),
        ("insert into d.t select concat(a, ',') as x, ((a) + b) y from s", "d.t.y", ["((a) + b) y"]),
        # each side of a UNION, an unnamed column passed through, a subquery's same name ignored
        ("insert into d.t select a as x from s union all select t.x from s2 t", "d.t.x", ["a as x", "t.x"]),
        ("insert into d.t select x from (select 1 as x) q", "d.t.x", ["x"]),
        # the statement that writes the table, in a script of several
        (
            "insert into d.u select 1 as x;\ninsert into d.t select\n  coalesce(b, '') as x\nfrom s",
            "d.t.x",
            ["coalesce(b, '') as x"],
        ),
        ("create table d.t as select distinct upper(b) as x from s", "d.t.x", ["upper(b) as x"]),
        # a table named without its database is the default one's
        ("insert into t select b as x from s", "d.t.x", ["b as x"]),
    ],
)
def test_the_select_item_that_writes_the_column(sql, column, expected):
    assert _texts(sql, column) == expected


ORDER = ["a", "b", "c", "dt"]


@pytest.mark.parametrize(
    "sql,column,expected",
    [
        # an INSERT fills by position, whatever its items are named
        ("insert into d.t select b as a, a as b, 1, '2' from s", "d.t.a", ["b as a"]),
        ("insert into d.t select x, y, upper(z), dt from s", "d.t.c", ["upper(z)"]),
        # a partition written statically is not among the items; a dynamic one is, last
        ("insert overwrite table d.t partition (dt = '1') select x, y, z from s", "d.t.b", ["y"]),
        ("insert overwrite table d.t partition (dt) select x, y, z, w as day from s", "d.t.dt", ["w as day"]),
        # the INSERT's own column list
        ("insert into d.t (c, a) select x + 1, y from s", "d.t.a", ["y"]),
        # a list of another length: by name, else nothing
        ("insert into d.t select x, z as c from s", "d.t.c", ["z as c"]),
        ("insert into d.t select x, z from s", "d.t.c", []),
    ],
)
def test_an_insert_fills_the_columns_by_position(sql, column, expected):
    assert [sql[a:b] for a, b in expression_spans(sql, "hive", column, ORDER)] == expected


@pytest.mark.parametrize(
    "sql,column,dialect",
    [
        ("insert into d.t select * from s", "d.t.x", "spark"),  # no item named x
        ("insert into d.other select a as x from s", "d.t.x", "spark"),  # another table
        ("insert into d.t select a as x from", "d.t.x", "spark"),  # does not parse
        ("insert into d.t select a as x from s", "d.t.x", "no-such-dialect"),
    ],
)
def test_no_span_rather_than_a_wrong_one(sql, column, dialect):
    assert expression_spans(sql, dialect, column) == []
