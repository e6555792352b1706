"""The why of a node a block keeps a tag from names the block: its node, steward and time (the
answer said only "has no pii tag"); the why page shows this detail."""

from __future__ import annotations

from tests.support.api_service import propagate_locally


def test_the_why_of_a_blocked_tag_names_where_who_and_when(api):
    with api.client("steward") as steward:
        blocked = steward.put("/nodes/dwd.user_contact_df.email/blocks/pii")
        assert blocked.status_code == 200, blocked.text
        at = next(e["at"] for e in blocked.json()["set_here"] if e["type"] == "BLOCKS")
        propagate_locally(api.graph, api.settings)
        try:
            why = steward.get("/nodes/ads.app_user_rank_7d.email/tags/pii/why")
            assert why.status_code == 404
            assert why.json()["detail"] == (
                "ads.app_user_rank_7d.email has no pii tag; pii is blocked at dwd.user_contact_df.email "
                f"(1 hop(s) upstream) by steward at {at}"
            )
        finally:
            steward.delete("/nodes/dwd.user_contact_df.email/blocks/pii")
            propagate_locally(api.graph, api.settings)
