"""Discovery in Chromium: a steward samples a root table and a copy of it from the discovery page,
accepts one proposal and rejects another; the seeds and decisions are in the graph, the copy of the
accepted column is flagged as a possible leak with its path, and the column pages show both."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from bench.pii_values import column_values
from bench.ui_render import login
from tests.discovery.warehouse import write_parquet
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage

TASK = "INSERT OVERWRITE TABLE disc.people_copy SELECT c17 AS mobile, k3 AS k3c, town FROM disc.people"
ROWS = 40


@pytest.fixture(scope="module")
def people(web_stack, tmp_path_factory):
    """disc.people (names that say nothing) and disc.people_copy, with Parquet files."""
    root = tmp_path_factory.mktemp("discovery-ui")
    r = random.Random(21)
    data = {
        "c17": column_values("cn_mobile", ROWS, r),
        "k3": column_values("cn_ric", ROWS, r),
        "town": column_values("city", ROWS, r),
    }
    source = pa.table({k: pa.array(v, pa.string()) for k, v in data.items()})
    write_parquet(root / "people", source, files=1)
    write_parquet(root / "people_copy", source.rename_columns(["mobile", "k3c", "town"]), files=1)
    catalog = Catalog.from_dict(
        {
            "tables": {
                "disc.people": {"columns": list(data), "location": str(root / "people")},
                "disc.people_copy": {
                    "columns": ["mobile", "k3c", "town"],
                    "location": str(root / "people_copy"),
                },
            }
        }
    )
    web_stack.graph.upsert_catalog(catalog)
    task = SqlTask(task_id="t_people_copy", sql=TASK)
    lineage = extract_lineage(task, catalog)
    assert not lineage.errors, lineage.errors
    web_stack.graph.upsert_tasks([(task, lineage)], catalog)
    return root


def _row(page, column: str):
    return page.locator(f"[data-testid=proposal][data-column='{column}']")


def test_a_steward_samples_accepts_one_proposal_and_rejects_another(web_stack, people, page, shots):
    login(page, web_stack.base_url, web_stack.tokens["steward"])
    page.click("header a:text-is('Discovery')")
    page.wait_for_selector("[data-testid=discovery-page]")
    page.fill("[data-testid=sample-form] input[name=tables]", "disc.people, disc.people_copy")
    page.click("[data-testid=sample-form] button[type=submit]")
    page.wait_for_selector("[data-testid=sample-run]")
    assert "disc.people sampled" in page.text_content("[data-testid=sample-run]")
    _row(page, "disc.people.c17").wait_for()
    examples = _row(page, "disc.people.c17").locator("[data-testid=examples]").text_content()
    assert "*" in examples  # masked evidence, never a sampled value
    assert _row(page, "disc.people.k3").is_visible()
    shots("proposals")

    # accept the phone numbers, reject the identity numbers
    _row(page, "disc.people.c17").locator("button[data-action=accept]").click()
    page.wait_for_selector("[data-testid=discovery-message]")
    assert "accepted" in page.text_content("[data-testid=discovery-message]")
    _row(page, "disc.people.c17").wait_for(state="detached")  # no longer open
    _row(page, "disc.people.k3").locator("button[data-action=reject]").click()
    _row(page, "disc.people.k3").wait_for(state="detached")
    shots("decided")

    admin = web_stack.tokens["admin"]
    status, tags = web_stack.call("GET", "/nodes/disc.people.c17/tags", admin)
    assert status == 200
    assert {(e["origin"], e["key"], e["value"], e["by"]) for e in tags["set_here"]} == {
        ("discovered", "pii", "L3", "sam"),
        ("discovered", "pii_type", "phone", "sam"),
    }
    status, rejected = web_stack.call("GET", "/discovery/proposals?column=disc.people.k3", admin)
    assert status == 200 and [p["status"] for p in rejected["items"]] == ["rejected"]
    status, untouched = web_stack.call("GET", "/nodes/disc.people.k3/tags", admin)
    assert untouched["set_here"] == []

    # the copy of the phone numbers is a possible leak: no tag reached it, the path names its root
    leak = page.locator("[data-testid=flag][data-column='disc.people_copy.mobile']")
    leak.wait_for()
    assert leak.get_attribute("data-kind") == "leak"
    assert "disc.people.c17" in leak.locator("[data-testid=flag-path]").text_content()
    shots("flags")

    # the column pages: the flag in the discovery panel; the accepted seed, once propagated, in the
    # tag editor, and on the copy
    page.goto(f"{web_stack.base_url}/#/column/disc.people_copy.mobile")
    flag = page.wait_for_selector("[data-testid=column-flag][data-kind=leak]")
    assert "disc.people.c17" in flag.text_content()
    shots("column-flag")
    status, run = web_stack.call("POST", "/propagation/runs", admin, {"full": False})
    assert status == 202, run
    assert web_stack.wait_for_run(run["run_id"])["status"] == "done"
    assert "pii" in web_stack.tag_keys("disc.people_copy.mobile")
    page.goto(f"{web_stack.base_url}/#/column/disc.people.c17")
    page.wait_for_selector("[data-testid=column-proposal][data-status=accepted]")
    assert "discovered" in page.locator("[data-testid=tags] li[data-tag=pii]").text_content()
    shots("column-seed")


def test_a_viewer_sees_proposals_and_flags_but_no_buttons(web_stack, people, page):
    web_stack.call("POST", "/discovery/runs", web_stack.tokens["steward"], {"tables": ["disc.people_copy"]})
    login(page, web_stack.base_url, web_stack.tokens["viewer"])
    page.goto(f"{web_stack.base_url}/#/discovery")
    page.wait_for_selector("[data-testid=flags] [data-testid=flag]")
    assert page.locator("[data-testid=sample-form]").count() == 0
    page.locator("[data-testid=proposal]").first.wait_for()
    assert page.locator("[data-testid=proposal] button").count() == 0
