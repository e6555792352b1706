"""An incremental run's descriptions-and-owners pass recomputes only the columns downstream (along
direct copies) of what changed, and leaves what a full recompute would: after each kind of change
(a steward's value set and cleared, a catalog comment, a table's owner, a copy turned into an
expression, a new task) a full pass on the result finds nothing to write. Its reads name only the
changed part of the graph (issue 41: the pass read every description and owner after any change)."""

from __future__ import annotations

import pytest

from tests.support.reads_kept import ReadsKept
from watershed.api.service import node_metadata
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.propagation import metadata
from watershed.propagation.coordinator import local_runner, propagate
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy
from watershed.propagation.run_state import RunState
from watershed.propagation.settings import PropagationSettings

WIDE = [f"c{i}" for i in range(12)]
CATALOG = {
    "tables": {
        "ods.a": {
            "columns": [
                {"name": "x", "type": "string", "description": "X of a"},
                {"name": "y", "type": "string", "description": "Y of a"},
                {"name": "z", "type": "string"},
            ],
            "owner": "team-a",
        },
        "ods.b": {
            "columns": [
                {"name": "x", "type": "string", "description": "X of b"},
                {"name": "y", "type": "string"},
                {"name": "w", "type": "string", "description": "W of b"},
            ]
        },
        "dwd.c": {"columns": ["x", "y", "z", "w"]},
        "dws.d": {"columns": ["x", "y", "z"]},
        "ads.e": {"columns": ["x", "v"]},
        # a part of the warehouse no change below reaches
        "other.big": {
            "columns": [{"name": c, "type": "string", "description": f"{c} of big"} for c in WIDE],
            "owner": "team-big",
        },
        "other.copy": {"columns": WIDE},
        "other.copy2": {"columns": WIDE},
    }
}
TASKS = {
    "t_c": "INSERT OVERWRITE TABLE dwd.c SELECT a.x, b.y, a.z, b.w FROM ods.a a JOIN ods.b b ON a.x = b.x",
    "t_d": "INSERT OVERWRITE TABLE dws.d SELECT x, y, z FROM dwd.c",
    "t_e": "INSERT OVERWRITE TABLE ads.e SELECT x, y AS v FROM dws.d",
    "t_copy": f"INSERT OVERWRITE TABLE other.copy SELECT {', '.join(WIDE)} FROM other.big",
    "t_copy2": f"INSERT OVERWRITE TABLE other.copy2 SELECT {', '.join(WIDE)} FROM other.copy",
}
FIELDS = ", ".join(
    f"n.{field}{suffix}"
    for field in ("description", "owner")
    for suffix in ("", "_source", "_from", "_via", "_hops")
)


def _upsert(graph, tasks: dict[str, str], catalog: dict = CATALOG) -> None:
    parsed = Catalog.from_dict(catalog)
    graph.upsert_catalog(parsed)
    items = [
        (task, extract_lineage(task, parsed))
        for task in (SqlTask(task_id=t, sql=s) for t, s in tasks.items())
    ]
    graph.upsert_tasks(items, parsed)


def _run(graph, redis_port: int, name: object = None) -> None:
    # the run's lock and record under a name of the store's own (`name`: of the store a wrapper wraps)
    settings = PropagationSettings(
        graph_name=f"meta_inc_{id(name or graph)}", celery_broker=f"redis://127.0.0.1:{redis_port}/0"
    )
    state = RunState.from_url(settings.broker_url(), settings.graph_name)
    propagate(graph, default_policy(), state, local_runner, settings=settings, batch_size=3)


def _columns(graph) -> dict[str, list]:
    return {row[0]: row[1:] for row in graph.read(f"MATCH (n:Column) RETURN n.id, {FIELDS}")}


@pytest.fixture
def warehouse(backend_store, celery_redis):
    _upsert(backend_store, TASKS)
    _run(backend_store, celery_redis.port)  # the first run is a full one
    return backend_store


def _same_as_a_full_recompute(graph) -> None:
    before = _columns(graph)
    token = GraphTagStore(graph, default_policy()).fence_token()
    report = metadata.propagate_metadata(graph, token)
    assert (report.set, report.cleared) == ({"description": 0, "owner": 0}, {"description": 0, "owner": 0}), (
        report.line()
    )
    assert _columns(graph) == before


def test_an_incremental_pass_leaves_what_a_full_recompute_would(warehouse, celery_redis):
    graph = warehouse
    shown = node_metadata.node_metadata(graph, "ads.e.x")
    assert (shown.description.value, shown.owner.value) == ("X of a", "team-a")
    assert node_metadata.node_metadata(graph, "other.copy2.c3").description.value == "c3 of big"

    changes = [
        lambda: node_metadata.set_value(graph, "ods.b.y", "description", "Y of b", actor="bob"),
        lambda: node_metadata.set_value(graph, "dwd.c.x", "description", "Cleaned x", actor="bob"),
        lambda: node_metadata.clear_value(graph, "dwd.c.x", "description", actor="bob"),
        lambda: node_metadata.set_value(graph, "dwd.c", "owner", "team-c", actor="bob"),
        lambda: node_metadata.set_value(graph, "ods.b", "owner", "team-b", actor="bob"),
        lambda: node_metadata.clear_value(graph, "dwd.c", "owner", actor="bob"),
        # x is no copy any more: what it passed on is retracted downstream
        lambda: _upsert(graph, {"t_d": "INSERT OVERWRITE TABLE dws.d SELECT upper(x) AS x, y, z FROM dwd.c"}),
        # the catalog's comment on z, and a new task copying into a new column
        lambda: _upsert(
            graph,
            {"t_e": "INSERT OVERWRITE TABLE ads.e SELECT z AS x, y AS v FROM dws.d"},
            {
                "tables": {
                    **CATALOG["tables"],
                    "ods.a": {
                        **CATALOG["tables"]["ods.a"],
                        "columns": [
                            {"name": "x", "type": "string", "description": "X of a"},
                            {"name": "y", "type": "string", "description": "Y of a"},
                            {"name": "z", "type": "string", "description": "Z of a"},
                        ],
                    },
                }
            },
        ),
    ]
    for change in changes:
        change()
        _run(graph, celery_redis.port)
        _same_as_a_full_recompute(graph)

    shown = node_metadata.node_metadata(graph, "ads.e.x")
    assert (shown.description.value, shown.description.hops) == ("Z of a", 3)
    assert node_metadata.node_metadata(graph, "ads.e.v").description.value == "Y of b"
    assert node_metadata.node_metadata(graph, "dws.d.x").description.value is None
    assert node_metadata.node_metadata(graph, "dws.d.y").owner.value == "team-b"


def test_an_incremental_pass_reads_only_what_the_change_reaches(warehouse, celery_redis):
    graph = warehouse
    node_metadata.set_value(graph, "dws.d.y", "description", "Y, as dws sees it", actor="bob")

    kept = ReadsKept(graph)
    _run(kept, celery_redis.port, name=graph)
    assert node_metadata.node_metadata(graph, "ads.e.v").description.value == "Y, as dws sees it"
    _same_as_a_full_recompute(graph)

    # the pass's reads (of descriptions, owners and direct copies) start from the change marks (index
    # seeks: test_change_scans_plan.py) or from ids they were given: none reads a label whole
    passes = [(q, p) for q, p in kept.reads if "description" in q or "owner" in q or "'direct'" in q]
    assert passes
    assert all("since" in params or "ids" in params for _, params in passes), [q for q, _ in passes]
    named = {node for _, params in passes for node in params.get("ids", [])}
    # the changed column, what it reaches, and the columns copied into those
    assert named <= {"dws.d.y", "ads.e.v", "dwd.c.y"}, named
