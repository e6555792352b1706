"""The analysis limits over HTTP (issue 35 item 7): a statement beyond them is refused with 413
(too large) or 422 (too deep) naming the limit and its value, at /authz/check, /authz/rewrite,
/authz/points and /lineage/sql, before any analysis.

The service is tests/api/conftest.py's `api` (a real uvicorn on the sample warehouse).
"""

from __future__ import annotations

import pytest

LONG = "SELECT user_id FROM ods.user_profile WHERE email = '" + "x" * 300_000 + "'"
MANY = "SELECT email || " + "||".join(["1"] * 30_000) + " FROM ods.user_profile"
DEEP = "SELECT " + "(" * 50_000 + "email" + ")" * 50_000 + " FROM ods.user_profile"

ROUTES = ["/authz/check", "/authz/rewrite", "/authz/points", "/lineage/sql"]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    ("sql", "status", "named"),
    [
        (LONG, 413, "limit of 262144 (setting analysis_max_chars)"),
        (MANY, 413, "limit of 50000 (setting analysis_max_tokens)"),
        (DEEP, 422, "more than 100 deep"),
    ],
    ids=["long", "many-tokens", "deep"],
)
def test_a_statement_beyond_the_limits_is_refused_naming_the_limit(api, route, sql, status, named):
    body = {"sql": sql, "dialect": "spark"}
    with api.client("admin") as admin:
        answer = admin.post(route, json=body)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert named in answer.json()["detail"]


def test_a_long_chain_within_the_limits_is_answered(api):
    """10,000 terms took 8 s at /authz/check (quadratic); now it is an ordinary check."""
    sql = "SELECT " + " || ".join(["user_id"] * 10_000) + " AS x FROM ods.user_profile"
    with api.client("admin") as admin:
        points = admin.post("/authz/points", json={"sql": sql})
        assert points.status_code == 200, points.text
        [column] = points.json()["columns"]
        assert [s["column"] for s in column["sources"]] == ["ods.user_profile.user_id"]
        assert admin.post("/authz/check", json={"sql": sql}).status_code == 200
