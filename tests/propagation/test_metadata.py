"""Descriptions and owners (propagation/metadata.py, api/service/node_metadata.py): the catalog's
comments and owners are harvested (and a re-harvest keeps a steward's), a steward's set and clear are
audited in the same write, and a propagation run passes descriptions along direct copies only (never
through an expression), stops at a column with its own, retracts what lost its source, and keeps the
path back; an ownerless table's columns take the owner of the column they copy."""

from __future__ import annotations

import pytest

from watershed.api.service import audit, node_metadata
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.propagation.coordinator import Progress, local_runner, propagate
from watershed.propagation.graph_store import UnknownNodeError
from watershed.propagation.policy import default_policy
from watershed.propagation.run_state import RunState
from watershed.propagation.settings import PropagationSettings

CATALOG = {
    "tables": {
        "ods.users": {
            "columns": [
                {"name": "uid", "type": "bigint", "description": "The user's id"},
                {"name": "email", "type": "string", "description": "The user's email address"},
                {"name": "phone", "type": "string"},
            ],
            "owner": "crm-team",
            "description": "Users as the CRM exports them",
        },
        "dwd.users": {"columns": ["uid", "email", "email_u", "phone"], "owner": "dw-team"},
        "dws.mail": {"columns": ["uid", "email", "email_u"]},
        "ads.mail": {"columns": ["email"]},
    }
}
TASKS = {
    "t_dwd": "INSERT OVERWRITE TABLE dwd.users SELECT uid, email, upper(email) AS email_u, phone FROM ods.users",
    "t_dws": "INSERT OVERWRITE TABLE dws.mail SELECT uid, email, email_u FROM dwd.users",
    "t_ads": "INSERT OVERWRITE TABLE ads.mail SELECT email FROM dws.mail",
}


def _load(graph_store) -> None:
    graph_store.upsert_catalog(Catalog.from_dict(CATALOG))
    items = []
    for task_id, sql in TASKS.items():
        task = SqlTask(task_id=task_id, sql=sql)
        items.append((task, extract_lineage(task, Catalog.from_dict(CATALOG))))
    graph_store.upsert_tasks(items)


def _run(graph_store, celery_redis) -> None:
    # the run's lock and record under a name of this store's own; the local runner writes through
    # the store, on Neo4j as on FalkorDB
    settings = PropagationSettings(
        graph_name=f"metadata_{id(graph_store)}", celery_broker=f"redis://127.0.0.1:{celery_redis.port}/0"
    )
    state = RunState.from_url(settings.broker_url(), settings.graph_name)
    propagate(graph_store, default_policy(), state, local_runner, settings=settings, batch_size=3)


def _description(graph_store, node: str) -> tuple[str | None, str | None]:
    value = node_metadata.node_metadata(graph_store, node).description
    return value.value, value.source


@pytest.fixture
def loaded(backend_store):
    """The small warehouse on FalkorDB and on Neo4j: the pass's Cypher is the subset both take."""
    _load(backend_store)
    return backend_store


def test_the_catalog_gives_descriptions_and_owners_and_a_reharvest_keeps_a_stewards(loaded):
    assert _description(loaded, "ods.users.email") == ("The user's email address", "catalog")
    assert _description(loaded, "ods.users") == ("Users as the CRM exports them", "catalog")
    table = node_metadata.node_metadata(loaded, "ods.users").owner
    assert (table.value, table.source) == ("crm-team", "catalog")
    column = node_metadata.node_metadata(loaded, "ods.users.phone").owner
    assert (column.value, column.source) == ("crm-team", "table")

    node_metadata.set_value(loaded, "ods.users", "owner", "Alice@Example.com", actor="alice")
    node_metadata.set_value(loaded, "ods.users.email", "description", "Login email", actor="alice")
    _load(loaded)  # the same harvest again
    owner = node_metadata.node_metadata(loaded, "ods.users").owner
    assert (owner.value, owner.source, owner.catalog) == ("Alice@example.com", "steward", "crm-team")
    assert _description(loaded, "ods.users.email") == ("Login email", "steward")
    assert _description(loaded, "ods.users.uid") == ("The user's id", "catalog")


def test_a_stewards_set_and_clear_are_audited_and_the_catalogs_value_returns(loaded):
    node_metadata.set_value(loaded, "ods.users.email", "description", "  Login email ", actor="bob")
    assert _description(loaded, "ods.users.email") == ("Login email", "steward")
    shown = node_metadata.clear_value(loaded, "ods.users.email", "description", actor="bob")
    assert (shown.description.value, shown.description.source) == ("The user's email address", "catalog")

    entries = [e for e in audit.entries(loaded) if e.target == "ods.users.email:description"]
    actions = sorted((e.action, e.actor) for e in entries)
    assert actions == [("description.clear", "bob"), ("description.set", "bob")]
    set_entry = next(e for e in entries if e.action == "description.set")
    assert set_entry.before == {"value": "The user's email address", "source": "catalog", "steward": None}
    assert set_entry.after == {"value": "Login email", "source": "steward"}

    with pytest.raises(node_metadata.NothingToClearError, match=r"ods\.users\.email has no description"):
        node_metadata.clear_value(loaded, "ods.users.email", "description", actor="bob")
    with pytest.raises(UnknownNodeError, match=r"ods\.nope\.x"):
        node_metadata.set_value(loaded, "ods.nope.x", "description", "text", actor="bob")


@pytest.mark.parametrize(
    ("field", "text", "problem"),
    [
        ("description", "   ", "must not be empty"),
        ("description", "x" * 2001, "at most 2000"),
        ("description", "bell\x07", r"U\+0007"),
        ("owner", "a@b", "not a valid email"),
        ("owner", "team\nname", r"U\+000A"),
        ("owner", "<script>", "neither an email address nor a name"),
    ],
)
def test_a_bad_value_is_refused_and_nothing_is_written(loaded, field, text, problem):
    with pytest.raises(node_metadata.InvalidMetadataError, match=problem):
        node_metadata.set_value(loaded, "ods.users.phone", field, text, actor="bob")
    assert not [e for e in audit.entries(loaded) if e.target.startswith("ods.users.phone:")]


def test_descriptions_flow_along_direct_copies_only_stop_at_their_own_and_keep_the_path(loaded, celery_redis):
    node_metadata.set_value(loaded, "ads.mail.email", "description", "Marketing's address", actor="bob")
    _run(loaded, celery_redis)

    assert _description(loaded, "dwd.users.email") == ("The user's email address", "propagated")
    assert _description(loaded, "dws.mail.email") == ("The user's email address", "propagated")
    assert _description(loaded, "dws.mail.uid") == ("The user's id", "propagated")
    # upper(email) is an expression: its value is not what the source's text describes
    assert _description(loaded, "dwd.users.email_u") == (None, None)
    assert _description(loaded, "dws.mail.email_u") == (None, None)
    # its own description stops the flow
    assert _description(loaded, "ads.mail.email") == ("Marketing's address", "steward")

    shown = node_metadata.node_metadata(loaded, "dws.mail.email").description
    assert (shown.from_node, shown.via_task, shown.hops) == ("dwd.users.email", "t_dws", 2)
    assert [(s.node, s.source, s.via_task) for s in shown.path] == [
        ("dws.mail.email", "propagated", "t_dws"),
        ("dwd.users.email", "propagated", "t_dwd"),
        ("ods.users.email", "catalog", None),
    ]


def test_a_stewards_description_upstream_replaces_the_catalogs_downstream_and_is_retracted_when_cleared(
    loaded, celery_redis
):
    _run(loaded, celery_redis)
    node_metadata.set_value(loaded, "dwd.users.phone", "description", "Phone, normalised", actor="bob")
    _run(loaded, celery_redis)
    assert _description(loaded, "dws.mail.email") == ("The user's email address", "propagated")
    assert _description(loaded, "dwd.users.phone") == ("Phone, normalised", "steward")

    node_metadata.set_value(loaded, "dwd.users.email", "description", "Cleaned email", actor="bob")
    _run(loaded, celery_redis)
    assert _description(loaded, "ads.mail.email") == ("Cleaned email", "propagated")

    # ods.users.phone has no description: clearing the steward's leaves nothing to pass on
    node_metadata.clear_value(loaded, "dwd.users.phone", "description", actor="bob")
    node_metadata.clear_value(loaded, "dwd.users.email", "description", actor="bob")
    _run(loaded, celery_redis)
    assert _description(loaded, "dwd.users.phone") == (None, None)
    assert _description(loaded, "ads.mail.email") == ("The user's email address", "propagated")


def test_columns_of_an_ownerless_table_take_the_owner_of_what_they_copy(loaded, celery_redis):
    _run(loaded, celery_redis)
    owner = node_metadata.node_metadata(loaded, "dws.mail.email").owner
    assert (owner.value, owner.source, owner.from_node, owner.via_task) == (
        "dw-team",
        "propagated",
        "dwd.users.email",
        "t_dws",
    )
    assert node_metadata.node_metadata(loaded, "ads.mail.email").owner.value == "dw-team"
    # a copy of a computed column is a copy too
    assert node_metadata.node_metadata(loaded, "dws.mail.email_u").owner.value == "dw-team"

    node_metadata.set_value(loaded, "dws.mail", "owner", "mail-team", actor="bob")
    _run(loaded, celery_redis)
    email = node_metadata.node_metadata(loaded, "dws.mail.email").owner
    assert (email.value, email.source) == ("mail-team", "table")
    assert node_metadata.node_metadata(loaded, "ads.mail.email").owner.value == "mail-team"


def test_the_cli_sets_shows_and_clears_with_the_path_back(graph_store, celery_redis, monkeypatch):
    from tests.support.cli import invoke

    _load(graph_store)
    loaded = graph_store
    port = loaded.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", loaded.graph_name)

    set_ = invoke("describe", "dwd.users.email", "Cleaned email")
    assert set_.exit_code == 0, set_.output
    assert "dwd.users.email: description: Cleaned email" in set_.output
    _run(loaded, celery_redis)
    shown = invoke("describe", "ads.mail.email")
    assert shown.exit_code == 0, shown.output
    lines = [line.strip() for line in shown.output.splitlines()]
    assert lines[:4] == [
        "ads.mail.email: description: Cleaned email",
        "from: propagated from dws.mail.email via t_ads (2 hop(s))",
        "<- dws.mail.email (propagated via t_dws)",
        "<- dwd.users.email (steward)",
    ]
    owner = invoke("owner", "dws.mail", "mail-team", "--format", "json")
    assert owner.exit_code == 0, owner.output
    assert '"value": "mail-team"' in owner.output
    bad = invoke("owner", "dws.mail", "mail@")
    assert bad.exit_code == 1 and "not a valid email address" in bad.output
    cleared = invoke("describe", "dwd.users.email", "--clear")
    assert cleared.exit_code == 0, cleared.output
    assert "dwd.users.email: no description" in cleared.output  # the catalog has none for it
    assert invoke("describe", "dwd.users.email", "--clear").exit_code == 1
    actors = {e.actor for e in audit.entries(loaded) if e.target.startswith("dwd.users.email:")}
    assert len(actors) == 1 and next(iter(actors)).startswith("cli:")


def test_search_finds_a_column_by_the_words_of_its_description_after_the_id_matches(loaded, celery_redis):
    from watershed.api.service.search import search_nodes

    _run(loaded, celery_redis)
    page = search_nodes(loaded, default_policy(), q="email address")
    # the root first, then by id
    assert [hit.id for hit in page.items] == [
        "ods.users.email",
        "ads.mail.email",
        "dwd.users.email",
        "dws.mail.email",
    ]
    assert page.items[0].description == "The user's email address"
    # both words, in any order and case; an id match ranks before a description match
    found = search_nodes(loaded, default_policy(), q="ID USER'S", kind="column")
    assert [hit.id for hit in found.items] == ["ods.users.uid", "dwd.users.uid", "dws.mail.uid"]
    ranked = search_nodes(loaded, default_policy(), q="user", kind="column")
    ids = [hit.id for hit in ranked.items]
    assert ids.index("ods.users.uid") < ids.index("ads.mail.email")
    assert "ads.mail.email" in ids  # its description holds "user" (propagated), its id does not
    assert search_nodes(loaded, default_policy(), q="crm exports", kind="table").items[0].id == "ods.users"


def _run_saying(graph_store, celery_redis) -> list[str]:
    said: list[str] = []
    settings = PropagationSettings(
        graph_name=f"metadata_{id(graph_store)}", celery_broker=f"redis://127.0.0.1:{celery_redis.port}/0"
    )
    state = RunState.from_url(settings.broker_url(), settings.graph_name)
    propagate(
        graph_store,
        default_policy(),
        state,
        local_runner,
        settings=settings,
        batch_size=3,
        progress=Progress(on_message=said.append),
    )
    return said


def test_an_incremental_run_redoes_the_pass_after_a_catalog_or_steward_change_and_skips_it_without(
    loaded, celery_redis
):
    _run(loaded, celery_redis)
    assert any(m.endswith("descriptions and owners unchanged") for m in _run_saying(loaded, celery_redis))

    # the catalog alone changes: no lineage, no tag moves, yet the copies downstream follow
    changed = {**CATALOG, "tables": {**CATALOG["tables"]}}
    changed["tables"]["ods.users"] = {
        **CATALOG["tables"]["ods.users"],
        "columns": [
            {"name": "uid", "type": "bigint", "description": "The user's id"},
            {"name": "email", "type": "string", "description": "Where the user gets mail"},
            {"name": "phone", "type": "string"},
        ],
    }
    loaded.upsert_catalog(Catalog.from_dict(changed))
    said = _run_saying(loaded, celery_redis)
    assert any("descriptions: 3 propagated" in m for m in said), said
    assert _description(loaded, "ads.mail.email") == ("Where the user gets mail", "propagated")

    # a table's owner from the catalog: its columns no longer take one from upstream
    changed["tables"]["dws.mail"] = {**CATALOG["tables"]["dws.mail"], "owner": "mail-team"}
    loaded.upsert_catalog(Catalog.from_dict(changed))
    _run_saying(loaded, celery_redis)
    assert node_metadata.node_metadata(loaded, "ads.mail.email").owner.value == "mail-team"
