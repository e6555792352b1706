"""OpenLineage events at the boundary: what the spec requires is checked, a bad field is named
by its JSON path, facets nobody reads are accepted."""

from __future__ import annotations

import copy

import pytest

from watershed.ingest.openlineage.events import DatasetEvent, EventError, JobEvent, RunEvent, parse_events

RUN = {
    "eventType": "COMPLETE",
    "eventTime": "2024-01-31T02:00:00.123+08:00",
    "producer": "https://github.com/OpenLineage/OpenLineage/tree/1.54.0/client/python",
    "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    "run": {"runId": "0190d0a6-1c2b-7d3e-8f40-000000000001", "facets": {"someVendor": {"x": [1, 2]}}},
    "job": {
        "namespace": "spark",
        "name": "load_dw",
        "facets": {"sql": {"query": "select 1", "dialect": "spark"}},
    },
    "inputs": [{"namespace": "hive://h:9083", "name": "ods.a"}],
    "outputs": [
        {
            "namespace": "hive://h:9083",
            "name": "dw.b",
            "facets": {
                "columnLineage": {
                    "_producer": "p",
                    "_schemaURL": "https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json",
                    "fields": {
                        "x": {
                            "inputFields": [
                                {
                                    "namespace": "hive://h:9083",
                                    "name": "ods.a",
                                    "field": "x",
                                    "transformations": [
                                        {"type": "DIRECT", "subtype": "TRANSFORMATION", "masking": True}
                                    ],
                                }
                            ]
                        }
                    },
                }
            },
        }
    ],
}


def test_a_run_event_with_unknown_facets_is_taken():
    (event,) = parse_events(RUN)
    assert isinstance(event, RunEvent)
    column = event.outputs[0].facets.columnLineage.fields["x"]
    assert column.inputFields[0].transformations[0].masking is True
    assert event.job.facets.sql.dialect == "spark"


def test_job_and_dataset_events_are_told_apart():
    job = {k: v for k, v in RUN.items() if k not in ("run", "eventType")}
    dataset = {k: RUN[k] for k in ("eventTime", "producer", "schemaURL")} | {
        "dataset": {"namespace": "n", "name": "d"}
    }
    assert [type(e) for e in parse_events([job, dataset])] == [JobEvent, DatasetEvent]


def _broken(change):
    event = copy.deepcopy(RUN)
    change(event)
    return event


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda e: e["run"].update(runId="not-a-uuid"), "[1].run.runId"),
        (lambda e: e.update(eventTime="2024-01-31T02:00:00"), "[1].eventTime"),
        (lambda e: e.update(eventType="DONE"), "[1].eventType"),
        (lambda e: e.update(producer="spark"), "[1].producer"),
        (lambda e: e.pop("schemaURL"), "[1].schemaURL"),
        (lambda e: e["job"].pop("name"), "[1].job.name"),
        (lambda e: e["inputs"][0].update(namespace=""), "[1].inputs[0].namespace"),
        (
            lambda e: e["outputs"][0]["facets"]["columnLineage"]["fields"]["x"]["inputFields"][0][
                "transformations"
            ][0].update(type="SIDEWAYS"),
            "[1].outputs[0].facets.columnLineage.fields.x.inputFields[0].transformations[0].type",
        ),
        (lambda e: e.update(schemaURL="https://openlineage.io/spec/1-0-5/OpenLineage.json"), "[1].schemaURL"),
    ],
)
def test_a_bad_field_is_named_by_its_path_in_the_batch(change, path):
    with pytest.raises(EventError) as raised:
        parse_events([RUN, _broken(change)])
    assert raised.value.path == path


def test_something_that_is_no_event_is_named():
    with pytest.raises(EventError, match=r"\[0\]: an event is a JSON object"):
        parse_events([3])
    with pytest.raises(EventError, match=r"a run .* a job .* a dataset"):
        parse_events({"eventTime": RUN["eventTime"]})
