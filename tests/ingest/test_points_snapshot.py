"""The points of every statement in tests/ingest/points_snapshot/cases.json are what they were
when the snapshot was made (make.py, run on the code before the points walk's speed-up, issue 41):
TPC-DS and TPC-H, the generated warehouse's tasks, the lineage suites' cases and the statements
the points tests check. A change of the walk that is meant to keep every answer is checked here;
one that changes an answer on purpose runs make.py again and says why in its commit."""

from __future__ import annotations

import json

import pytest

from tests.ingest.points_snapshot.make import CASES, answer, resolved

SNAPSHOT = json.loads(CASES.read_text())
FAMILIES = sorted({case["name"].split("::")[0].split("/")[0] for case in SNAPSHOT["cases"]})


@pytest.mark.parametrize("family", FAMILIES)
def test_points_are_the_snapshots(family):
    cases = [c for c in SNAPSHOT["cases"] if c["name"].split("::")[0].split("/")[0] == family]
    changed = [
        f"{case['name']}: {case['expected']} -> {found}"
        for case, inputs, catalog in resolved(cases, SNAPSHOT["catalogs"])
        if (found := answer(inputs, catalog)) != case["expected"]
    ]
    assert not changed, f"{len(changed)} of {len(cases)} changed:\n" + "\n".join(changed[:20])
