"""The audit trail's filters and pages, and a node's history: who may read it and what it holds."""

from __future__ import annotations

COLUMN = "dws.region_daily_users.region"
# a column whose id continues COLUMN's: its changes are not COLUMN's history
LONGER = "dws.region_daily_users.region_x"


def _all_pages(client, params: dict, limit: int) -> list[dict]:
    items, cursor, seen = [], None, set()
    while True:
        assert cursor not in seen, f"the cursor {cursor} came back: the pages repeat"
        seen.add(cursor)
        answer = client.get(
            "/audit", params={**params, "limit": limit, **({"cursor": cursor} if cursor else {})}
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        items += body["items"]
        cursor = body["next_cursor"]
        if not cursor:
            return items


def test_pages_after_the_first_hold_older_entries(api):
    with api.client("steward") as steward:
        for value in ("L1", "L2", "L3", "L4", "L1"):
            assert steward.put(f"/nodes/{COLUMN}/tags/pii", json={"values": [value]}).status_code == 200
    with api.client("admin") as admin:
        whole = admin.get("/audit", params={"limit": 500}).json()["items"]
        paged = _all_pages(admin, {}, 2)
    # before the cursor was compared as a string, FalkorDB's index gave every page the first page
    assert [e["id"] for e in paged] == [e["id"] for e in whole]
    assert len({e["id"] for e in paged}) == len(paged) >= 5


def test_a_node_history_holds_its_own_changes_only(api):
    with api.client("steward") as steward:
        assert steward.put(f"/nodes/{COLUMN}/tags/app", json={"values": ["douyin"]}).status_code == 200
        assert steward.put(f"/nodes/{COLUMN}/blocks/pii_type").status_code == 200
        assert (
            steward.put("/nodes/dws.region_daily_users/tags/app", json={"values": ["douyin"]}).status_code
            == 200
        )
    api.graph.execute(
        "CREATE (:AuditEntry {id: '00000000000000000001-longer', at: '2000-01-01T00:00:00.000+00:00', "
        "actor: 'test', action: 'tag.set', target: $target})",
        {"target": f"{LONGER}:pii"},
    )
    with api.client("admin") as admin:
        history = _all_pages(admin, {"node": COLUMN}, 2)
        table = _all_pages(admin, {"node": "dws.region_daily_users"}, 50)
        everything = admin.get("/audit", params={"limit": 500}).json()["items"]
    expected = [e for e in everything if e["target"] == COLUMN or e["target"].startswith(COLUMN + ":")]
    assert [e["id"] for e in history] == [e["id"] for e in expected]
    assert {"tag.set", "tag.block"} <= {e["action"] for e in history}
    assert {e["target"] for e in table} == {"dws.region_daily_users:app"}


def test_filters_by_actor_action_and_time(api):
    with api.client("steward") as steward:
        assert steward.put(f"/nodes/{COLUMN}/tags/pii", json={"values": ["L3"]}).status_code == 200
    with api.client("admin") as admin:
        everything = admin.get("/audit", params={"limit": 500}).json()["items"]
        newest = everything[0]
        assert newest["action"] == "tag.set" and newest["actor"] == "steward"
        since = admin.get("/audit", params={"since": newest["at"], "limit": 500}).json()["items"]
        assert newest["id"] in {e["id"] for e in since}
        assert all(e["at"] >= newest["at"] for e in since)
        until = admin.get("/audit", params={"until": newest["at"], "limit": 500}).json()["items"]
        assert newest["id"] not in {e["id"] for e in until} and all(e["at"] < newest["at"] for e in until)
        grants = admin.get("/audit", params={"action": "user.", "actor": "test", "limit": 500}).json()[
            "items"
        ]
        assert grants and {e["action"] for e in grants} == {"user.add"}
        assert admin.get("/audit", params={"since": "yesterday"}).status_code == 422
        # a day, or a time to the minute, as the UI's time fields send it
        assert admin.get("/audit", params={"since": newest["at"][:10]}).status_code == 200
        assert admin.get("/audit", params={"until": newest["at"][:16]}).status_code == 200


def test_who_may_read_a_node_history(api):
    with api.client("steward") as steward:
        assert steward.get("/audit", params={"node": COLUMN}).status_code == 200
        assert steward.get("/audit").status_code == 403
    with api.client("ods_steward") as ods_steward:
        assert ods_steward.get("/audit", params={"node": "ods.user_profile_df.phone"}).status_code == 200
        refused = ods_steward.get("/audit", params={"node": COLUMN})
        assert refused.status_code == 403 and "database dws" in refused.json()["detail"]
    with api.client("viewer") as viewer:
        assert viewer.get("/audit", params={"node": COLUMN}).status_code == 403
    with api.client("ods_admin") as ods_admin:
        assert ods_admin.get("/audit").status_code == 403
    with api.client("admin") as admin:
        assert admin.get("/audit", params={"node": "not an id"}).status_code == 422


def test_a_node_history_is_read_through_the_target_index(api):
    from watershed.api.service.audit import NODE_LIST

    params = {"node": COLUMN, "node_end": COLUMN + ";", "node_keyed": COLUMN + ":", "after": "~", "limit": 5}
    params |= {"actor": None, "action": None, "since": None, "until": None}
    plan = str(api.graph.graph.explain(NODE_LIST, params))
    # a seek of the node's range, not a scan of every entry
    assert "Node By Index Scan | (a:AuditEntry)" in plan and "Label Scan" not in plan, plan
