"""`may_hold_windows`: the text check that spares the search for windows in statements without one."""

import pytest

from watershed.ingest.resolve import may_hold_windows


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT rank() OVER (ORDER BY x) FROM t",
        "select sum(a)over(partition by b) from t",
        "SELECT a FROM t WINDOW w AS (PARTITION BY b) QUALIFY rank() over w = 1",
        "SELECT max(x) KEEP (DENSE_RANK FIRST ORDER BY y) FROM t",
        "SELECT a /*x*/OVER(ORDER BY a) FROM t",
    ],
)
def test_the_words_that_make_a_window_are_found(sql):
    assert may_hold_windows(sql)


@pytest.mark.parametrize(
    "sql",
    [
        # every TPC query the bench wraps reads like this: OVERWRITE is no OVER
        "INSERT OVERWRITE TABLE out.t SELECT a FROM t",
        "SELECT turnover, overdue_days, is_over, keeper FROM t",
    ],
)
def test_longer_names_holding_the_words_are_not_windows(sql):
    assert not may_hold_windows(sql)
