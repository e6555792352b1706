"""GET /edges marks where the task's SQL writes the target column (the sample warehouse's
dwd_to_dws_stats task: a UNION whose sides name a column differently, items filled by position)."""

from __future__ import annotations


def _marked(api, source: str, target: str) -> list[str]:
    with api.client("viewer") as viewer:
        answer = viewer.get("/edges", params={"source": source, "target": target})
    assert answer.status_code == 200, answer.text
    (edge,) = answer.json()
    sql = edge["task"]["sql"]
    return [sql[span["start"] : span["end"]] for span in edge["expressions"]]


def test_each_union_side_of_the_column_is_marked(api):
    marked = _marked(api, "dwd.user_event_di.region", "dws.region_daily_users.region")
    assert marked == ["region", "'all' AS region"]


def test_items_without_the_column_name_are_found_by_position(api):
    # SELECT user_id, app, count(1), sum(duration_ms), max(CASE ...) fills events .. last_page
    marked = _marked(api, "dwd.user_event_di.duration_ms", "dws.user_app_stats_1d.total_duration_ms")
    assert marked == ["sum(duration_ms)"]
    marked = _marked(api, "dwd.user_event_di.user_id", "dws.region_daily_users.users")
    assert marked == ["count(DISTINCT user_id)", "count(DISTINCT user_id)"]
