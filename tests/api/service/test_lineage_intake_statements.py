"""A batch of OpenLineage events is loaded in as many statements as one event: the run states and
the audit entries of the batch's loads are one statement, not one entry statement per event."""

from __future__ import annotations

import itertools

import pytest

from tests.ingest.openlineage.samples import facet_event
from watershed.api.service import audit
from watershed.api.service.lineage_intake import AUDIT_ACTION, Intake
from watershed.graph.falkordb_store import FalkorDBStore
from watershed.ingest.settings import IngestSettings

_names = itertools.count()


class CountingStore(FalkorDBStore):
    """A FalkorDB store that remembers how many statements each write sent."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.writes: list[int] = []

    def write_all(self, statements):
        self.writes.append(len(statements))
        super().write_all(statements)


@pytest.fixture
def store(falkordb_server):
    graph = CountingStore(
        falkordb_server.host, falkordb_server.port, graph=f"intake_statements_{next(_names)}"
    )
    graph.ensure_schema()
    yield graph
    graph.clear()
    graph.close()


def test_a_batch_is_written_in_as_many_statements_as_one_event(store):
    intake = Intake(store, IngestSettings())
    intake.take(facet_event(job="job.one"), "producer")
    batch = [facet_event(job=f"job.{n}") for n in range(20)]
    result = intake.take(batch, "producer")
    assert len(result.loaded) == 20
    one, twenty = store.writes
    assert twenty <= one  # (the first also created the tables' columns)
    entries = [e for e in audit.entries(store, limit=100) if e.action == AUDIT_ACTION]
    assert len(entries) == 21 and {e.actor for e in entries} == {"producer"}
    assert {e.target for e in entries} == {f"spark_app.`job.{n}`" for n in range(20)} | {
        "spark_app.`job.one`"
    }
    # a new run of unchanged lineage: its run state is set, and no entry is written
    again = intake.take(facet_event(job="job.one", time="2024-02-01T02:00:00+00:00"), "producer")
    assert again.unchanged == ["spark_app.`job.one`"]
    assert len([e for e in audit.entries(store, limit=100) if e.action == AUDIT_ACTION]) == 21
