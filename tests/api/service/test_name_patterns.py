"""Role, group and database names, grant and token ids: the OpenAPI schema states each rule as a
pattern, the server checks exactly that rule (422 naming the field), so a client knows before it
asks and schemathesis need not excuse the operations that take them (tests/api/http/test_schemathesis.py)."""

from __future__ import annotations

import re

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from watershed.api.http.models import DATABASE_PATTERN, ROLE_PATTERN
from watershed.api.service.authz.errors import AuthzError
from watershed.api.service.authz.grants import check_name

#: characters near the rules' edges: Python's whitespace (what `strip` takes), the separators
#: the rules refuse, and ordinary ones
_EDGE = [
    "a",
    "Z",
    "0",
    ".",
    "`",
    "/",
    "\\",
    "\t",
    "\n",
    "\r",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x1f",
    "\x85",
    "\xa0",
    "\u1680",
    "\u2000",
    "\u200a",
    "\u200b",
    "\u2028",
    "\u3000",
    "\ufeff",
    "é",
    " ",
]


def _texts(max_size: int):
    return st.one_of(st.text(st.sampled_from(_EDGE), max_size=max_size), st.text(max_size=max_size))


def _stated(pattern: str, text: str) -> bool:
    # fullmatch: ECMA-262's `$` (no multiline) ends the text, never before a last line break
    return re.fullmatch(pattern, text) is not None


def _role_rule(text: str) -> bool:
    try:
        check_name(text, "role")
    except AuthzError:
        return False
    return True


def _database_rule(text: str) -> bool:
    # what the account store (fold_databases, then its check) and a grant keep of a name
    name = text.strip().lower()
    return bool(name) and "." not in name and "`" not in name


@settings(max_examples=3000, deadline=None, database=None)
@given(
    st.one_of(
        _texts(110),
        # lengths about the limit of 100, with whitespace inside and at the ends
        st.builds(
            "".join,
            st.tuples(
                st.text(st.sampled_from(" \t\u3000"), max_size=2),
                st.text(st.sampled_from(["a", "é", "\x0b"]), min_size=97, max_size=103),
                st.text(st.sampled_from(" \n\x0b"), max_size=2),
            ),
        ),
        st.from_regex(ROLE_PATTERN, fullmatch=True),
    )
)
def test_the_role_pattern_is_the_role_and_group_rule(text):
    assert _stated(ROLE_PATTERN, text) == _role_rule(text), ascii(text)


@settings(max_examples=3000, deadline=None, database=None)
@given(
    st.one_of(
        _texts(20),
        st.text(st.sampled_from(["a", ".", " ", "\u3000"]), max_size=6),
        st.from_regex(DATABASE_PATTERN, fullmatch=True),
    )
)
def test_the_database_pattern_is_the_database_rule(text):
    assert _stated(DATABASE_PATTERN, text) == _database_rule(text), ascii(text)


def test_the_rules_at_their_edges():
    for good in ("analyst", " analyst\n", "a\x0bb", "x" * 100, "\u3000" + "x" * 100 + "\t"):
        assert _stated(ROLE_PATTERN, good) and _role_rule(good), ascii(good)
    for bad in ("", " ", "a b", "a/b", "a\\b", "a\tb", "x" * 101, "\x0b"):
        assert not _stated(ROLE_PATTERN, bad) and not _role_rule(bad), ascii(bad)
    for good in ("ods", " ODS ", "cat2:db2", "my db"):
        assert _stated(DATABASE_PATTERN, good) and _database_rule(good), ascii(good)
    for bad in ("", "  ", "ods.x", "`ods`", "\u2028"):
        assert not _stated(DATABASE_PATTERN, bad) and not _database_rule(bad), ascii(bad)


def test_the_schema_states_names_and_ids(api):
    schema = httpx.get(api.url + "/api/v1/openapi.json").json()
    stated = {}
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            for parameter in operation.get("parameters", []):
                stated[(method, path, parameter["name"])] = parameter["schema"].get("pattern")
    users = "/api/v1/users/{name}"
    assert stated[("delete", users + "/tokens/{token_id}", "token_id")] == r"^[0-9a-f]{16}$"
    assert stated[("delete", "/api/v1/authz/grants/{grant_id}", "grant_id")] == r"^g[0-9a-f]{15}$"
    assert stated[("delete", "/api/v1/authz/roles/{name}", "name")] == ROLE_PATTERN
    assert stated[("delete", "/api/v1/authz/groups/{group}/users/{user}", "group")] == ROLE_PATTERN
    assert stated[("get", users, "name")].startswith("^[A-Za-z0-9](?:")
    bodies = schema["components"]["schemas"]
    assert bodies["RoleCreate"]["properties"]["name"]["pattern"] == ROLE_PATTERN
    databases = bodies["UserCreate"]["properties"]["databases"]["anyOf"][0]
    assert databases["items"]["pattern"] == DATABASE_PATTERN and databases["minItems"] == 1


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("post", "/authz/roles", {"name": "two words"}, "body.name: role name"),
        ("delete", "/authz/roles/a%09b", None, "path.name: role name"),
        ("post", "/authz/groups/a%20b/users", {"user": "alice"}, "path.group: group name"),
        (
            "post",
            "/users",
            {"name": "dee", "role": "viewer", "databases": ["ods.x"]},
            "body.databases.0: database",
        ),
        (
            "post",
            "/users",
            {"name": "dee", "role": "viewer", "databases": [" "]},
            "body.databases.0: database",
        ),
        ("delete", "/authz/grants/not-a-grant", None, "path.grant_id"),
        ("delete", "/users/admin/tokens/nope", None, "path.token_id"),
    ],
)
def test_a_name_or_id_outside_its_pattern_is_refused_naming_it(api, method, path, body, field):
    with api.client("admin") as admin:
        answer = admin.request(method, path, json=body)
    assert answer.status_code == 422, answer.text
    assert answer.json()["detail"].startswith(field), answer.text
