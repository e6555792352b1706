"""Each event kind is written where its change is: a discovery scan's open proposals, a harvest's
errors (a spark-submit run's, read back by the nightly), a nightly run that is incomplete, slow or
stopped by a failing step, and the sensitive columns a coverage snapshot finds newly unprotected.
Each test subscribes first (with no subscription an event writes nothing) and reads the outbox."""

from __future__ import annotations

import json

import pytest

from tests.discovery.warehouse import EXPECTED, labelled_table, write_parquet
from watershed.api.service import discovery
from watershed.api.service.nightly import NightlySettings, steps
from watershed.api.service.nightly.chain import run_nightly
from watershed.api.service.nightly.errors import NightlyError
from watershed.api.service.notifications import delivery, subscriptions
from watershed.discovery.settings import DiscoverySettings
from watershed.graph.catalog import Catalog
from watershed.propagation.graph_store import encode_tags
from watershed.propagation.policy import default_policy
from watershed.propagation.rules import TagValue

DAY = "2026-11-20"


def _subscribe(graph, *kinds: str) -> str:
    return subscriptions.add(graph, "http://127.0.0.1:9/hook", kinds, actor="test").id


def _events(graph, kind: str) -> list[dict]:
    """The data of the pending deliveries of `kind`, oldest first."""
    return [d.payload["data"] for d in delivery.pending(graph, limit=500) if d.kind == kind]


@pytest.fixture
def nightly_env(graph_store, falkordb_server, tmp_path, monkeypatch) -> NightlySettings:
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(falkordb_server.port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    monkeypatch.setenv("WATERSHED_DATA_DIR", str(tmp_path))
    return NightlySettings()


def test_a_scan_that_leaves_proposals_open_says_they_wait(graph_store, tmp_path):
    _subscribe(graph_store, "proposal.waiting")
    table = labelled_table(rows=120)
    write_parquet(tmp_path / "ods" / "ext", table)
    graph_store.upsert_catalog(
        Catalog.from_dict(
            {
                "tables": {
                    "ods.ext": {
                        "columns": dict.fromkeys(table.column_names, "string"),
                        "location": str(tmp_path / "ods" / "ext"),
                        "format": "parquet",
                    }
                }
            }
        )
    )
    run = discovery.discover(graph_store, default_policy(), DiscoverySettings(), tables=["ods.ext"])
    (waiting,) = _events(graph_store, "proposal.waiting")
    assert (waiting["table"], waiting["run"]) == ("ods.ext", run.run)
    assert {p["column"]: p["tags"]["pii_type"] for p in waiting["proposals"]} == {
        f"ods.ext.{c}": t for c, t in EXPECTED.items()
    }
    # files unchanged: no scan, no second event
    discovery.discover(graph_store, default_policy(), DiscoverySettings(), tables=["ods.ext"])
    assert len(_events(graph_store, "proposal.waiting")) == 1


def test_a_spark_submit_harvest_with_errors_is_announced_when_the_nightly_reads_its_run(
    graph_store, nightly_env
):
    _subscribe(graph_store, "harvest.errors")
    run_dir = steps.harvest_out(nightly_env, DAY) / "harvest-1"
    run_dir.mkdir(parents=True)
    record = {"run_id": "harvest-1", "status": "ok", "source": "files:/t", "tasks": 5, "tasks_with_errors": 2}
    (run_dir / "run.json").write_text(json.dumps(record | {"statement_errors": 3}))
    steps.harvest_result(DAY, nightly_env)
    assert _events(graph_store, "harvest.errors") == [
        {
            "run": "harvest-1",
            "source": "files:/t",
            "tasks": 5,
            "tasks_with_errors": 2,
            "statement_errors": 3,
            "errors": "/api/v1/harvest/runs/harvest-1/errors",
        }
    ]


def _night(settings: NightlySettings, day: str, seconds: float, skip: tuple[str, ...] = ()) -> None:
    for step in steps.STEPS:
        if step not in skip:
            steps.save_result(settings, steps.StepResult(step=step, date=day, seconds=seconds))
    steps.summary(day, settings)


def test_an_incomplete_night_fails_and_one_over_twice_the_median_is_slow(graph_store, nightly_env):
    _subscribe(graph_store, "nightly.failed", "nightly.slow")
    for day in ("2026-11-16", "2026-11-17", "2026-11-18"):
        _night(nightly_env, day, 1.0)
    assert _events(graph_store, "nightly.slow") == [] and _events(graph_store, "nightly.failed") == []
    steps_count = len(steps.STEPS)
    # at twice the median: not slow yet
    _night(nightly_env, "2026-11-19", 2.0)
    assert _events(graph_store, "nightly.slow") == []
    _night(nightly_env, DAY, 3.0, skip=("emit",))
    assert _events(graph_store, "nightly.failed") == [
        {"date": DAY, "status": "incomplete", "missing": ["emit"]}
    ]
    (slow,) = _events(graph_store, "nightly.slow")
    assert slow == {
        "date": DAY,
        "seconds": 3.0 * (steps_count - 1),
        "median_seconds": float(steps_count),
        "runs": 4,
    }


def test_a_step_that_raises_is_a_failed_night_naming_the_step(graph_store, nightly_env):
    _subscribe(graph_store, "nightly.failed")
    with pytest.raises(NightlyError) as raised:
        run_nightly(DAY, settings=nightly_env)  # no task corpus: the harvest step refuses
    (failed,) = _events(graph_store, "nightly.failed")
    assert failed == {"date": DAY, "step": "harvest", "error": f"NightlyError: {raised.value}"}


def test_a_coverage_snapshot_announces_the_sensitive_columns_newly_unprotected(graph_store, nightly_env):
    _subscribe(graph_store, "sensitive.unprotected")

    def column(name: str) -> None:
        graph_store.execute(
            "MERGE (t:Table {id: 'ods.users', db: 'ods', name: 'users'}) "
            "CREATE (t)-[:HAS_COLUMN]->(:Column {id: $id, table: 'ods.users', name: $name, tags: $tags})",
            {
                "id": f"ods.users.{name}",
                "name": name,
                "tags": encode_tags({"pii": TagValue("pii", frozenset(["L4"]), "seed")}),
            },
        )

    column("ssn")
    steps.coverage("2026-11-19", nightly_env)
    column("ssn2")
    steps.coverage(DAY, nightly_env)
    steps.coverage(DAY, nightly_env)  # a re-run compares with the same earlier snapshot
    assert [
        (e["date"], e["previous"], e["columns"], e["count"])
        for e in _events(graph_store, "sensitive.unprotected")
    ] == [
        ("2026-11-19", None, ["ods.users.ssn"], 1),
        (DAY, "2026-11-19", ["ods.users.ssn2"], 1),
        (DAY, "2026-11-19", ["ods.users.ssn2"], 1),
    ]


@pytest.mark.spark
def test_a_harvest_with_a_statement_it_cannot_analyse_is_announced(graph_store, nightly_env, spark, tmp_path):
    from watershed.api.service.harvest_runs import HarvestSource, run
    from watershed.ingest.settings import IngestSettings

    _subscribe(graph_store, "harvest.errors")
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "good.sql").write_text("INSERT OVERWRITE TABLE dw.good SELECT a FROM ods.src;\n")
    (tasks / "bad.sql").write_text("INSERT INTO TABLE dw.bad SELEC nothing FROM;\n")
    report = run(
        HarvestSource(tasks=tasks),
        out=tmp_path / "out",
        settings=IngestSettings(),
        graph=nightly_env,
        spark=spark,
        prune=False,
    )
    (announced,) = _events(graph_store, "harvest.errors")
    assert (announced["run"], announced["tasks"], announced["tasks_with_errors"]) == (report.run_id, 2, 1)
