"""The read routes on the propagated sample warehouse: search, table and column pages, lineage, tags, runs."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def viewer(api):
    with api.client("viewer") as client:
        yield client


def test_search_by_prefix_substring_and_tag_filters(viewer):
    page = viewer.get("/search", params={"q": "ods.user_p"}).json()
    assert [h["id"] for h in page["items"]][:2] == ["ods.user_profile", "ods.user_profile.city"] or page[
        "items"
    ][0]["id"] == "ods.user_profile"
    assert all(h["id"].startswith("ods.user_p") for h in page["items"])
    # A substring that is no id prefix is found in the second stage.
    hits = viewer.get("/search", params={"q": "email", "kind": "column"}).json()["items"]
    assert {h["id"] for h in hits} >= {"ods.user_profile.email", "dwd.user_contact_df.email"}
    # "all columns with pii >= L3 in db ods"
    hits = viewer.get("/search", params={"db": "ods", "tag": "pii>=L3", "kind": "column"}).json()["items"]
    assert {h["id"] for h in hits} == {
        "ods.user_profile.email",
        "ods.user_profile.phone",
        "ods.user_profile.ssn",
    }
    assert all(h["tags"]["pii"] for h in hits)
    hits = viewer.get("/search", params={"tag": "pii>=L4"}).json()["items"]
    assert "ods.user_profile.email" not in {h["id"] for h in hits} and "ods.user_profile.ssn" in {
        h["id"] for h in hits
    }
    bad = viewer.get("/search", params={"tag": "pii>=L9"})
    assert bad.status_code == 400 and bad.headers["content-type"] == "application/problem+json"
    assert "L9" in bad.json()["detail"]


@pytest.mark.parametrize("q", ["d", "", "ods.", "user"])
def test_search_pages_without_repeats(api, viewer, q):
    seen, cursor = [], None
    while True:
        params = {"q": q, "limit": 3} | ({"cursor": cursor} if cursor else {})
        page = viewer.get("/search", params=params).json()
        assert len(page["items"]) <= 3
        seen += [h["id"] for h in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen))
    every = viewer.get("/search", params={"q": q, "limit": 500}).json()["items"]
    assert sorted(seen) == sorted(h["id"] for h in every)
    assert all(q in h["id"] for h in every)
    if q == "":
        stats = api.graph.stats()
        assert len(every) == stats.tables + stats.columns  # everything


def test_table_page(viewer):
    view = viewer.get("/tables/ods.user_profile").json()
    assert view["layer"] == "ods" and view["ttl_days"] == 365
    columns = {c["name"]: c for c in view["columns"]}
    assert columns["ssn"]["tags"]["pii"] == ["L4"] and columns["ssn"]["type"] == "string"
    # the default tag policy's protection section: pii L4/L3 encrypted with key pii, nothing applied yet
    protection = view["protection"]
    assert protection["status"] == "pending" and "ssn" in protection["pending_columns"]
    assert {c["name"]: c["want"]["key"] for c in protection["columns"]}["ssn"] == "pii"
    assert protection["encrypted_columns"] == [] and protection["files_recorded"] == 0
    assert view["ddl"].startswith("CREATE TABLE") and "orc.encrypt" in view["ddl"]
    missing = viewer.get("/tables/ods.user_profil")
    assert missing.status_code == 404 and missing.json()["detail"] == "table ods.user_profil not found"
    assert viewer.get("/tables/ods.user_profile/ddl").json()["ddl"] == view["ddl"]


def test_column_page_names_a_missing_column(viewer):
    view = viewer.get("/columns/dwd.user_contact_df.email").json()
    pii = next(t for t in view["tags"] if t["key"] == "pii")
    assert pii["origin"] == "propagated" and pii["provenance"][0]["source"] == "ods.user_profile.email"
    answer = viewer.get("/columns/ods.users.emial")
    assert answer.status_code == 404
    assert answer.json() | {"instance": None} == {
        "type": "about:blank",
        "title": "Not Found",
        "status": 404,
        "detail": "column ods.users.emial not found",
        "instance": None,
    }


def test_lineage_is_bounded_and_says_when_it_truncated(viewer):
    up = viewer.get(
        "/lineage/ads.app_user_rank_7d.email", params={"direction": "upstream", "depth": 5}
    ).json()
    assert {n["id"] for n in up["nodes"]} == {
        "ads.app_user_rank_7d.email",
        "dwd.user_contact_df.email",
        "ods.user_profile.email",
    }
    assert up["truncated"] is False
    assert {(e["source"], e["target"]) for e in up["edges"]} == {
        ("dwd.user_contact_df.email", "ads.app_user_rank_7d.email"),
        ("ods.user_profile.email", "dwd.user_contact_df.email"),
    }
    full = viewer.get(
        "/lineage/ods.app_event_log.user_id", params={"direction": "downstream", "depth": 10}
    ).json()
    assert len(full["nodes"]) > 3 and not full["truncated"]
    cut = viewer.get(
        "/lineage/ods.app_event_log.user_id", params={"direction": "downstream", "depth": 10, "limit": 3}
    ).json()
    assert len(cut["nodes"]) == 3 and cut["truncated"] is True
    ids = {n["id"] for n in cut["nodes"]}
    assert all(e["source"] in ids and e["target"] in ids for e in cut["edges"])
    one_hop = viewer.get(
        "/lineage/ods.app_event_log.user_id", params={"direction": "downstream", "depth": 1}
    ).json()
    assert {e["source"] for e in one_hop["edges"]} == {"ods.app_event_log.user_id"}
    tables = viewer.get(
        "/lineage/ods.user_profile", params={"level": "table", "direction": "downstream"}
    ).json()
    assert "dwd.user_contact_df" in {n["id"] for n in tables["nodes"]}
    assert viewer.get("/lineage/ods.nope.x").status_code == 404
    assert viewer.get("/lineage/ods.app_event_log.user_id", params={"depth": 11}).status_code == 422


def test_edge_detail_names_the_task(viewer):
    edges = viewer.get(
        "/edges", params={"source": "ods.user_profile.email", "target": "dwd.user_contact_df.email"}
    ).json()
    assert [e["task"]["id"] for e in edges] == ["01_ods_to_dwd_events"]
    assert (
        edges[0]["kind"] == "direct"
        and "INSERT OVERWRITE TABLE dwd.user_contact_df" in edges[0]["task"]["sql"]
    )
    tables = viewer.get(
        "/edges", params={"source": "ods.user_profile", "target": "dwd.user_contact_df"}
    ).json()
    assert [e["task"]["id"] for e in tables] == ["01_ods_to_dwd_events"] and tables[0]["kind"] is None


def test_tags_and_why(viewer):
    tags = viewer.get("/nodes/ads.app_user_rank_7d.email/tags").json()
    assert {t["key"] for t in tags["tags"]} == {"pii", "pii_type"}
    why = viewer.get("/nodes/ads.app_user_rank_7d.email/tags/pii/why").json()
    assert why["paths"] == 1 and why["tree"]["sources"][0]["node"] == "dwd.user_contact_df.email"
    assert viewer.get("/nodes/ads.app_user_rank_7d.email/tags/app/why").status_code == 404


def test_runs_lists(viewer):
    runs = viewer.get("/propagation/runs").json()["items"]
    assert runs and runs[0]["status"] == "done"
    assert viewer.get(f"/propagation/runs/{runs[0]['run_id']}").json()["layers"]
    assert viewer.get("/propagation/runs/prop-nope").status_code == 404
    assert viewer.get("/harvest/runs").json() == {"items": [], "next_cursor": None, "total": None}
    assert viewer.get("/harvest/runs/harvest-nope/errors").status_code == 404
    assert viewer.get("/ttl/advice", params={"table": "ods.nope"}).status_code == 404
    assert viewer.get("/health").json() == {"status": "ok"}


def test_the_page_shell_and_static_files_are_public(api):
    import httpx

    from watershed.api.http.app import WEB

    if not (WEB / "index.html").is_file():
        pytest.skip("no web UI in this checkout")
    page = httpx.get(api.url + "/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    some_file = next(p for p in sorted(WEB.rglob("*.js")) if p.is_file())
    assert httpx.get(api.url + "/static/" + some_file.relative_to(WEB).as_posix()).status_code == 200
    docs = httpx.get(api.url + "/docs")
    assert docs.status_code == 200
    assert httpx.get(api.url + "/api/v1/openapi.json").json()["info"]["title"] == "Watershed steward service"


def test_docs_load_nothing_from_the_internet(api):
    import httpx

    page = httpx.get(api.url + "/docs")
    assert page.status_code == 200 and "/api/v1/lineage/{node_id}" in page.text
    assert "http://" not in page.text.replace(api.url, "") and "https://" not in page.text


def test_ttl_advice_lists_the_biggest_savings_first_and_pages(api, viewer):
    from watershed.ttl_advisor.model import Recommendation, Savings
    from watershed.ttl_advisor.store import store_recommendations

    columns = [row[0] for row in api.graph.read("MATCH (c:Column) RETURN c.id ORDER BY c.id LIMIT 7")]
    savings = [500, None, 9000, 500, 0, None, 70]

    def recommendation(column, saved):
        size = (
            None
            if saved is None
            else Savings(
                column_share=0.1,
                bytes_per_partition=10,
                partitions_beyond_ttl=1,
                bytes=saved,
                sampled_files=1,
            )
        )
        return Recommendation(column=column, table=column.rsplit(".", 1)[0], status="unused", savings=size)

    store_recommendations(
        api.graph, [recommendation(c, s) for c, s in zip(columns, savings, strict=True)], "ttl-t"
    )
    seen, cursor = [], None
    while True:
        page = viewer.get("/ttl/advice", params={"limit": 2} | ({"cursor": cursor} if cursor else {})).json()
        seen += [(a["savings_bytes"], a["column"]) for a in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    known = sorted(
        ((s, c) for c, s in zip(columns, savings, strict=True) if s is not None), key=lambda p: (-p[0], p[1])
    )
    unknown = sorted((None, c) for c, s in zip(columns, savings, strict=True) if s is None)
    assert seen == known + unknown
    big = viewer.get("/ttl/advice", params={"min_savings": 500}).json()["items"]
    assert [a["savings_bytes"] for a in big] == [9000, 500, 500]
    table = columns[2].rsplit(".", 1)[0]
    of_table = viewer.get("/ttl/advice", params={"table": table}).json()["items"]
    assert of_table and all(a["table"] == table for a in of_table)
    assert viewer.get("/ttl/advice", params={"min_savings": -1}).status_code == 422
