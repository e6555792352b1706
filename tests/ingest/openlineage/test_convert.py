"""An OpenLineage event as a task's lineage: the SQL facet read by Watershed's extractor, else the
columnLineage facet mapped to kinds and weak-reference roles."""

from __future__ import annotations

from watershed.graph.lineage import OPENLINEAGE_MASKING
from watershed.ingest.openlineage.convert import Converter, RunState, runtime_edges
from watershed.ingest.openlineage.events import parse_events
from watershed.ingest.settings import IngestSettings

from .samples import facet_event, field, run_event


def _convert(event):
    return Converter(IngestSettings()).convert(parse_events(event)[0])


def test_the_column_facet_gives_kinds_roles_masking_and_descriptions():
    converted = _convert(facet_event())
    lineage = converted.lineage
    assert converted.task.task_id == "spark_app.`app.insert_dw_user_daily`"
    assert converted.task.source == "openlineage:spark_app"
    sources = {(c.target, s.column): s for c in lineage.columns for s in c.sources}
    hashed = sources[("dw.user_daily.uid_hash", "ods.user_log.uid")]
    assert (hashed.kind, hashed.functions, hashed.description) == (
        "expression",
        [OPENLINEAGE_MASKING],
        "sha2(uid, 256)",
    )
    assert sources[("dw.user_daily.app", "ods.user_log.app")].kind == "direct"
    assert sources[("dw.user_daily.events", "ods.user_log.event")].kind == "aggregate"
    assert {(w.column, w.role) for w in lineage.weak_references} == {
        ("ods.user_log.dt", "filter"),
        ("ods.app_dim.app_id", "join"),
        ("ods.user_log.ts", "window"),
        ("ods.user_log.app", "group"),
        ("ods.user_log.event", "condition"),
        ("ods.user_log.ts", "order"),
    }
    assert {(e.source, e.target) for e in lineage.table_edges} == {
        ("ods.user_log", "dw.user_daily"),
        ("ods.app_dim", "dw.user_daily"),
    }
    assert converted.runtime is None


def test_the_facets_older_form_still_reads():
    event = run_event(columns={"x": [field("ods.user_log", "uid")]})
    fields = event["outputs"][0]["facets"]["columnLineage"]["fields"]["x"]
    fields["transformationType"], fields["transformationDescription"] = "MASKED", "md5(uid)"
    for f in fields["inputFields"]:
        f.pop("transformations")
    (column,) = _convert(event).lineage.columns
    assert (column.sources[0].functions, column.sources[0].description) == ([OPENLINEAGE_MASKING], "md5(uid)")


def test_no_column_facet_gives_table_edges_only():
    lineage = _convert(run_event(inputs=("ods.a", "ods.b"))).lineage
    assert lineage.columns == [] and lineage.weak_references == []
    assert {(e.source, e.target) for e in lineage.table_edges} == {
        ("ods.a", "dw.user_daily"),
        ("ods.b", "dw.user_daily"),
    }


def test_sql_is_read_by_the_extractor_with_the_nominal_date_and_the_facet_kept_beside():
    sql = (
        "INSERT OVERWRITE TABLE dw.user_daily SELECT sha2(uid, 256) AS uid_hash, app, count(event) AS events "
        "FROM ods.user_log WHERE dt = '${date}' GROUP BY uid, app"
    )
    converted = _convert(facet_event(sql=sql))
    assert converted.task.dialect == "spark"  # the processing engine's
    lineage = converted.lineage
    (read,) = [r for r in lineage.reads if r.table == "ods.user_log"]
    assert [p.text for p in read.predicates] == ["dt = '2024-01-31'"]
    sources = {(c.target, s.column): s for c in lineage.columns for s in c.sources}
    assert sources[("dw.user_daily.uid_hash", "ods.user_log.uid")].functions == ["sha2"]
    assert ["ods.user_log.uid", "dw.user_daily.uid_hash", "expression"] in converted.runtime
    assert converted.runtime == runtime_edges(_convert(facet_event()).lineage)


def test_the_same_content_is_the_same_version_whichever_run_sent_it():
    one, two = _convert(facet_event()), _convert(facet_event(time="2024-02-01T02:00:00Z"))
    assert one.task.version == two.task.version
    other = facet_event()
    other["outputs"][0]["facets"]["columnLineage"]["fields"]["app"]["inputFields"][0]["field"] = "app_name"
    assert _convert(other).task.version != one.task.version


def test_an_event_without_lineage_loads_nothing():
    event = run_event()
    event["outputs"] = []
    assert _convert(event) is None


def test_a_later_stage_or_a_newer_run_supersedes_and_nothing_else_does():
    from datetime import datetime

    def state(run, kind, hour):
        return RunState(run, kind, datetime(2024, 1, 31, hour).astimezone())

    complete = state("a", "COMPLETE", 2)
    assert not state("a", "START", 3).supersedes(complete)  # START after COMPLETE, even if later
    assert not state("a", "COMPLETE", 2).supersedes(complete)  # the same event
    assert state("a", "COMPLETE", 3).supersedes(complete)
    assert state("b", "START", 3).supersedes(complete)  # a newer run
    assert not state("c", "COMPLETE", 1).supersedes(complete)  # an older run
    assert state("a", "START", 1).supersedes(None)


def test_the_policy_counts_the_masking_hop_as_a_hash():
    from watershed.propagation.policy import default_policy

    policy = default_policy()
    family = next(iter(policy.sensitivity.values()))
    assert policy.effect(OPENLINEAGE_MASKING, family) == f"downgrade:{family.pseudonymised}"


def test_a_stale_sql_facets_job_is_versioned_by_its_column_facet():
    stale = "INSERT OVERWRITE TABLE dw.elsewhere SELECT a FROM ods.x"
    one = _convert(facet_event(sql=stale))
    other = facet_event(sql=stale)
    other["outputs"][0]["facets"]["columnLineage"]["fields"]["app"]["inputFields"][0]["field"] = "app_name"
    assert one.task.sql == "" and one.runtime is None
    assert _convert(other).task.version != one.task.version
