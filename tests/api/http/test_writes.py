"""Stewards' changes through the API: tags and blocks within their databases, each one audited with before and after."""

from __future__ import annotations


def test_steward_sets_and_unsets_a_tag_and_the_audit_says_who(api):
    path = "/nodes/dws.region_daily_users.region/tags/pii"
    with api.client("steward") as steward:
        view = steward.put(path, json={"values": ["L2"]})
        assert view.status_code == 200, view.text
        own = [e for e in view.json()["set_here"] if e["key"] == "pii"]
        assert own == [
            {
                "type": "TAGGED",
                "origin": "manual",
                "key": "pii",
                "value": "L2",
                "by": "steward",
                "at": own[0]["at"],
                "rule": None,
            }
        ]
        assert steward.put(path, json={"values": ["L4"]}).status_code == 200
        assert steward.put(path, json={"values": ["L9"]}).status_code == 400
        assert steward.delete(path).status_code == 200
        again = steward.delete(path)
        assert (
            again.status_code == 404
            and again.json()["detail"] == "dws.region_daily_users.region has no steward's pii tag"
        )
        assert steward.put("/nodes/dws.nope.region/tags/pii", json={"values": ["L2"]}).status_code == 404
    with api.client("admin") as admin:
        entries = admin.get("/audit", params={"actor": "steward", "action": "tag."}).json()["items"]
    target = "dws.region_daily_users.region:pii"
    mine = [e for e in entries if e["target"] == target]
    assert [e["action"] for e in mine] == ["tag.unset", "tag.set", "tag.set"]
    unset, second, first = mine
    assert first["before"] == [] and [v["value"] for v in first["after"]] == ["L2"]
    assert [v["value"] for v in second["before"]] == ["L2"] and [v["value"] for v in second["after"]] == [
        "L4"
    ]
    assert [v["value"] for v in unset["before"]] == ["L4"] and unset["after"] is None


def test_block_and_unblock(api):
    path = "/nodes/dwd.user_contact_df.email/blocks/pii"
    with api.client("steward") as steward:
        blocked = steward.put(path).json()
        assert {"type": "BLOCKS", "key": "pii"}.items() <= blocked["set_here"][0].items()
        assert steward.get("/columns/dwd.user_contact_df.email").json()["blocks"] == ["pii"]
        assert steward.delete(path).status_code == 200
        assert steward.delete(path).status_code == 404
        assert steward.put("/nodes/dwd.user_contact_df.email/blocks/nokey").status_code == 400


def test_a_limited_steward_changes_only_its_databases(api):
    with api.client("ods_steward") as ods:
        other = ods.put("/nodes/ads.app_user_rank_7d.email/tags/pii", json={"values": ["L2"]})
        assert other.status_code == 403
        assert other.json()["detail"] == "steward right on database ads needed"
        assert ods.put("/nodes/ads.app_user_rank_7d.email/blocks/pii").status_code == 403
        own = ods.put("/nodes/ods.user_profile/tags/app", json={"values": ["douyin"]})
        assert own.status_code == 200
        assert ods.delete("/nodes/ods.user_profile/tags/app").status_code == 200
        assert ods.get("/tables/ads.app_user_rank_7d").status_code == 200  # reads are not limited
    with api.client("viewer") as viewer:
        refused = viewer.put("/nodes/ods.user_profile/tags/app", json={"values": ["douyin"]})
        assert refused.status_code == 403 and refused.json()["detail"] == "steward right needed"


def test_admin_manages_users_and_grants(api):
    with api.client("admin") as admin:
        assert admin.post("/users", json={"name": "dora", "role": "viewer"}).status_code == 201
        assert admin.post("/users", json={"name": "dora", "role": "viewer"}).status_code == 409
        assert admin.post("/users", json={"name": "eve", "role": "root"}).status_code == 422
        changed = admin.patch("/users/dora", json={"role": "steward", "databases": ["dwd"]}).json()
        assert changed == changed | {"role": "steward", "databases": ["dwd"]}
        assert admin.patch("/users/dora", json={"databases": None}).json()["databases"] is None
        assert admin.get("/users/dora").json()["role"] == "steward"
        grant = admin.get("/audit", params={"action": "user.grant"}).json()["items"][0]
        assert grant["before"]["databases"] == ["dwd"] and grant["after"]["databases"] is None
        assert admin.delete("/users/dora").status_code == 204
        assert admin.get("/users/dora").status_code == 404
        page = admin.get("/users", params={"limit": 2}).json()
        assert len(page["items"]) == 2 and page["next_cursor"] and page["total"] >= 5
        rest = admin.get("/users", params={"limit": 500, "cursor": page["next_cursor"]}).json()["items"]
        assert not {u["name"] for u in page["items"]} & {u["name"] for u in rest}
