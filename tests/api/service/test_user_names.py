"""User names are case-insensitive and drawn from a safe alphabet, wherever a name enters: the
HTTP API, the CLI, data-role members and groups, a query check's `user`. Accounts stored before
that keep working and are folded by `watershed users fold-names`, never merged or lost."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.api.service.accounts.names import MAX_LENGTH, PATTERN, InvalidUserNameError, user_name
from watershed.api.service.accounts.store import AccountStore

SQL = "SELECT user_id FROM ods.user_profile"
#: one of each way to break the rule
BAD_NAMES = [
    "..",
    "a..b",
    ".hidden",
    "-dash",
    "a b",
    "a/b",
    "a%2fb",
    "émile",
    "x" * 65,
    "",
]


def _validator_takes(name: str) -> bool:
    try:
        user_name(name)
    except InvalidUserNameError:
        return False
    return True


def _schema_takes(name: str) -> bool:
    # fullmatch: ECMA-262's `$` (no multiline) ends the text, never before a last line break
    return 1 <= len(name) <= MAX_LENGTH and re.fullmatch(PATTERN, name) is not None


#: names near the rule's edges: its alphabet, dots, and characters just outside it
_NEAR = st.text(st.sampled_from("aZ09._-@.. /%\né\u212a\n\x00"), max_size=70)


@settings(max_examples=3000, deadline=None, database=None)
@given(
    st.one_of(
        _NEAR,
        # dense in the rule's own alphabet, so dots meet each other and the ends
        st.text(st.sampled_from("a0.-_@"), max_size=70),
        st.from_regex(PATTERN, fullmatch=True),
        st.text(max_size=80),
    )
)
def test_the_schema_pattern_takes_exactly_the_names_the_validator_takes(name):
    """The schema states the rule (pattern and maxLength) the server checks with `user_name`:
    schema-valid names are accepted and others refused (tests/api/http/test_schemathesis.py)."""
    assert _schema_takes(name) == _validator_takes(name), ascii(name)


def test_the_schema_pattern_has_no_lookaround():
    # schema-driven generators and pydantic's regex engine take none
    assert "(?" not in PATTERN.replace("(?:", "")
    for name in ("a", "a.b", "a.", "a@b-c_d.e", "x" * 64):
        assert _schema_takes(name) and _validator_takes(name)
    for name in ("a..b", ".a", "a..", "-a", "x" * 65, "a\n"):
        assert not _schema_takes(name) and not _validator_takes(name)


@pytest.fixture
def cli(api, monkeypatch):
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(api.settings.falkordb_port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", api.settings.graph_name)
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


def _me(api, token: str) -> dict:
    with api.client() as anyone:
        return anyone.get("/me", headers={"Authorization": f"Bearer {token}"}).json()


def test_names_that_differ_only_in_case_are_one_account(api):
    with api.client("admin") as admin:
        made = admin.post("/users", json={"name": "Casey.Two", "role": "viewer"})
        assert made.status_code == 201, made.text
        assert made.json()["name"] == "casey.two"
        twin = admin.post("/users", json={"name": "casey.TWO", "role": "admin"})
        assert twin.status_code == 409 and "casey.two already exists" in twin.json()["detail"]
        assert admin.get("/users/CASEY.two").json()["name"] == "casey.two"
        token = admin.post("/users/Casey.Two/tokens")
        assert token.status_code == 201 and token.json()["user"] == "casey.two"
        names = [u["name"] for u in admin.get("/users", params={"limit": 500}).json()["items"]]
        assert [n for n in names if n.lower() == "casey.two"] == ["casey.two"]
    assert _me(api, token.json()["token"])["name"] == "casey.two"


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_bad_user_name_is_refused_naming_the_field_and_the_rule(api, name):
    with api.client("admin") as admin:
        answer = admin.post("/users", json={"name": name, "role": "viewer"})
        assert answer.status_code == 422, answer.text
        detail = answer.json()["detail"]
        assert detail.startswith("body.name: user name") and "ASCII letters" in detail, detail


@pytest.mark.parametrize("path", ["/users/%2e%2e", "/users/%2E%2E/tokens", "/users/a%20b"])
def test_a_bad_user_name_in_a_path_is_refused(api, path):
    with api.client("admin") as admin:
        answer = admin.get(path)
        assert answer.status_code == 422, answer.text
        assert answer.json()["detail"].startswith("path.name: user name"), answer.text


def test_members_groups_and_checks_take_a_name_in_any_case(api):
    with api.client("admin") as admin:
        admin.post("/users", json={"name": "pat.member", "role": "viewer"})
        assert admin.post("/authz/roles", json={"name": "names_role"}).status_code == 201
        grant = {"role": "names_role", "actions": ["select"], "table": "ods.user_profile"}
        assert admin.post("/authz/grants", json=grant).status_code == 201
        member = {"kind": "user", "name": "Pat.Member"}
        assert admin.post("/authz/roles/names_role/members", json=member).json() == {"changed": True}
        again = {"kind": "user", "name": "PAT.MEMBER"}
        assert admin.post("/authz/roles/names_role/members", json=again).json() == {"changed": False}
        roles = {r["name"]: r for r in admin.get("/authz/roles").json()}
        assert roles["names_role"]["users"] == ["pat.member"]
        held = admin.get("/authz/grants", params={"user": "Pat.Member"}).json()["items"]
        assert [g["role"] for g in held] == ["names_role"]

        decision = admin.post("/authz/check", json={"sql": SQL, "user": "PAT.Member"}).json()
        assert decision["user"] == "pat.member" and decision["allowed"], decision

        assert admin.post("/authz/groups/names_group/users", json={"user": "Pat.Member"}).json() == {
            "changed": True
        }
        assert admin.get("/authz/groups").json()["names_group"] == ["pat.member"]
        assert admin.delete("/authz/groups/names_group/users/PAT.MEMBER").status_code == 204
        assert admin.delete("/authz/roles/names_role/members/user/PAT.member").status_code == 204

        for method, path, body in (
            ("POST", "/authz/roles/names_role/members", {"kind": "user", "name": ".."}),
            ("POST", "/authz/groups/names_group/users", {"user": "a b"}),
            ("POST", "/authz/check", {"sql": SQL, "user": ".."}),
        ):
            answer = admin.request(method, path, json=body)
            assert answer.status_code == 422, (path, answer.text)
            assert "user name" in answer.json()["detail"] and "ASCII letters" in answer.json()["detail"]
        for path in ("/authz/roles/names_role/members/user/%2e%2e", "/authz/groups/names_group/users/a%20b"):
            answer = admin.delete(path)
            assert answer.status_code == 422, (path, answer.text)
        # a group's name is not a user's: only the user kind follows the user-name rule
        group = {"kind": "group", "name": "Mixed_Group"}
        assert admin.post("/authz/roles/names_role/members", json=group).json() == {"changed": True}


def test_the_cli_folds_names_and_refuses_bad_ones_in_one_line(api, cli, tmp_path):
    added = cli("users", "add", "Cli.Mixed", "--role", "viewer")
    assert added.exit_code == 0, added.output
    assert "user cli.mixed: viewer on all databases" in added.output
    assert cli("users", "add", "CLI.MIXED", "--role", "viewer").exit_code == 1
    assert "cli.mixed" in cli("tokens", "list", "CLI.Mixed", "--format", "json").output
    for args in (
        ("users", "add", "..", "--role", "viewer"),
        ("users", "grant", "a b", "--role", "admin"),
        ("users", "delete", "../x"),
        ("tokens", "create", ".."),
    ):
        refused = cli(*args)
        assert refused.exit_code == 1, (args, refused.output)
        [line] = refused.output.strip().splitlines()
        assert line.startswith("error: user name") and "ASCII letters" in line, line
    query = tmp_path / "q.sql"
    query.write_text(SQL)
    checked = cli("authz", "check", str(query), "--user", "..")
    assert checked.exit_code == 2, checked.output
    [line] = checked.output.strip().splitlines()
    assert line.startswith("error: --user: user name"), line
    assert cli("users", "delete", "CLI.Mixed").exit_code == 0


def test_accounts_stored_before_folding_are_found_then_folded_without_loss(api, cli):
    """Accounts written by an earlier version, names in any case (and a pair that differ only in it)."""
    for name in ("Legacy.Lee", "Twin.Pat", "twin.pat"):
        api.graph.execute(
            "CREATE (:User {name: $name, role: 'viewer', databases: null, created_at: '2024-01-01'})",
            {"name": name},
        )
    api.graph.execute("CREATE (:DataRole {name: 'legacy_role', created_at: '2024-01-01'})")
    api.graph.execute("CREATE (:DataRoleMember {role: 'legacy_role', kind: 'user', name: 'Legacy.Lee'})")
    api.graph.execute("CREATE (:GroupMember {group: 'legacy_group', user: 'Legacy.Lee'})")
    with api.client("admin") as admin:
        grant = {"role": "legacy_role", "actions": ["select"], "table": "ods.user_profile"}
        assert admin.post("/authz/grants", json=grant).status_code == 201
    accounts = AccountStore(api.graph)
    # found by any spelling before they are folded; no second account beside them
    token = accounts.create_token("LEGACY.lee", actor="test")
    assert token.user == "Legacy.Lee"
    assert _me(api, token.token)["name"] == "Legacy.Lee"
    with api.client("admin") as admin:
        assert admin.get("/users/legacy.lee").json()["name"] == "Legacy.Lee"
        assert admin.post("/users", json={"name": "legacy.lee", "role": "admin"}).status_code == 409
    before = accounts.count()

    folded = cli("users", "fold-names")
    assert folded.exit_code == 1, folded.output  # the twin is left for the operator
    assert "user Legacy.Lee is now legacy.lee" in folded.output
    assert "'Twin.Pat': twin.pat exists" in folded.output
    assert accounts.count() == before
    # the token, the role and the group followed the account
    assert _me(api, token.token)["name"] == "legacy.lee"
    with api.client("admin") as admin:
        held = admin.get("/authz/grants", params={"user": "legacy.lee"}).json()["items"]
        assert [g["role"] for g in held] == ["legacy_role"]
        assert admin.get("/authz/groups").json()["legacy_group"] == ["legacy.lee"]
        renamed = admin.get("/audit", params={"action": "user.rename"}).json()["items"]
        assert [(e["before"], e["after"]) for e in renamed] == [
            ({"name": "Legacy.Lee"}, {"name": "legacy.lee"})
        ]

    twin = cli("users", "fold-names", "--rename", "Twin.Pat=twin.pat-old")
    assert twin.exit_code == 0, twin.output
    names = {u.name for u in accounts.users(limit=500)}
    assert {"twin.pat", "twin.pat-old", "legacy.lee"} <= names and accounts.count() == before
    again = cli("users", "fold-names")
    assert again.exit_code == 0 and "every user name is already folded" in again.output
