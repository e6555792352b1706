"""Grant row conditions: parsing (bad text named) and implication by a query's conditions."""

from __future__ import annotations

import pytest

from watershed.api.service.authz.conditions import implies, parse_condition
from watershed.api.service.authz.errors import AuthzError
from watershed.graph.authz import RowCondition


def q(column: str, op: str, *values: str) -> RowCondition:
    return RowCondition(column=column, op=op, values=list(values), text=f"{column} {op} {values}")


def g(text: str) -> list[RowCondition]:
    return parse_condition(text)


def test_parse_forms():
    assert [(c.column, c.op, c.values) for c in g("app = 'douyin'")] == [("app", "=", ["douyin"])]
    assert [(c.column, c.op, c.values) for c in g("'2024-01-01' <= dt AND app IN ('a', 'b')")] == [
        ("dt", ">=", ["2024-01-01"]),
        ("app", "in", ["a", "b"]),
    ]
    assert [(c.op, c.values) for c in g("(x BETWEEN 1 AND 10) and y <> -3 and z not in (1)")] == [
        ("between", ["1", "10"]),
        ("<>", ["-3"]),
        ("not in", ["1"]),
    ]
    assert g("dt >= DATE '2024-01-01'")[0].values == ["2024-01-01"]


@pytest.mark.parametrize(
    "text",
    ["app = 'a' OR app = 'b'", "a = b", "upper(app) = 'A'", "app LIKE 'd%'", "app IS NULL", "app = (", ""],
)
def test_parse_refuses_what_it_cannot_decide(text):
    with pytest.raises(AuthzError, match="condition"):
        parse_condition(text)


def test_parse_checks_columns():
    with pytest.raises(AuthzError, match="no column 'appp'"):
        parse_condition("appp = 'x'", ["app", "dt"])
    assert parse_condition("APP = 'x'", ["app"])[0].column == "app"


def test_equality_and_sets():
    assert implies([q("app", "=", "douyin")], g("app = 'douyin'"))
    assert not implies([q("app", "=", "toutiao")], g("app = 'douyin'"))
    assert implies([q("app", "in", "a", "b")], g("app IN ('a', 'b', 'c')"))
    assert not implies([q("app", "in", "a", "d")], g("app IN ('a', 'b', 'c')"))
    # two sets intersect: only 'a' remains
    assert implies([q("app", "in", "a", "d"), q("app", "in", "a", "b")], g("app = 'a'"))
    assert not implies([], g("app = 'a'"))
    assert not implies([q("region", "=", "cn")], g("app = 'a'"))
    assert implies([q("app", "=", "a"), q("dt", "=", "2024-01-02")], g("app = 'a' AND dt >= '2024-01-01'"))
    assert not implies([q("app", "=", "a")], g("app = 'a' AND dt >= '2024-01-01'"))
    # text equality is case-sensitive
    assert not implies([q("app", "=", "Douyin")], g("app = 'douyin'"))
    # the column's type is unknown: a string column compares as text, a numeric one as numbers, so
    # only what holds under both readings counts
    assert implies([q("app_id", "=", "1128")], g("app_id = '1128'"))
    assert not implies([q("app_id", "=", "1128.0")], g("app_id = '1128'"))
    assert not implies([q("region", "=", "01")], g("region = '1'"))
    assert not implies([q("hour", "=", "10")], g("hour >= '2'"))
    assert implies([q("year", "=", "2024")], g("year >= 2023"))
    assert not implies([q("region", "=", "01")], g("region <> '1'"))
    # `01` and `1` may be one number: not a contradiction, so nothing follows from it
    assert not implies([q("app_id", "=", "1"), q("app_id", "=", "01")], g("app_id = 5"))
    assert implies([q("app", "=", "b")], g("app <> 'a'"))
    assert not implies([q("app", "in", "a", "b")], g("app NOT IN ('a')"))


def test_ranges_on_dates_and_numbers():
    grant = g("dt >= '2024-01-01'")
    assert implies([q("dt", "between", "2024-01-01", "2024-01-31")], grant)
    assert implies([q("dt", ">", "2024-01-01")], grant)
    assert not implies([q("dt", ">=", "2023-12-31")], grant)
    assert not implies([q("dt", "<=", "2024-12-31")], grant)
    assert implies([q("dt", "=", "2024-03-01")], grant)
    assert implies([q("dt", "in", "2024-03-01", "2024-04-01")], grant)
    assert not implies([q("dt", "in", "2023-03-01", "2024-04-01")], grant)
    window = g("dt BETWEEN '2024-01-01' AND '2024-01-31'")
    assert implies([q("dt", ">=", "2024-01-05"), q("dt", "<", "2024-01-31")], window)
    assert not implies([q("dt", ">=", "2024-01-05"), q("dt", "<", "2024-02-01")], window)
    assert implies([q("n", "<", "10"), q("n", ">", "1")], g("n < 10 AND n >= 1"))
    assert not implies([q("n", "<=", "10"), q("n", ">", "1")], g("n < 10"))
    # a closed point interval implies equality; an open one never does
    assert implies([q("dt", ">=", "2024-01-01"), q("dt", "<=", "2024-01-01")], g("dt = '2024-01-01'"))
    assert not implies([q("dt", ">=", "2024-01-01")], g("dt = '2024-01-01'"))
    # an interval outside the excluded values implies <>
    assert implies([q("dt", ">", "2024-01-01")], g("dt <> '2023-06-01'"))
    # a contradiction reads no row
    assert implies([q("app", "=", "a"), q("app", "=", "b")], g("app = 'c'"))


def test_conservative_cases():
    # no order on free text, nor between a date and a timestamp
    assert not implies([q("name", ">", "m")], g("name >= 'a'"))
    assert not implies([q("dt", ">=", "2024-01-01 00:00:00")], g("dt >= '2024-01-01'"))
    # ignored query operators make the rows look wider
    assert not implies([q("app", "like", "dou%")], g("app = 'douyin'"))
    assert not implies([q("app", "<>", "toutiao")], g("app = 'douyin'"))
