"""A producer's description of a hop (kept on FLOWS_TO by the intake) goes out as the emitted
transformation's description, so it survives Watershed → OpenLineage → Watershed; an edge without
one goes out in Watershed's own words."""

from __future__ import annotations

import json

import pytest

from tests.ingest.openlineage.samples import facet_event
from tests.support.openlineage_emission import consumer_graph
from watershed.api.service import lineage_emission as service
from watershed.api.service.lineage_intake import Intake
from watershed.graph import ids
from watershed.ingest.settings import IngestSettings
from watershed.propagation.policy import default_policy

TASK = "spark_app.`app.insert_dw_user_daily`"
DESCRIBED = "MATCH (s:Column)-[r:FLOWS_TO]->(t:Column) WHERE r.task = $task RETURN s.id, t.id, r.description"


@pytest.fixture
def consumer(falkordb_server):
    with consumer_graph(falkordb_server, "description_round_trip") as store:
        yield store


def test_a_kept_description_survives_a_round_trip(graph_store, consumer, tmp_path):
    Intake(graph_store, IngestSettings()).take(facet_event(), "producer")
    out = tmp_path / "events.jsonl"
    service.emit(graph_store, service.file_target(out), str(out), default_policy())
    (event,) = [json.loads(line) for line in out.read_text().splitlines()]
    fields = event["outputs"][0]["facets"]["columnLineage"]["fields"]
    sent = {
        name: [t["description"] for field in column["inputFields"] for t in field["transformations"]]
        for name, column in fields.items()
    }
    assert sent == {"uid_hash": ["sha2(uid, 256)"], "app": ["direct"], "events": ["aggregate"]}

    event["job"]["facets"].pop("sql", None)
    Intake(consumer, IngestSettings()).take(event, "round-trip")
    got = {(s, t): d for s, t, d in consumer.read(DESCRIBED, {"task": ids.join("watershed", TASK)})}
    assert got[("ods.user_log.uid", "dw.user_daily.uid_hash")] == "sha2(uid, 256)"
