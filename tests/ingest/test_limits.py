"""Analysis limits and the linear chain (issue 35 item 7): the points path (`parse_query` +
`query_points`, what /authz/check runs) and the lineage path (`extract_lineage`).

No timings here: the linear fix is asserted by the work it leaves (operators per operand), the
deadline by a statement whose analysis doubles with each CTE and a deadline it cannot meet.
"""

from __future__ import annotations

import pytest

from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.ingest.limits import AnalysisLimitError, AnalysisLimits, analysis_limits
from watershed.ingest.points import parse_query, query_points

CATALOG = Catalog.from_dict(
    {"tables": {"default.t": {"columns": ["uid", "a"] + [f"c{i}" for i in range(3000)]}}}
)


def points(sql: str):
    return query_points(parse_query(sql), CATALOG)


def lineage(sql: str):
    return extract_lineage(SqlTask(task_id="limits", sql=sql, dialect="spark"), CATALOG)


def test_a_chain_of_one_operator_costs_one_step_per_term():
    """`uid || uid || ...` put term k under k operators: the work and the answer grew with the
    square of the terms (10,000 terms: 8 s, 20,000: 55 s at /authz/check)."""
    terms = 3000
    chained = "SELECT " + " || ".join(["uid"] * terms) + " FROM t"
    [column] = points(chained).columns
    assert [(s.column, s.functions) for s in column.sources] == [("default.t.uid", ["concat"])]

    distinct = "INSERT INTO o SELECT " + " || ".join(f"c{i}" for i in range(terms)) + " AS x FROM t"
    [written] = lineage(distinct).columns
    assert len(written.sources) == terms
    # one function per operand: a linear answer (it was terms * (terms + 1) / 2 - 1 entries)
    assert sum(len(s.functions) for s in written.sources) == terms


#: operators of one family mixed in one chain, and the names they go by in a path
ALTERNATING = {
    "additive": (("+", "-"), {"add", "sub"}),
    "multiplicative": (("*", "/", "%"), {"mul", "div", "mod"}),
    "equality": (("=", "<>"), {"eq", "neq"}),
    "comparison": (("<", ">="), {"lt", "gte"}),
    "bitwise": (("&", "|", "^"), {"bitwiseand", "bitwiseor", "bitwisexor"}),
}


def alternating(operators: tuple[str, ...], operands: list[str]) -> str:
    text = [operands[0]]
    for i, operand in enumerate(operands[1:], start=1):
        text += [operators[i % len(operators)], operand]
    return " ".join(text)


@pytest.mark.parametrize("family", list(ALTERNATING))
def test_an_alternating_chain_of_one_family_costs_one_step_per_term(family):
    """`a + b - c + d …` mixes two operators, so it was no chain of one: each term was one more
    level of recursion, and 20,000 terms were a RecursionError (a 400 at /authz/check, the
    statement lost in a harvest) instead of an answer."""
    operators, names = ALTERNATING[family]
    terms = 20_000
    [column] = points("SELECT " + alternating(operators, ["uid"] * terms) + " AS x FROM t").columns
    assert {s.column for s in column.sources} == {"default.t.uid"}
    paths = [s.functions for s in column.sources]
    # each operator once on a path: the first operand lies under all of them
    assert all(len(path) == len(set(path)) and set(path) <= names for path in paths)
    assert names in [set(path) for path in paths]

    operands = [f"c{i % 3000}" for i in range(terms)]
    result = lineage("INSERT INTO o SELECT " + alternating(operators, operands) + " AS x FROM t")
    assert result.errors == []
    [written] = result.columns
    assert {s.id for s in written.sources} == {f"default.t.c{i}" for i in range(3000)}
    assert all(
        len(s.functions) == len(set(s.functions)) and set(s.functions) <= names for s in written.sources
    )


def test_a_short_alternating_chain_gives_each_operand_the_operators_above_it():
    [written] = lineage("INSERT INTO o SELECT c1 + c2 - c3 + c4 AS x FROM t").columns
    functions = {s.id: sorted(s.functions) for s in written.sources}
    assert functions == {
        "default.t.c1": ["add", "sub"],
        "default.t.c2": ["add", "sub"],
        "default.t.c3": ["add", "sub"],
        "default.t.c4": ["add"],
    }


#: nested with no bracket, deeper than sqlglot's parser recurses (about 500 levels)
UNBRACKETED = {
    "NOT NOT …": "NOT " * 3000 + "uid",
    "- - …": "- " * 3000 + "uid",
    "CASE in CASE": "CASE WHEN uid > 0 THEN " * 3000 + "uid" + " END" * 3000,
    "NOT a = NOT b …": "NOT uid = " * 3000 + "uid",
}


@pytest.mark.parametrize("shape", list(UNBRACKETED))
def test_nesting_too_deep_for_the_parser_is_refused_by_analysis_max_depth(shape):
    """It was a RecursionError inside sqlglot's parser: a 400 'nested too deeply' at
    /authz/check, a statement error naming RecursionError in a harvest."""
    sql = f"SELECT {UNBRACKETED[shape]} AS x FROM t"
    for analyse in (parse_query, lineage):
        with pytest.raises(AnalysisLimitError) as caught:
            analyse(sql if analyse is parse_query else "INSERT INTO o " + sql)
        assert caught.value.setting == "analysis_max_depth" and caught.value.status == 422
        assert "more than 100 deep" in str(caught.value)
    # a run that closes before the next one opens is no nesting: `a + -1 + -1 …`
    assert points("SELECT " + " + ".join(["uid", *["-1"] * 3000]) + " AS x FROM t").columns


#: nested with no bracket, parsed as a loop, then walked one level per term
UNCHAINED = {
    "IS NULL IS NULL …": "uid" + " IS NULL" * 3000,
    "two families at one precedence": alternating(("||", "|"), ["uid"] * 3000),
    "BETWEEN …": "uid" + " BETWEEN 1 AND 2" * 3000,
}


@pytest.mark.parametrize("shape", list(UNCHAINED))
def test_nesting_too_deep_for_the_resolver_is_refused_by_analysis_max_nesting(shape):
    """It was a RecursionError in the resolver (a 400, or the statement lost in a harvest)."""
    sql = f"SELECT {UNCHAINED[shape]} AS x FROM t"
    with pytest.raises(AnalysisLimitError) as caught:
        points(sql)
    assert caught.value.setting == "analysis_max_nesting" and caught.value.status == 422
    assert "more than 250 deep (setting analysis_max_nesting)" in str(caught.value)
    with pytest.raises(AnalysisLimitError, match="analysis_max_nesting"):
        lineage("INSERT INTO o " + sql)


def test_nesting_within_the_limit_is_analysed_and_the_limit_is_a_setting():
    sql = "SELECT uid" + " IS NULL" * 200 + " AS x FROM t"
    assert [s.column for s in points(sql).columns[0].sources] == ["default.t.uid"]
    assert lineage("INSERT INTO o " + sql).errors == []
    nested = "SELECT " + "abs(" * 20 + "uid" + ")" * 20 + " AS x FROM t"
    with (
        analysis_limits(AnalysisLimits(analysis_max_nesting=10)),
        pytest.raises(AnalysisLimitError, match="more than 10 deep"),
    ):
        points(nested)
    assert points(nested).columns


def test_a_statement_too_long_is_refused_before_it_is_tokenized():
    sql = "SELECT uid FROM t WHERE a = '" + "x" * 300_000 + "'"
    with pytest.raises(AnalysisLimitError) as caught:
        parse_query(sql)
    assert caught.value.setting == "analysis_max_chars" and caught.value.status == 413
    assert f"{len(sql)} characters" in str(caught.value) and "limit of 262144" in str(caught.value)
    with pytest.raises(AnalysisLimitError, match=r"statement 0 .* limit of 262144"):
        lineage("INSERT INTO o " + sql)


def test_too_many_tokens_and_too_deep_are_refused_naming_the_limit():
    many = "SELECT " + " || ".join(["uid"] * 30_000) + " FROM t"
    with pytest.raises(AnalysisLimitError) as caught:
        parse_query(many)
    assert caught.value.setting == "analysis_max_tokens" and caught.value.limit == 50_000
    assert caught.value.status == 413 and "60002 tokens" in str(caught.value)

    deep = "SELECT " + "(" * 50_000 + "uid" + ")" * 50_000 + " FROM t"
    for analyse in (parse_query, lineage):
        with pytest.raises(AnalysisLimitError) as caught:
            analyse(deep)
        assert caught.value.setting == "analysis_max_depth" and caught.value.status == 422
        assert "more than 100 deep" in str(caught.value)
    # within the limit: analysed
    assert points("SELECT " + "(" * 100 + "uid" + ")" * 100 + " FROM t").columns


def test_limits_are_settings(monkeypatch):
    monkeypatch.setenv("WATERSHED_ANALYSIS_MAX_TOKENS", "20")
    monkeypatch.setenv("WATERSHED_ANALYSIS_MAX_DEPTH", "3")
    limits = AnalysisLimits()
    assert (limits.analysis_max_tokens, limits.analysis_max_depth) == (20, 3)
    with analysis_limits(limits):
        with pytest.raises(AnalysisLimitError, match=r"limit of 20 \(setting analysis_max_tokens"):
            parse_query("SELECT " + " + ".join(["uid"] * 10) + " FROM t")
        with pytest.raises(AnalysisLimitError, match="more than 3 deep"):
            lineage("SELECT ((((uid)))) FROM t")
    # outside the block the defaults hold again
    assert points("SELECT " + " + ".join(["uid"] * 10) + " FROM t").columns
    monkeypatch.setenv("WATERSHED_ANALYSIS_SECONDS", "0")
    with pytest.raises(ValueError, match="analysis_seconds"):
        AnalysisLimits()


def doubling_ctes(levels: int) -> str:
    """Each CTE reads the one before twice: the analysis walks t 2^levels times (about 0.3 s
    at 16 levels, doubling per level: minutes at 24)."""
    ctes = ["c0 AS (SELECT uid FROM t)"] + [
        f"c{i} AS (SELECT x.uid FROM c{i - 1} x JOIN c{i - 1} y ON x.uid = y.uid)" for i in range(1, levels)
    ]
    return "WITH " + ", ".join(ctes) + f" SELECT uid FROM c{levels - 1}"


@pytest.mark.parametrize("path", ["points", "lineage"])
def test_an_analysis_past_its_deadline_is_stopped(path):
    sql = doubling_ctes(26)
    quick = AnalysisLimits(analysis_seconds=0.05)
    with analysis_limits(quick, deadline="analysis_seconds"), pytest.raises(AnalysisLimitError) as caught:
        points(sql) if path == "points" else lineage(sql)
    assert caught.value.setting == "analysis_seconds" and caught.value.status == 422
    assert "longer than the limit of 0.05 seconds" in str(caught.value)
    # a statement that is quick is unaffected by the same deadline
    with analysis_limits(quick, deadline="analysis_seconds"):
        assert points(doubling_ctes(3)).tables == ["default.t"]
