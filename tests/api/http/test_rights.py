"""Every route of the OpenAPI schema, called as nobody, a viewer, a steward and an admin, against a table of rights.

The table is written by hand: a route the schema has and the table lacks fails the test, so a
new route cannot ship without someone deciding who may call it. A caller below the right gets
401 (no credentials) or 403 naming the right; a caller holding it gets neither. Calls that
could change something aim at nodes, users and runs that do not exist, or send a body the
route refuses, so the walk changes nothing.
"""

from __future__ import annotations

import pytest

ROLES = ["viewer", "steward", "admin"]

#: (method, path) -> the right needed: public, viewer, steward or admin
RIGHTS = {
    ("GET", "/api/v1/health"): "public",
    ("POST", "/api/v1/session"): "public",
    ("DELETE", "/api/v1/session"): "viewer",
    ("GET", "/api/v1/me"): "viewer",
    # single sign-on: the login page's facts and the browser's navigations are public (404 while off)
    ("GET", "/api/v1/oidc"): "public",
    ("GET", "/api/v1/oidc/login"): "public",
    ("GET", "/api/v1/oidc/callback"): "public",
    ("POST", "/api/v1/oidc/logout"): "viewer",
    ("GET", "/api/v1/search"): "viewer",
    ("GET", "/api/v1/tables/{table_id}"): "viewer",
    ("GET", "/api/v1/tables/{table_id}/ddl"): "viewer",
    ("GET", "/api/v1/columns/{column_id}"): "viewer",
    ("GET", "/api/v1/lineage/{node_id}"): "viewer",
    ("GET", "/api/v1/impact/{node_id}"): "viewer",
    ("GET", "/api/v1/coverage"): "viewer",
    ("GET", "/api/v1/coverage/columns"): "viewer",
    ("POST", "/api/v1/coverage/refresh"): "steward",
    ("GET", "/api/v1/lineage/sources"): "viewer",
    ("GET", "/api/v1/lineage/sources/stale"): "viewer",
    ("GET", "/api/v1/edges"): "viewer",
    ("POST", "/api/v1/lineage/sql"): "steward",
    # OpenLineage events: a steward, or a producer (whose token does nothing else: test_openlineage_http.py)
    ("POST", "/api/v1/lineage"): "steward",
    ("GET", "/api/v1/tasks/{task_id}/reconcile"): "viewer",
    ("GET", "/api/v1/nodes/{node_id}/tags"): "viewer",
    ("GET", "/api/v1/nodes/{node_id}/tags/{key}/why"): "viewer",
    ("PUT", "/api/v1/nodes/{node_id}/tags/{key}"): "steward",
    ("DELETE", "/api/v1/nodes/{node_id}/tags/{key}"): "steward",
    ("PUT", "/api/v1/nodes/{node_id}/blocks/{key}"): "steward",
    ("DELETE", "/api/v1/nodes/{node_id}/blocks/{key}"): "steward",
    ("GET", "/api/v1/nodes/{node_id}/metadata"): "viewer",
    ("PUT", "/api/v1/nodes/{node_id}/description"): "steward",
    ("DELETE", "/api/v1/nodes/{node_id}/description"): "steward",
    ("PUT", "/api/v1/nodes/{node_id}/owner"): "steward",
    ("DELETE", "/api/v1/nodes/{node_id}/owner"): "steward",
    # a preview changes nothing, but needs the right the change needs
    ("POST", "/api/v1/preview"): "steward",
    ("POST", "/api/v1/propagation/runs"): "steward",
    ("GET", "/api/v1/propagation/runs"): "viewer",
    ("GET", "/api/v1/propagation/runs/{run_id}"): "viewer",
    ("POST", "/api/v1/propagation/runs/{run_id}/cancel"): "steward",
    ("GET", "/api/v1/harvest/runs"): "viewer",
    ("GET", "/api/v1/harvest/runs/{run_id}"): "viewer",
    ("GET", "/api/v1/harvest/runs/{run_id}/errors"): "viewer",
    ("GET", "/api/v1/ttl/advice"): "viewer",
    ("GET", "/api/v1/tables/{table_id}/protection"): "viewer",
    ("POST", "/api/v1/protect/plan"): "viewer",
    ("POST", "/api/v1/protect/apply"): "admin",
    ("GET", "/api/v1/protect/runs"): "viewer",
    ("GET", "/api/v1/protect/runs/{run_id}"): "viewer",
    ("GET", "/api/v1/users"): "admin",
    ("POST", "/api/v1/users"): "admin",
    ("GET", "/api/v1/users/{name}"): "admin",
    ("PATCH", "/api/v1/users/{name}"): "admin",
    ("DELETE", "/api/v1/users/{name}"): "admin",
    # another user's tokens (a user's own: tests/api/service/test_accounts.py)
    ("POST", "/api/v1/users/{name}/tokens"): "admin",
    ("GET", "/api/v1/users/{name}/tokens"): "admin",
    ("DELETE", "/api/v1/users/{name}/tokens/{token_id}"): "admin",
    ("GET", "/api/v1/audit"): "admin",
    # query-time authorization: anyone for their own query (another user's: test_authz_api.py)
    ("POST", "/api/v1/authz/points"): "viewer",
    ("POST", "/api/v1/authz/check"): "viewer",
    ("POST", "/api/v1/authz/rewrite"): "viewer",
    ("GET", "/api/v1/authz/roles"): "admin",
    ("POST", "/api/v1/authz/roles"): "admin",
    ("DELETE", "/api/v1/authz/roles/{name}"): "admin",
    ("POST", "/api/v1/authz/roles/{name}/members"): "admin",
    ("DELETE", "/api/v1/authz/roles/{name}/members/{kind}/{member}"): "admin",
    ("GET", "/api/v1/authz/groups"): "admin",
    ("POST", "/api/v1/authz/groups/{group}/users"): "admin",
    ("DELETE", "/api/v1/authz/groups/{group}/users/{user}"): "admin",
    ("GET", "/api/v1/authz/grants"): "admin",
    ("POST", "/api/v1/authz/grants"): "admin",
    ("DELETE", "/api/v1/authz/grants/{grant_id}"): "admin",
    ("POST", "/api/v1/discovery/runs"): "steward",
    ("GET", "/api/v1/discovery/proposals"): "viewer",
    ("GET", "/api/v1/discovery/flags"): "viewer",
    ("POST", "/api/v1/discovery/proposals/{column_id}/accept"): "steward",
    ("POST", "/api/v1/discovery/proposals/{column_id}/reject"): "steward",
    # webhooks: admins of all databases (a limited admin: test_webhooks_api.py)
    ("GET", "/api/v1/webhooks"): "admin",
    ("POST", "/api/v1/webhooks"): "admin",
    ("GET", "/api/v1/webhooks/kinds"): "admin",
    ("GET", "/api/v1/webhooks/dead-letters"): "admin",
    ("POST", "/api/v1/webhooks/dead-letters/{delivery_id}/retry"): "admin",
    ("GET", "/api/v1/webhooks/{subscription_id}"): "admin",
    ("PATCH", "/api/v1/webhooks/{subscription_id}"): "admin",
    ("DELETE", "/api/v1/webhooks/{subscription_id}"): "admin",
    ("GET", "/api/v1/webhooks/{subscription_id}/deliveries"): "admin",
    ("GET", "/api/v1/webhooks/{subscription_id}/pending"): "admin",
}

#: path parameters: nodes that exist for reads; writes aim at a node of no table
PARAMS = {
    "table_id": "ods.user_profile",
    "column_id": "dwd.user_contact_df.email",
    "key": "pii",
    "run_id": "prop-does-not-exist",
    "name": "nobody",
    "token_id": "0123456789abcdef",
    "kind": "user",
    "member": "nobody",
    "group": "nogroup",
    "user": "nobody",
    "grant_id": "no-such-grant",
    "subscription_id": "wh_0123456789abcdef",
    "delivery_id": "00000000000000000000-00000000.wh_0123456789abcdef",
}
READ_NODE, WRITE_NODE = "dwd.user_contact_df.email", "ods.no_such_table.col"
QUERY = {
    "/api/v1/edges": {"source": "ods.user_profile.email", "target": "dwd.user_contact_df.email"},
    # a date the route refuses: the walk computes no snapshot
    "/api/v1/coverage/refresh": {"date": "never"},
}
#: bodies that do nothing: a refused value, or no such user
BODIES = {
    ("POST", "/api/v1/session"): None,  # filled per caller below
    ("POST", "/api/v1/lineage/sql"): {"sql": "select 1"},
    ("PUT", "/api/v1/nodes/{node_id}/tags/{key}"): {"values": ["L2"]},
    ("PUT", "/api/v1/nodes/{node_id}/description"): {"value": "nothing"},
    ("PUT", "/api/v1/nodes/{node_id}/owner"): {"value": "nobody"},
    ("POST", "/api/v1/preview"): {"node": "ods.no_such_table.col", "action": "block", "key": "pii"},
    ("POST", "/api/v1/propagation/runs"): {"full": [1]},
    ("POST", "/api/v1/users"): {"name": "", "role": "viewer"},
    ("PATCH", "/api/v1/users/{name}"): {"role": "viewer"},
    ("POST", "/api/v1/protect/plan"): {"limit": 0},
    ("POST", "/api/v1/protect/apply"): {"tables": []},
    ("POST", "/api/v1/authz/points"): {"sql": ""},
    ("POST", "/api/v1/authz/check"): {"sql": ""},
    ("POST", "/api/v1/authz/rewrite"): {"sql": ""},
    ("POST", "/api/v1/authz/roles"): {"name": ""},
    ("POST", "/api/v1/authz/roles/{name}/members"): {"kind": "user", "name": "nobody"},
    ("POST", "/api/v1/authz/groups/{group}/users"): {"user": ""},
    ("POST", "/api/v1/authz/grants"): {"role": "nobody", "actions": ["select"], "database": ""},
    ("POST", "/api/v1/discovery/runs"): {"sample_rows": 0},
    ("POST", "/api/v1/webhooks"): {"url": "ftp://refused", "kinds": ["tag.changed"]},
    ("PATCH", "/api/v1/webhooks/{subscription_id}"): {"active": False},
}
_RANK = {"public": -1, "viewer": 0, "steward": 1, "admin": 2}


def _operations(schema: dict) -> list[tuple[str, str]]:
    return sorted(
        (method.upper(), path)
        for path, item in schema["paths"].items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    )


@pytest.fixture(scope="module")
def schema(api):
    with api.client() as anonymous:
        return anonymous.get("/openapi.json").json()


def test_the_table_covers_every_route(schema):
    missing = [op for op in _operations(schema) if op not in RIGHTS]
    assert not missing, f"routes without an entry in RIGHTS: {missing}"
    gone = [op for op in RIGHTS if op not in _operations(schema)]
    assert not gone, f"RIGHTS names routes the API no longer has: {gone}"


@pytest.mark.parametrize("caller", [None, *ROLES])
def test_every_route_answers_by_the_table(api, schema, caller):
    wrong = []
    with api.client(caller) as client:
        for method, path in _operations(schema):
            right = RIGHTS[(method, path)]
            node = WRITE_NODE if method != "GET" else READ_NODE
            url = path.removeprefix("/api/v1")
            for name, value in {**PARAMS, "node_id": node}.items():
                url = url.replace("{" + name + "}", value)
            body = BODIES.get((method, path))
            if (method, path) == ("POST", "/api/v1/session"):
                body = {"token": api.tokens[caller or "viewer"]}
            answer = client.request(method, url, params=QUERY.get(path), json=body)
            client.cookies.clear()  # a login's session cookie must not make later calls someone
            if right == "public":
                allowed = True
            elif caller is None:
                allowed = False
            else:
                allowed = _RANK[caller] >= _RANK[right]
            if allowed:
                if answer.status_code in (401, 403):
                    wrong.append(f"{caller} {method} {path}: {answer.status_code} {answer.text}")
            elif caller is None:
                if answer.status_code != 401:
                    wrong.append(f"anonymous {method} {path}: {answer.status_code}, expected 401")
            elif answer.status_code != 403 or answer.json()["detail"] != f"{right} right needed":
                wrong.append(
                    f"{caller} {method} {path}: {answer.status_code} {answer.text}, expected 403 ({right})"
                )
            if answer.status_code >= 500 and answer.status_code != 503:
                wrong.append(f"{caller} {method} {path}: {answer.status_code} {answer.text}")
    assert not wrong, "\n".join(wrong)
