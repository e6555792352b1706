"""POST /api/v1/preview: a steward's change previewed over HTTP (api/service/tag_preview.py): the
tags the next run would change, grouped by table, with the rights the change itself needs, and
nothing written or audited."""

from __future__ import annotations

from watershed.api.service.audit import entries
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy

BLOCK = {"node": "ods.user_profile.email", "action": "block", "key": "pii"}


def _everything(api) -> tuple:
    store = GraphTagStore(api.graph, default_policy())
    tags = store.tags_of(store.tagged_nodes())
    own = store.own_tags(BLOCK["node"])
    return (
        {(n, k, v) for n, found in tags.items() for k, t in found.items() for v in t.values},
        [(e["type"], e["key"]) for e in own],
        len(entries(api.graph)),
    )


def test_a_steward_previews_a_family_block_and_nothing_changes(api):
    before = _everything(api)
    with api.client("steward") as steward:
        answer = steward.post("/preview", json=BLOCK)
    assert answer.status_code == 200, answer.text
    found = answer.json()
    assert _everything(api) == before  # no tag, no block, no audit entry
    items = {(i["node"], i["key"]): (i["before"], i["after"]) for g in found["groups"] for i in g["items"]}
    assert items[("ods.user_profile.email", "pii")] == (["L3"], [])
    assert items[("ods.user_profile.email", "pii_type")] == (["email"], [])
    assert items[("ads.app_user_rank_7d.email", "pii")] == (["L3"], [])
    assert found["columns"] == len({n for n, _ in items}) and found["total"] == len(items)
    assert found["tables"] == len(found["groups"]) == len({n.rpartition(".")[0] for n, _ in items})
    assert found["hidden"] == 0 and not found["truncated"]


def test_the_preview_takes_the_rights_of_the_change(api):
    with api.client() as anonymous:
        assert anonymous.post("/preview", json=BLOCK).status_code == 401
    with api.client("viewer") as viewer:
        answer = viewer.post("/preview", json=BLOCK)
        assert answer.status_code == 403 and answer.json()["detail"] == "steward right needed"
    with api.client("ods_steward") as limited:
        outside = limited.post("/preview", json={**BLOCK, "node": "dwd.user_contact_df.email"})
        assert outside.status_code == 403, outside.text
        assert "database dwd" in outside.json()["detail"]
        # inside its database: what the change does downstream elsewhere is counted, not listed
        inside = limited.post("/preview", json=BLOCK)
    assert inside.status_code == 200, inside.text
    found = inside.json()
    listed = [i["node"] for g in found["groups"] for i in g["items"]]
    assert listed and all(node.startswith("ods.") for node in listed)
    assert found["hidden"] > 0


def test_bad_previews_name_their_input(api):
    with api.client("steward") as steward:
        missing = steward.post("/preview", json={**BLOCK, "node": "ods.user_profile.nope"})
        assert missing.status_code == 404 and "ods.user_profile.nope" in missing.text
        level = steward.post("/preview", json={**BLOCK, "action": "set", "values": ["L9"]})
        assert level.status_code == 400 and "L9" in level.text
        nothing = steward.post("/preview", json={**BLOCK, "action": "unblock"})
        assert nothing.status_code == 404 and "not blocked" in nothing.text
        limited = steward.post("/preview", params={"limit": 1}, json=BLOCK)
    assert limited.status_code == 200
    found = limited.json()
    assert found["truncated"] and found["total"] > 1
    assert sum(len(g["items"]) for g in found["groups"]) == 1
