"""Tasks the OpenLineage intake loads are of their producer's source, record when they were seen,
and go stale (reported, never deleted) when their job is not seen again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.ingest.openlineage.samples import facet_event
from watershed.api.service import lineage_sources
from watershed.api.service.lineage_intake import Intake
from watershed.ingest.settings import IngestSettings

TASK = "spark_app.`app.insert_dw_user_daily`"
SEEN = "MATCH (k:Task {id: $id}) RETURN k.source, k.seen_at"


def test_an_intake_task_is_seen_goes_stale_and_a_new_run_refreshes_it(backend_store):
    intake = Intake(backend_store, IngestSettings())
    assert intake.take(facet_event(), "producer").loaded == [TASK]
    source, seen_at = backend_store.read(SEEN, {"id": TASK})[0]
    assert source == "openlineage:spark_app" and seen_at.endswith("+00:00")
    loaded_at = datetime.fromisoformat(seen_at)
    assert abs(datetime.now(UTC) - loaded_at) < timedelta(hours=1)

    page = lineage_sources.sources(backend_store, stale_days=7)
    assert [(s.name, s.kind, s.tasks, s.last_seen, s.stale) for s in page.items] == [
        ("openlineage:spark_app", "openlineage", 1, seen_at, 0)
    ]
    # eight days on, the job not seen again: stale, reported, still there
    later = loaded_at + timedelta(days=8)
    assert lineage_sources.sources(backend_store, stale_days=7, now=later).items[0].stale == 1
    stale = lineage_sources.stale_tasks(backend_store, stale_days=7, now=later)
    assert [(t.task_id, t.source) for t in stale.items] == [(TASK, "openlineage:spark_app")]

    # A new run of the same job with the same lineage: unchanged, but seen again.
    backend_store.write_all(
        [("MATCH (k:Task {id: $id}) SET k.seen_at = $old", {"id": TASK, "old": "2020-01-01T00:00:00+00:00"})]
    )
    again = facet_event(time="2024-02-01T02:00:00+00:00")
    assert intake.take(again, "producer").unchanged == [TASK]
    refreshed = backend_store.read(SEEN, {"id": TASK})[0][1]
    assert refreshed != "2020-01-01T00:00:00+00:00" and refreshed >= seen_at
