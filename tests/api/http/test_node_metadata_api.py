"""Descriptions and owners over HTTP: a steward sets and clears them within their databases (each
change audited), a viewer or a steward of another database is refused, a bad value is a 400 naming
the problem; the column and table pages show them with where they came from, and a propagation run
carries a description down a direct copy with its path back (and takes it away when cleared)."""

from __future__ import annotations

import json

from tests.support.api_service import propagate_locally

SOURCE = "dwd.user_contact_df.email"
COPY = "ads.app_user_rank_7d.email"


def test_a_steward_sets_and_clears_a_description_and_the_copy_downstream_follows(api):
    with api.client("steward") as steward:
        put = steward.put(
            f"/nodes/{SOURCE}/description", json={"value": "Contact email, as the user typed it"}
        )
        assert put.status_code == 200, put.text
        assert put.json()["description"] | {"at": None} == {
            "value": "Contact email, as the user typed it",
            "source": "steward",
            "catalog": None,
            "steward": "Contact email, as the user typed it",
            "by": "steward",
            "at": None,
            "from_node": None,
            "via_task": None,
            "hops": None,
            "path": [],
        }
        propagate_locally(api.graph, api.settings)
        try:
            page = steward.get(f"/columns/{COPY}")
            assert page.status_code == 200, page.text
            shown = page.json()["metadata"]["description"]
            assert (shown["value"], shown["source"], shown["from_node"], shown["hops"]) == (
                "Contact email, as the user typed it",
                "propagated",
                SOURCE,
                1,
            )
            assert [step["node"] for step in shown["path"]] == [COPY, SOURCE]
            table = steward.get("/tables/ads.app_user_rank_7d").json()
            assert {c["name"]: c["description"] for c in table["columns"]}["email"] == (
                "Contact email, as the user typed it"
            )
            assert table["metadata"]["description"]["value"] is None

            cleared = steward.delete(f"/nodes/{SOURCE}/description")
            assert cleared.status_code == 200, cleared.text
            assert cleared.json()["description"]["value"] is None
            assert steward.delete(f"/nodes/{SOURCE}/description").status_code == 404
        finally:
            steward.delete(f"/nodes/{SOURCE}/description")
            propagate_locally(api.graph, api.settings)
        assert steward.get(f"/nodes/{COPY}/metadata").json()["description"]["value"] is None

        with api.client("admin") as admin:
            audit = admin.get("/audit", params={"action": "description."}).json()
        entries = audit["items"] if isinstance(audit, dict) else audit
        assert {(e["action"], e["target"], e["actor"]) for e in entries} >= {
            ("description.set", f"{SOURCE}:description", "steward"),
            ("description.clear", f"{SOURCE}:description", "steward"),
        }


def test_an_owner_is_an_email_or_a_name_and_wins_over_the_catalogs(api):
    with api.client("steward") as steward:
        put = steward.put("/nodes/ods.user_profile/owner", json={"value": "CRM-Team@Example.com"})
        assert put.status_code == 200, put.text
        try:
            assert put.json()["owner"]["value"] == "CRM-Team@example.com"
            assert steward.get("/tables/ods.user_profile").json()["owner"] == "CRM-Team@example.com"
            column = steward.get("/nodes/ods.user_profile.email/metadata").json()["owner"]
            assert (column["value"], column["source"]) == ("CRM-Team@example.com", "table")

            bad = steward.put("/nodes/ods.user_profile/owner", json={"value": "crm@"})
            assert bad.status_code == 400
            assert "not a valid email address" in bad.json()["detail"]
            control = steward.put("/nodes/ods.user_profile/description", json={"value": "a\x1bb"})
            # the rule the schema states (a pattern): a 422 naming the character
            assert control.status_code == 422 and "U+001B" in control.text
            assert steward.put("/nodes/ods.nope/owner", json={"value": "x"}).status_code == 404
        finally:
            steward.delete("/nodes/ods.user_profile/owner")


def test_rights_viewers_read_stewards_of_other_databases_are_refused(api):
    with api.client("viewer") as viewer:
        assert viewer.get(f"/nodes/{SOURCE}/metadata").status_code == 200
        assert viewer.put(f"/nodes/{SOURCE}/description", json={"value": "x"}).status_code == 403
        assert viewer.delete(f"/nodes/{SOURCE}/owner").status_code == 403
    with api.client("ods_steward") as ods_steward:
        refused = ods_steward.put(f"/nodes/{SOURCE}/owner", json={"value": "someone"})
        assert refused.status_code == 403
        assert "database dwd" in refused.json()["detail"]
        allowed = ods_steward.put("/nodes/ods.user_profile.email/description", json={"value": "Email"})
        assert allowed.status_code == 200, allowed.text
        assert ods_steward.delete("/nodes/ods.user_profile.email/description").status_code == 200


def test_the_cli_and_the_api_answer_the_same_metadata(api, monkeypatch):
    from tests.support.cli import invoke

    port = api.graph.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", api.graph.graph_name)
    set_ = invoke("describe", SOURCE, "Contact email", "--format", "json")
    assert set_.exit_code == 0, set_.output
    try:
        with api.client("viewer") as viewer:
            answer = viewer.get(f"/nodes/{SOURCE}/metadata").json()
        assert json.loads(invoke("describe", SOURCE, "--format", "json").output) == answer
        assert json.loads(invoke("owner", SOURCE, "--format", "json").output) == answer
        assert answer["description"]["by"].startswith("cli:")
    finally:
        assert invoke("describe", SOURCE, "--clear").exit_code == 0
