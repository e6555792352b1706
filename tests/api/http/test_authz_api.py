"""The authz routes over HTTP, on the propagated sample warehouse (tests/api/conftest.py `api`)."""

from __future__ import annotations

import pytest

SQL = "SELECT user_id, email, ssn FROM ods.user_profile WHERE dt = '2024-01-31' ORDER BY user_id"


@pytest.fixture(scope="module")
def analyst_grant(api):
    """A data role `analyst` for the viewer, with select on ods.user_profile from 2024 on."""
    with api.client("admin") as admin:
        assert admin.post("/authz/roles", json={"name": "analyst"}).status_code == 201
        assert admin.post("/authz/roles", json={"name": "analyst"}).json() == {"changed": False}
        answer = admin.post("/authz/roles/analyst/members", json={"kind": "user", "name": "viewer"})
        assert answer.status_code == 200 and answer.json() == {"changed": True}
        grant = {
            "role": "analyst",
            "actions": ["select"],
            "table": "ods.user_profile",
            "condition": "dt >= '2024-01-01'",
        }
        created = admin.post("/authz/grants", json=grant)
        assert created.status_code == 201, created.text
        again = admin.post("/authz/grants", json=grant)
        assert again.status_code == 200 and again.json()["id"] == created.json()["id"]
        return created.json()


def test_every_route_needs_authentication(api):
    with api.client() as anonymous:
        for method, path in (
            ("POST", "/authz/points"),
            ("POST", "/authz/check"),
            ("POST", "/authz/rewrite"),
            ("GET", "/authz/roles"),
            ("GET", "/authz/grants"),
            ("GET", "/authz/groups"),
            ("POST", "/authz/grants"),
            ("DELETE", "/authz/grants/g1"),
        ):
            answer = anonymous.request(method, path, json={"sql": SQL})
            assert answer.status_code == 401, (method, path)


def test_points_of_a_query(api):
    with api.client("viewer") as viewer:
        points = viewer.post("/authz/points", json={"sql": SQL}).json()
        assert points["tables"] == ["ods.user_profile"]
        assert [c["name"] for c in points["columns"]] == ["user_id", "email", "ssn"]
        [cell] = points["cells"]
        assert cell["table"] == "ods.user_profile"
        assert cell["columns"] == [
            "ods.user_profile.email",
            "ods.user_profile.ssn",
            "ods.user_profile.user_id",
        ]
        assert [c["text"] for c in cell["conditions"]] == ["dt = '2024-01-31'"]
        broken = viewer.post("/authz/points", json={"sql": "SELECT FROM WHERE ("})
        assert broken.status_code == 400 and "line 1" in broken.json()["detail"]
        assert viewer.post("/authz/points", json={"sql": ""}).status_code == 422


def test_check_and_rewrite_for_oneself_and_by_a_gateway(api, analyst_grant):
    with api.client("viewer") as viewer, api.client("admin") as gateway, api.client("steward") as steward:
        decision = viewer.post("/authz/check", json={"sql": SQL}).json()
        assert decision["allowed"] and decision["user"] == "viewer"
        # a condition the grant's does not imply: denied, naming the cell and the grant to ask for
        wide = SQL.replace("dt = '2024-01-31'", "dt >= '2023-06-01'")
        denied = viewer.post("/authz/check", json={"sql": wide}).json()
        assert not denied["allowed"]
        [missing] = denied["missing"]
        assert missing["table"] == "ods.user_profile"
        assert missing["suggestion"]["table"] == "ods.user_profile"
        assert "admin" in missing["suggestion"]["request_from"]
        # someone else's query: an admin (the gateway) may ask, a steward may not
        assert steward.post("/authz/check", json={"sql": SQL, "user": "viewer"}).status_code == 403
        assert gateway.post("/authz/check", json={"sql": SQL, "user": "viewer"}).json()["allowed"]
        assert not gateway.post("/authz/check", json={"sql": SQL, "user": "steward"}).json()["allowed"]

        rewrite = viewer.post("/authz/rewrite", json={"sql": SQL}).json()
        assert rewrite["decision"]["allowed"] and rewrite["sql"]
        masked = {o["name"]: o["masked"] for o in rewrite["outputs"]}
        assert masked == {"user_id": False, "email": True, "ssn": True}
        assert all(o["why"] for o in rewrite["outputs"])
        # only the engine's dialect: a text another dialect reads otherwise is never checked in it
        other = viewer.post("/authz/check", json={"sql": SQL, "dialect": "trino"})
        assert other.status_code == 400 and "WATERSHED_AUTHZ_DIALECTS" in other.json()["detail"]
        unknown = viewer.post("/authz/rewrite", json={"sql": "SELECT a FROM ods.no_such_table"}).json()
        assert unknown["sql"] is None and "ods.no_such_table" in unknown["decision"]["error"]


def test_grant_management_is_for_admins_inside_their_databases(api, analyst_grant):
    with api.client("admin") as admin, api.client("ods_admin") as ods_admin, api.client("steward") as steward:
        assert steward.get("/authz/grants").status_code == 403
        listed = admin.get("/authz/grants", params={"role": "analyst"}).json()
        assert [g["id"] for g in listed["items"]] == [analyst_grant["id"]] and not listed["truncated"]
        held = admin.get("/authz/grants", params={"user": "viewer"}).json()["items"]
        assert [g["id"] for g in held] == [analyst_grant["id"]]
        roles = {r["name"]: r for r in admin.get("/authz/roles").json()}
        assert roles["analyst"]["users"] == ["viewer"]

        grant = {"role": "analyst", "actions": ["select"], "table": "dws.region_daily_users"}
        assert ods_admin.post("/authz/grants", json=grant).status_code == 403
        ods_grant = {**grant, "table": "ods.app_event_log", "columns": ["app", "region"]}
        created = ods_admin.post("/authz/grants", json=ods_grant)
        assert created.status_code == 201, created.text

        bad_column = admin.post("/authz/grants", json={**ods_grant, "columns": ["nope"]})
        assert bad_column.status_code == 400 and "nope" in bad_column.json()["detail"]
        bad_condition = admin.post(
            "/authz/grants", json={**grant, "table": "ods.app_event_log", "condition": "nope = 1"}
        )
        assert bad_condition.status_code == 400 and "nope" in bad_condition.json()["detail"]
        bad_action = admin.post("/authz/grants", json={**grant, "actions": ["drop"]})
        assert bad_action.status_code == 422
        bad_tag = admin.post(
            "/authz/grants", json={"role": "analyst", "actions": ["unmask"], "tag": "pii<=L9"}
        )
        assert bad_tag.status_code == 400 and "L9" in bad_tag.json()["detail"]

        grant_id = created.json()["id"]
        assert ods_admin.delete(f"/authz/grants/{grant_id}").json()["id"] == grant_id
        assert ods_admin.delete(f"/authz/grants/{grant_id}").status_code == 404

        assert admin.post("/authz/groups/analysts/users", json={"user": "steward"}).json() == {
            "changed": True
        }
        assert admin.get("/authz/groups").json()["analysts"] == ["steward"]
        assert admin.delete("/authz/groups/analysts/users/steward").status_code == 204
        assert admin.delete("/authz/groups/analysts/users/steward").status_code == 404

        audit = admin.get("/audit", params={"action": "authz."}).json()["items"]
        actions = {e["action"] for e in audit}
        assert {"authz.role.add", "authz.grant", "authz.revoke", "authz.decision"} <= actions
        assert all(SQL not in str(e["after"]) for e in audit)
        # a denial's missing cells are logged by column and operator, never with the constants
        decisions = admin.get("/audit", params={"action": "authz.decision", "limit": 500}).json()["items"]
        denied = [e["after"] for e in decisions if not e["after"]["allowed"] and e["after"]["missing"]]
        assert denied and all("2023-06-01" not in str(d) and "2024-01-31" not in str(d) for d in denied)
        assert any("dt >=" in c for d in denied for m in d["missing"] for c in m["conditions"])


def test_a_stewards_tag_counts_at_once_without_propagation(api, analyst_grant):
    """The tags a check reads are the node's own tags over the last run's: a column a steward has just
    tagged is masked at the next query, not after the next propagation (nor left masked once untagged)."""
    sql = "SELECT user_id, city FROM ods.user_profile WHERE dt = '2024-01-31'"
    column = "ods.user_profile.city"

    def masked() -> dict[str, bool]:
        with api.client("viewer") as viewer:
            rewrite = viewer.post("/authz/rewrite", json={"sql": sql}).json()
        assert rewrite["decision"]["allowed"]
        return {o["name"]: o["masked"] for o in rewrite["outputs"]}

    assert masked() == {"user_id": False, "city": False}
    with api.client("steward") as steward:
        assert steward.put(f"/nodes/{column}/tags/pii", json={"values": ["L4"]}).status_code == 200
        try:
            assert masked() == {"user_id": False, "city": True}
        finally:
            assert steward.delete(f"/nodes/{column}/tags/pii").status_code in (200, 204)
    assert masked() == {"user_id": False, "city": False}
