"""A database-limited admin sees and acts inside their databases only: the grants they list, the
users whose query decisions they may ask for, and the database names they give in any case."""

from __future__ import annotations

import pytest

from watershed.api.service.accounts.store import AccountStore

ODS_SQL = "SELECT user_id, city FROM ods.user_profile"


@pytest.fixture(scope="module")
def scoped(api):
    """Roles with grants on ods, on dws and on a tag (every database), each held by one user; an
    unrestricted admin `admin2`; tokens for the users the tests act as."""
    accounts = AccountStore(api.graph)
    for name, role, databases in (
        ("ods_analyst", "viewer", ["ods"]),
        ("dws_analyst", "viewer", ["dws"]),
        ("ods_wide", "viewer", ["ods"]),
        ("admin2", "admin", None),
    ):
        accounts.add(name, role, databases, actor="test")
    grants = {}
    with api.client("admin") as admin:
        for role, member, scope in (
            ("ods_readers", "ods_analyst", {"table": "ods.user_profile"}),
            ("dws_readers", "dws_analyst", {"table": "dws.region_daily_users"}),
            ("tag_readers", "ods_wide", {"tag": "pii_type=email"}),
            ("admin2_readers", "admin2", {"database": "ods"}),
        ):
            assert admin.post("/authz/roles", json={"name": role}).status_code == 201
            made = admin.post("/authz/grants", json={"role": role, "actions": ["select"], **scope})
            assert made.status_code == 201, made.text
            grants[role] = made.json()["id"]
            assigned = admin.post(f"/authz/roles/{role}/members", json={"kind": "user", "name": member})
            assert assigned.status_code == 200, assigned.text
        # ods_wide also holds the ods grant: a user may hold grants inside and outside a scope
        admin.post("/authz/roles/ods_readers/members", json={"kind": "user", "name": "ods_wide"})
    return grants


def test_a_limited_admin_lists_only_the_grants_on_their_databases(api, scoped):
    with api.client("admin") as admin, api.client("ods_admin") as ods_admin:
        everything = {g["id"] for g in admin.get("/authz/grants").json()["items"]}
        assert set(scoped.values()) <= everything
        theirs = {g["id"] for g in ods_admin.get("/authz/grants").json()["items"]}
        assert scoped["ods_readers"] in theirs and scoped["admin2_readers"] in theirs
        assert scoped["dws_readers"] not in theirs  # another database's
        assert scoped["tag_readers"] not in theirs  # a tag grant without a database reaches them all
        assert ods_admin.get("/authz/grants", params={"role": "dws_readers"}).json()["items"] == []
        held = ods_admin.get("/authz/grants", params={"user": "ods_wide"}).json()["items"]
        assert [g["id"] for g in held] == [scoped["ods_readers"]]
        every_held = admin.get("/authz/grants", params={"user": "ods_wide"}).json()["items"]
        assert {g["id"] for g in every_held} == {scoped["ods_readers"], scoped["tag_readers"]}


@pytest.mark.parametrize("route", ["/authz/check", "/authz/rewrite"])
def test_a_limited_admin_asks_only_for_users_inside_their_databases(api, scoped, route):
    with api.client("admin") as admin, api.client("ods_admin") as ods_admin:
        inside = ods_admin.post(route, json={"sql": ODS_SQL, "user": "ods_analyst"})
        assert inside.status_code == 200, inside.text
        refused = {
            # an unrestricted admin's account reaches every database
            "admin2": "all databases",
            # an account limited to another database
            "dws_analyst": "database dws",
            # an ods account holding a grant that reaches every database
            "ods_wide": f"grant {scoped['tag_readers']}",
        }
        for user, why in refused.items():
            answer = ods_admin.post(route, json={"sql": ODS_SQL, "user": user})
            assert answer.status_code == 403, (user, answer.text)
            detail = answer.json()["detail"]
            assert f"user {user}" in detail and why in detail, detail
            # an admin of every database may ask for anyone (a query gateway)
            assert admin.post(route, json={"sql": ODS_SQL, "user": user}).status_code == 200
        # their own queries need no admin right at all
        assert ods_admin.post(route, json={"sql": ODS_SQL}).status_code == 200


def test_a_limited_admin_gives_database_names_in_any_case(api, scoped):
    with api.client("ods_admin") as ods_admin:
        made = ods_admin.post("/users", json={"name": "ods_loader", "role": "steward", "databases": ["ODS"]})
        assert made.status_code == 201, made.text
        assert made.json()["databases"] == ["ods"]
        changed = ods_admin.patch("/users/ods_loader", json={"databases": [" Ods ", "ODS"]})
        assert changed.status_code == 200, changed.text
        assert changed.json()["databases"] == ["ods"]
        outside = ods_admin.patch("/users/ods_loader", json={"databases": ["ODS", "DWS"]})
        assert outside.status_code == 403 and "database dws" in outside.json()["detail"]
