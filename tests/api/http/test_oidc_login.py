"""Single sign-on through a real OpenID Connect provider (oidc-provider under Node, on loopback):
the provider's own sign-in and consent pages, groups mapped to roles and databases, a session like
the token login's, logout at both ends, and every forged or misdirected callback refused, audited."""

from __future__ import annotations

import itertools
from html import unescape
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from tests.support.oidc import GROUPS, follow, sign_in, sso_service
from watershed.api.service import audit
from watershed.api.service.accounts.oidc import OidcLogin, grant_for
from watershed.api.service.settings import ApiSettings, OidcGroupGrant

_graphs = itertools.count()


@pytest.fixture(scope="module")
def sso(falkordb_server, celery_redis, tmp_path_factory):
    directory = tmp_path_factory.mktemp("sso")
    with sso_service(falkordb_server, celery_redis, directory, f"sso_{next(_graphs)}") as service:
        yield service


def browser() -> httpx.Client:
    return httpx.Client(timeout=30)


def entries(sso, action: str) -> list:
    return audit.entries(sso.graph, action=action, limit=100)


def callback_of(redirect: httpx.Response) -> str:
    return redirect.headers["location"]


def test_admin_group_signs_in_as_admin_with_a_strict_session_cookie(sso):
    with browser() as client:
        back = sign_in(client, sso, "alice")
        done = client.get(callback_of(back))
        assert done.status_code == 303, done.text
        assert done.headers["location"] == "/"
        cookie = next(h for h in done.headers.get_list("set-cookie") if h.startswith("watershed_session="))
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie

        me = client.get(f"{sso.url}/api/v1/me")
        assert me.status_code == 200, me.text
        assert me.json() == {"name": "alice", "role": "admin", "databases": None}
        # the session is the token login's: an unsafe method without the CSRF header is refused
        refused = client.post(f"{sso.url}/api/v1/oidc/logout")
        assert refused.status_code == 403 and "X-Watershed-CSRF" in refused.json()["detail"]

    added = [e for e in entries(sso, "user.") if e.target == "user:alice"]
    assert added and added[-1].action == "user.add"
    assert added[-1].actor == f"oidc:{sso.provider.issuer}"
    assert added[-1].after["groups"] == ["watershed-admins"]


def test_ods_stewards_group_gives_a_steward_limited_to_ods(sso):
    with browser() as client:
        client.get(callback_of(sign_in(client, sso, "olga")))
        me = client.get(f"{sso.url}/api/v1/me").json()
    assert me == {"name": "olga", "role": "steward", "databases": ["ods"]}


def test_each_sign_in_sets_the_role_from_the_groups_again(sso):
    """olga's account, changed behind the mapping (a viewer now), is a steward of ods again at her
    next sign-in (audited as a grant); a sign-in that changes nothing is audited as a login."""
    with browser() as client:
        client.get(callback_of(sign_in(client, sso, "olga")))
    sso.graph.execute("MATCH (u:User {name: 'olga'}) SET u.role = 'viewer', u.databases = null")
    with browser() as client:
        client.get(callback_of(sign_in(client, sso, "olga")))
        assert client.get(f"{sso.url}/api/v1/me").json() == {
            "name": "olga",
            "role": "steward",
            "databases": ["ods"],
        }
    with browser() as client:
        client.get(callback_of(sign_in(client, sso, "olga")))
    olga = [e for e in entries(sso, "user.") if e.target == "user:olga"]
    assert [e.action for e in olga[:2]] == ["user.login", "user.grant"]  # newest first
    assert olga[1].before == {"name": "olga", "role": "viewer", "databases": None}
    assert olga[1].after["role"] == "steward" and olga[1].after["databases"] == ["ods"]


def test_the_highest_role_of_several_mapped_groups_wins(sso):
    with browser() as client:
        client.get(callback_of(sign_in(client, sso, "mia")))
        me = client.get(f"{sso.url}/api/v1/me").json()
    assert me == {"name": "mia", "role": "admin", "databases": None}


def test_a_user_in_no_mapped_group_is_refused_with_a_page_saying_why(sso):
    with browser() as client:
        page = client.get(callback_of(sign_in(client, sso, "nick")))
        assert page.status_code == 403
        assert "text/html" in page.headers["content-type"]
        assert "nick is in no group that Watershed maps to a role (groups: marketing)" in unescape(page.text)
        assert "watershed_session" not in client.cookies
        assert client.get(f"{sso.url}/api/v1/me").status_code == 401
    assert not sso.graph.read("MATCH (u:User {name: 'nick'}) RETURN u.name")
    refused = [e for e in entries(sso, "oidc.refused") if "nick" in e.after["reason"]]
    assert refused and refused[0].actor == f"oidc:{sso.provider.issuer}"


def test_logout_ends_the_session_here_and_at_the_provider(sso):
    with browser() as client:
        client.get(callback_of(sign_in(client, sso, "alice")))
        assert client.get(f"{sso.url}/api/v1/me").status_code == 200

        out = client.post(f"{sso.url}/api/v1/oidc/logout", headers={"X-Watershed-CSRF": "1"})
        assert out.status_code == 200, out.text
        end = out.json()["end_session_url"]
        assert end.startswith(f"{sso.provider.issuer}/session/end?")
        assert parse_qs(urlsplit(end).query)["post_logout_redirect_uri"] == [f"{sso.url}/"]
        assert client.get(f"{sso.url}/api/v1/me").status_code == 401

        # the provider asks, then sends the browser back to the service
        confirm = client.get(end)
        assert confirm.status_code == 200, confirm.text[:500]
        action = confirm.text.split('action="', 1)[1].split('"', 1)[0]
        xsrf = confirm.text.split('name="xsrf" value="', 1)[1].split('"', 1)[0]
        back = follow(client, client.post(action, data={"xsrf": xsrf, "logout": "yes"}), sso.url)
        assert back.is_redirect and back.headers["location"].startswith(f"{sso.url}/")

        # the provider's session is gone too: the next sign-in shows its sign-in form again
        start = follow(client, client.get(f"{sso.url}/api/v1/oidc/login"), f"{sso.url}/api/v1/oidc/callback")
        assert not start.is_redirect and 'name="login"' in start.text
    assert any(e.target == "user:alice" for e in entries(sso, "user.logout"))


@pytest.mark.parametrize(
    ("mode", "login", "reason"),
    [
        ("expired", "alice", "the ID token has expired"),
        ("tampered", "olga", "the ID token's signature does not verify with the provider's keys"),
        ("wrong-key", "alice", "the ID token's signature does not verify with the provider's keys"),
        ("other-nonce", "alice", "the ID token's nonce claim is not the one expected"),
        ("other-audience", "alice", "the ID token's aud claim is not the one expected"),
    ],
)
def test_a_forged_id_token_is_refused(sso, mode, login, reason):
    """The provider's token answer carries a forged ID token (signed by its own key but expired or
    for another nonce or client; its payload altered, here olga's groups to admin; or signed by
    another key under the provider's key id): no session, audited."""
    with browser() as client:
        back = sign_in(client, sso, login)
        sso.provider.next_id_token(mode)
        page = client.get(callback_of(back))
        assert page.status_code == 403, page.text
        assert reason in unescape(page.text)
        assert "watershed_session" not in client.cookies
        assert client.get(f"{sso.url}/api/v1/me").status_code == 401
    assert any(reason in e.after["reason"] for e in entries(sso, "oidc.refused"))
    if mode == "tampered":
        rows = sso.graph.read("MATCH (u:User {name: 'olga'}) RETURN u.role")
        assert rows in ([], [["steward"]])


def test_a_callback_with_another_state_is_refused(sso):
    with browser() as client:
        back = urlsplit(callback_of(sign_in(client, sso, "alice")))
        query = {k: v[0] for k, v in parse_qs(back.query).items()}
        page = client.get(back._replace(query=urlencode({**query, "state": "forged"})).geturl())
        assert page.status_code == 403
        assert "the state of the callback is not the one this sign-in sent" in unescape(page.text)
        assert client.get(f"{sso.url}/api/v1/me").status_code == 401


def test_a_callback_naming_another_issuer_is_refused(sso):
    """The provider names itself in the callback (RFC 9207); another issuer's name is a mix-up."""
    with browser() as client:
        back = urlsplit(callback_of(sign_in(client, sso, "alice")))
        query = {k: v[0] for k, v in parse_qs(back.query).items()}
        assert query["iss"] == sso.provider.issuer
        page = client.get(back._replace(query=urlencode({**query, "iss": "https://evil.example"})).geturl())
        assert page.status_code == 403
        assert "the callback comes from issuer 'https://evil.example'" in unescape(page.text)
        assert client.get(f"{sso.url}/api/v1/me").status_code == 401


def test_a_callback_is_used_once_and_only_in_the_browser_that_began_it(sso):
    with browser() as client:
        callback = callback_of(sign_in(client, sso, "alice"))
        with browser() as other:  # another browser: no pending-login cookie
            page = other.get(callback)
            assert page.status_code == 403 and "no sign-in was started in this browser" in unescape(page.text)
        pending = client.cookies.get("watershed_oidc")
        assert client.get(callback).status_code == 303
        # replayed with the same cookie: the pending login was taken at the first use
        client.cookies.set("watershed_oidc", pending, path="/api/v1/oidc")
        page = client.get(callback)
        assert page.status_code == 403 and "unknown or was already used" in unescape(page.text)


def test_a_local_account_of_the_same_name_is_not_taken_over(sso):
    """ted of the provider is an admin there; the local ted (a token user) stays a viewer."""
    from watershed.api.service.accounts.store import AccountStore

    AccountStore(sso.graph).add("ted", "viewer", None, actor="test")
    with browser() as client:
        page = client.get(callback_of(sign_in(client, sso, "ted")))
        assert page.status_code == 403
        assert "a local account named ted exists" in unescape(page.text)
        assert client.get(f"{sso.url}/api/v1/me").status_code == 401
    assert sso.graph.read("MATCH (u:User {name: 'ted'}) RETURN u.role, u.oidc_subject") == [["viewer", None]]


# ------------------------------------------------------------ without a provider


def test_the_group_mapping_takes_the_highest_role_and_the_union_of_its_databases():
    mapping = {
        "a": OidcGroupGrant(role="steward", databases=["ODS"]),
        "b": OidcGroupGrant(role="steward", databases=["dwd", "ods"]),
        "c": OidcGroupGrant(role="viewer"),
        "d": OidcGroupGrant(role="admin", databases=["ads"]),
        "e": OidcGroupGrant(role="steward"),
    }
    assert grant_for(["x"], mapping) is None
    assert grant_for([], mapping) is None
    assert grant_for(["c", "a", "b"], mapping) == OidcGroupGrant(role="steward", databases=["dwd", "ods"])
    assert grant_for(["a", "e"], mapping) == OidcGroupGrant(role="steward", databases=None)
    assert grant_for(["a", "d"], mapping) == OidcGroupGrant(role="admin", databases=["ads"])
    assert GROUPS  # the provider's mapping is the one these tests sign in under


def test_single_sign_on_is_off_unless_an_issuer_is_set():
    assert OidcLogin(ApiSettings(), graph=None).info().enabled is False  # type: ignore[arg-type]
    on = ApiSettings(oidc_issuer="https://idp.example.com/", oidc_provider_name="Example")
    assert OidcLogin(on, graph=None).info().model_dump() == {  # type: ignore[arg-type]
        "enabled": True,
        "name": "Example",
        "login_url": "/api/v1/oidc/login",
    }
