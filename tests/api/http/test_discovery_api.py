"""Discovery through the API: stewards sample and decide within their databases, viewers list,
every decision is audited, and lists page."""

from __future__ import annotations

import pytest

from tests.discovery.warehouse import EXPECTED, labelled_table, write_parquet
from watershed.graph.catalog import Catalog


@pytest.fixture(scope="module")
def discovered(api, tmp_path_factory):
    """ods.ext_contacts and dws.ext_contacts: the labelled table at locations the catalog records."""
    root = tmp_path_factory.mktemp("discovery-warehouse")
    table = labelled_table(rows=80)
    tables = {}
    for db in ("ods", "dws"):
        write_parquet(root / db / "ext_contacts", table, files=1)
        tables[f"{db}.ext_contacts"] = {
            "columns": dict.fromkeys(table.column_names, "string"),
            "location": str(root / db / "ext_contacts"),
        }
    api.graph.upsert_catalog(Catalog.from_dict({"tables": tables}))
    return root


def test_a_viewer_lists_but_neither_samples_nor_decides(api, discovered):
    with api.client("viewer") as viewer:
        assert viewer.post("/discovery/runs", json={"tables": ["ods.ext_contacts"]}).status_code == 403
        assert viewer.get("/discovery/proposals").status_code == 200
        assert viewer.post("/discovery/proposals/ods.ext_contacts.c17/accept").status_code == 403


def test_a_steward_samples_lists_accepts_and_rejects(api, discovered):
    with api.client("steward") as steward:
        run = steward.post("/discovery/runs", json={"tables": ["ods.ext_contacts"]})
        assert run.status_code == 200, run.text
        (report,) = run.json()["tables"]
        assert {p["column"].rsplit(".", 1)[1]: p["tags"]["pii_type"] for p in report["proposals"]} == EXPECTED
        first = steward.get("/discovery/proposals", params={"table": "ods.ext_contacts", "limit": 4}).json()
        assert len(first["items"]) == 4 and first["next_cursor"]
        rest = steward.get(
            "/discovery/proposals", params={"table": "ods.ext_contacts", "cursor": first["next_cursor"]}
        ).json()
        assert len(first["items"]) + len(rest["items"]) == len(EXPECTED)
        accepted = steward.post("/discovery/proposals/ods.ext_contacts.k3/accept")
        assert accepted.status_code == 200 and accepted.json()["status"] == "accepted"
        again = steward.post("/discovery/proposals/ods.ext_contacts.k3/accept")
        assert again.status_code == 409 and "already accepted" in again.json()["detail"]
        tags = steward.get("/nodes/ods.ext_contacts.k3/tags").json()
        assert {(e["origin"], e["key"], e["value"]) for e in tags["set_here"]} == {
            ("discovered", "pii", "L4"),
            ("discovered", "pii_type", "id_card"),
        }
        assert steward.post("/discovery/proposals/ods.ext_contacts.digest/reject").status_code == 404
        rejected = steward.post("/discovery/proposals/ods.ext_contacts.contact/reject")
        assert rejected.status_code == 200 and rejected.json()["status"] == "rejected"
        open_ones = steward.get("/discovery/proposals", params={"status": "open", "limit": 500}).json()[
            "items"
        ]
        assert "ods.ext_contacts.contact" not in [p["column"] for p in open_ones]
    with api.client("admin") as admin:
        audit = admin.get("/audit", params={"actor": "steward", "action": "discovery."}).json()["items"]
    assert [(e["action"], e["target"]) for e in audit] == [
        ("discovery.reject", "ods.ext_contacts.contact"),
        ("discovery.accept", "ods.ext_contacts.k3"),
    ]


def test_a_limited_steward_samples_and_decides_only_its_databases(api, discovered):
    with api.client("ods_steward") as ods:
        other = ods.post("/discovery/runs", json={"tables": ["dws.ext_contacts"]})
        assert other.status_code == 403 and other.json()["detail"] == "steward right on database dws needed"
    with api.client("steward") as steward:
        assert steward.post("/discovery/runs", json={"tables": ["dws.ext_contacts"]}).status_code == 200
    with api.client("ods_steward") as ods:
        refused = ods.post("/discovery/proposals/dws.ext_contacts.c17/accept")
        assert refused.status_code == 403


def test_bad_requests_name_what_is_wrong(api, discovered):
    with api.client("steward") as steward:
        assert steward.post("/discovery/runs", json={"tables": []}).status_code == 422
        # a column id is no table id: the body's pattern refuses it
        assert steward.post("/discovery/runs", json={"tables": ["ods.ext_contacts.c17"]}).status_code == 422
        assert steward.get("/discovery/proposals", params={"status": "maybe"}).status_code == 422
        assert steward.get("/discovery/proposals", params={"cursor": "nonsense"}).status_code == 400
