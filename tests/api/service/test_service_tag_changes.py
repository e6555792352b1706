"""A steward's tag change is one use case (api/service/tag_changes.py) for `watershed tag` and the API:
the change and its audit entry reach the graph in one write, and both faces leave the same tags and
the same entry."""

from __future__ import annotations

import getpass

import pytest
from typer.testing import CliRunner

from tests.api.conftest import load_sample_warehouse
from watershed.api.cli import app
from watershed.api.service.audit import entries
from watershed.graph.falkordb_store import FalkorDBStore
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy

NODE = "ods.user_profile.city"


class KilledError(BaseException):
    """The CLI process ends here, as under SIGKILL: nothing after the write that raised it runs."""


def _point_the_cli_at(store, monkeypatch) -> None:
    port = store.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", store.graph_name)


@pytest.fixture
def cli_graph(graph_store, monkeypatch):
    _point_the_cli_at(graph_store, monkeypatch)
    load_sample_warehouse(graph_store)
    return graph_store


@pytest.mark.parametrize(
    ("args", "action", "changed"),
    [
        (
            ["tag", "set", NODE, "pii=L2", "pii_type=email"],
            "tag.set",
            {("TAGGED", "pii"), ("TAGGED", "pii_type")},
        ),
        (["tag", "block", NODE, "app"], "tag.block", {("BLOCKS", "app")}),
    ],
)
def test_a_cli_change_killed_after_its_first_write_has_its_audit_entry(cli_graph, args, action, changed):
    """The process dies right after its first write reaches the graph: whatever that write changed,
    its audit entries are in the graph too (the change and the entries are that one write)."""
    writes: list[list[str]] = []
    execute, write_all = FalkorDBStore.execute, FalkorDBStore.write_all

    def write_then_die(self, statements):
        write_all(self, statements)
        writes.append([query for query, _ in statements])
        raise KilledError

    def execute_then_die(self, query, params=None):
        execute(self, query, params)
        writes.append([query])
        raise KilledError

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(FalkorDBStore, "write_all", write_then_die)
        patch.setattr(FalkorDBStore, "execute", execute_then_die)
        with pytest.raises(KilledError):
            CliRunner().invoke(app, args, catch_exceptions=False)
    assert len(writes) == 1
    own = GraphTagStore(cli_graph, default_policy()).own_tags(NODE)
    made = {(e["type"], e["key"]) for e in own if e["type"] == "BLOCKS" or e["origin"] == "manual"}
    assert made == changed
    audited = [e for e in entries(cli_graph) if e.action == action]
    assert sorted(e.target for e in audited) == sorted(f"{NODE}:{key}" for _, key in changed)
    assert {e.actor for e in audited} == {f"cli:{getpass.getuser()}"}


def _without_times(value):
    """A tag view or audit entry with what differs between two runs of one change dropped (when, entry id)."""
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if k not in ("at", "id")}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


def test_the_cli_and_the_api_make_the_same_change(api, monkeypatch):
    """Set, block, unblock and unset through `watershed tag` and through the API, from the same
    start: after each step the node's tags and the step's audit entry are the same (but for who
    the entry names: the signed-in user, or the OS user behind the CLI)."""
    _point_the_cli_at(api.graph, monkeypatch)
    runner = CliRunner()
    with api.client("steward") as steward:

        def through_http(step: str) -> None:
            answer = {
                "set": lambda: steward.put(
                    f"/nodes/{NODE}/tags/app", json={"values": ["toutiao", " douyin "]}
                ),
                "block": lambda: steward.put(f"/nodes/{NODE}/blocks/pii"),
                "unblock": lambda: steward.delete(f"/nodes/{NODE}/blocks/pii"),
                "unset": lambda: steward.delete(f"/nodes/{NODE}/tags/app"),
            }[step]()
            assert answer.status_code == 200, answer.text

        def through_cli(step: str) -> None:
            args = {
                "set": ["tag", "set", NODE, "app=toutiao,douyin", "--by", "steward"],
                "block": ["tag", "block", NODE, "pii", "--by", "steward"],
                "unblock": ["tag", "unblock", NODE, "pii"],
                "unset": ["tag", "unset", NODE, "app"],
            }[step]
            result = runner.invoke(app, args)
            assert result.exit_code == 0, result.output

        seen: dict[str, list] = {}
        for face, change in (("http", through_http), ("cli", through_cli)):
            seen[face] = []
            for step in ("set", "block", "unblock", "unset"):
                change(step)
                tags = steward.get(f"/nodes/{NODE}/tags").json()
                entry = entries(api.graph, limit=1)[0].model_dump()
                seen[face].append((step, _without_times(tags), _without_times(entry)))
    actors = set()
    for (step, http_tags, http_entry), (_, cli_tags, cli_entry) in zip(
        seen["http"], seen["cli"], strict=True
    ):
        assert cli_tags == http_tags, step
        actors.add((http_entry.pop("actor"), cli_entry.pop("actor")))
        assert cli_entry == http_entry, step
        assert (
            http_entry["action"] == f"tag.{step}"
            and http_entry["target"] == f"{NODE}:{'pii' if 'block' in step else 'app'}"
        )
    assert actors == {("steward", f"cli:{getpass.getuser()}")}
    set_entry = seen["cli"][0][2]
    assert set_entry["before"] == []
    assert set_entry["after"] == [
        {"by": "steward", "key": "app", "value": "douyin"},
        {"by": "steward", "key": "app", "value": "toutiao"},
    ]
