"""Authentication and accounts: tokens as salted hashes, sessions with CSRF, delegated admins, and two API processes on one graph."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
import pytest

from watershed.graph.server import free_port


def test_no_or_bad_credentials_get_the_same_401(api):
    with api.client() as anonymous:
        answers = [
            anonymous.get("/me"),
            anonymous.get("/me", headers={"Authorization": "Bearer wst_0123456789abcdef_nope"}),
            anonymous.get("/me", headers={"Authorization": "Bearer " + api.tokens["viewer"] + "x"}),
            anonymous.get("/me", headers={"Authorization": "Bearer not-a-token"}),
            anonymous.get("/me", headers={"Authorization": "Basic abc"}),
            anonymous.get("/me", headers={"Cookie": "watershed_session=forged"}),
        ]
    for answer in answers:
        assert answer.status_code == 401
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["detail"] == "a valid API token or session is needed"
        assert api.tokens["viewer"] not in answer.text


def test_tokens_are_stored_only_as_salted_hashes(api):
    token = api.tokens["steward"]
    rows = api.graph.read("MATCH (t:ApiToken) RETURN properties(t)")
    texts = [str(props) for (props,) in rows]
    secret = token.split("_", 2)[2]
    assert rows and not any(secret in text for text in texts)
    salts = {props["salt"] for (props,) in rows}
    assert len(salts) == len(rows)  # one salt per token
    with api.client("steward") as client:
        assert client.get("/me").json() == {"name": "steward", "role": "steward", "databases": None}


def test_a_tokens_last_use_is_recorded(api):
    with api.client("admin") as admin:
        made = admin.post("/users/viewer/tokens")
        assert made.status_code == 201, made.text
        token, token_id = made.json()["token"], made.json()["id"]
    never = api.graph.read("MATCH (t:ApiToken {id: $id}) RETURN t.last_used", {"id": token_id})
    assert never == [[None]]
    with api.client() as caller:
        assert caller.get("/me", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    # written by a background thread: it may land just after the answer
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        (last_used,) = api.graph.read("MATCH (t:ApiToken {id: $id}) RETURN t.last_used", {"id": token_id})[0]
        if last_used is not None:
            break
        time.sleep(0.05)
    assert last_used is not None and abs(time.time() * 1000 - int(last_used)) < 60_000


def test_the_user_list_pages_through_names_of_any_case_and_script(api):
    from watershed.api.service.accounts.store import AccountStore

    accounts = AccountStore(api.graph)
    # as an earlier version stored them: names are now folded and ASCII (test_user_names.py), but
    # accounts stored before are listed as they are until `watershed users fold-names`
    names = ["Zed_pager", "zed_pager", "张三_pager", "Émile_pager"]
    for name in names:
        api.graph.execute("CREATE (:User {name: $name, role: 'viewer'})", {"name": name})
    try:
        listed, after = [], ""
        for _ in range(100):
            page = accounts.users(after=after, limit=1)
            if not page:
                break
            listed.append(page[0].name)
            after = page[0].name
        assert [n for n in listed if n.endswith("_pager")] == sorted(names)
        assert len(listed) == len(set(listed)) == accounts.count()
    finally:
        api.graph.execute("MATCH (u:User) WHERE u.name IN $names DELETE u", {"names": names})


def test_session_cookie_needs_the_csrf_header_for_changes(api):
    with api.client() as browser:
        login = browser.post("/session", json={"token": api.tokens["ods_steward"]})
        assert login.status_code == 200 and login.json()["name"] == "ods_steward"
        cookie = login.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
        assert api.tokens["ods_steward"] not in login.headers["set-cookie"]
        assert browser.get("/me").json()["databases"] == ["ods"]
        path = "/nodes/ods.user_profile.city/tags/app"
        refused = browser.put(path, json={"values": ["douyin"]})
        assert refused.status_code == 403 and "X-Watershed-CSRF" in refused.json()["detail"]
        done = browser.put(path, json={"values": ["douyin"]}, headers={"X-Watershed-CSRF": "1"})
        assert done.status_code == 200, done.text
        assert browser.delete(path, headers={"X-Watershed-CSRF": "1"}).status_code == 200
        assert browser.delete("/session", headers={"X-Watershed-CSRF": "1"}).status_code == 204
        assert browser.get("/me").status_code == 401
    with api.client() as anonymous:
        assert anonymous.post("/session", json={"token": "wst_0123456789abcdef_x"}).status_code == 401


def test_a_user_may_make_their_own_token_but_not_anothers(api):
    with api.client("viewer") as viewer:
        mine = viewer.post("/users/viewer/tokens")
        assert mine.status_code == 201 and mine.json()["token"].startswith("wst_")
        listed = viewer.get("/users/viewer/tokens").json()["items"]
        assert mine.json()["id"] in {t["id"] for t in listed}
        assert all("hash" not in t and "salt" not in t for t in listed)
        assert viewer.delete(f"/users/viewer/tokens/{mine.json()['id']}").status_code == 204
        other = viewer.post("/users/steward/tokens")
        assert other.status_code == 403 and other.json()["detail"] == "admin right needed"
    with httpx.Client(
        base_url=api.url + "/api/v1", headers={"Authorization": f"Bearer {mine.json()['token']}"}
    ) as c:
        assert c.get("/me").status_code == 401  # revoked


def test_delegated_admin_stays_inside_its_databases(api):
    with api.client("ods_admin") as ods_admin:
        refused = ods_admin.post("/users", json={"name": "ads_boss", "role": "steward", "databases": ["ads"]})
        assert refused.status_code == 403 and refused.json()["detail"] == "admin right on database ads needed"
        unlimited = ods_admin.post("/users", json={"name": "boss", "role": "steward"})
        assert unlimited.status_code == 403
        made = ods_admin.post("/users", json={"name": "ods_helper", "role": "steward", "databases": ["ods"]})
        assert made.status_code == 201
        assert ods_admin.patch("/users/steward", json={"role": "viewer"}).status_code == 403
        assert ods_admin.patch("/users/ods_helper", json={"databases": ["ods", "ads"]}).status_code == 403
        assert ods_admin.delete("/users/ods_helper").status_code == 204
        assert ods_admin.get("/audit").status_code == 403
    with api.client("admin") as admin:
        entries = admin.get("/audit", params={"actor": "ods_admin"}).json()["items"]
        assert [e["action"] for e in entries][:2] == ["user.delete", "user.add"]
        assert entries[0]["before"]["databases"] == ["ods"] and entries[0]["after"] is None


def test_request_bodies_are_capped(api):
    with api.client("steward") as steward:
        big = steward.post("/lineage/sql", json={"sql": "select 1 -- " + "x" * (2 * 1024 * 1024)})
        assert big.status_code == 413 and big.headers["content-type"] == "application/problem+json"
        small = steward.post("/lineage/sql", json={"sql": "insert into a.t select x from b.s"})
        assert small.status_code == 200 and small.json()["writes"] == ["a.t"]


@pytest.fixture
def two_processes(api, tmp_path):
    """Two `watershed serve` processes on the test graph (as behind a load balancer)."""
    env = {
        **os.environ,
        "WATERSHED_FALKORDB_PORT": str(api.settings.falkordb_port),
        "WATERSHED_GRAPH_NAME": api.settings.graph_name,
        "WATERSHED_CELERY_BROKER": api.settings.celery_broker,
        "WATERSHED_DATA_DIR": str(tmp_path),
    }
    started, urls = [], []
    try:
        for _ in range(2):
            port = free_port()
            log = (tmp_path / f"serve-{port}.log").open("w")
            started.append(
                subprocess.Popen(
                    [sys.executable, "-m", "watershed.api.cli", "serve", "--port", str(port)],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
            urls.append(f"http://127.0.0.1:{port}/api/v1")
        for url, process in zip(urls, started, strict=True):
            deadline = time.monotonic() + 60
            while True:
                assert process.poll() is None, tmp_path / "serve.log"
                try:
                    if httpx.get(url + "/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "serve did not answer"
                time.sleep(0.1)
        yield urls
    finally:
        for process in started:
            process.terminate()
            process.wait(timeout=20)


def test_two_api_processes_agree_on_users_at_once(api, two_processes):
    first, second = two_processes
    admin = {"Authorization": f"Bearer {api.tokens['admin']}"}
    assert (
        httpx.post(first + "/users", json={"name": "carol", "role": "viewer"}, headers=admin).status_code
        == 201
    )
    token = httpx.post(first + "/users/carol/tokens", headers=admin).json()["token"]
    carol = {"Authorization": f"Bearer {token}"}
    # both processes have verified carol's token (and may keep its row) before each change below
    for url in (first, second):
        assert httpx.get(url + "/me", headers=carol).json()["role"] == "viewer"
    login = httpx.post(first + "/session", json={"token": token})
    cookies = {"Cookie": f"watershed_session={login.cookies['watershed_session']}"}
    assert httpx.get(second + "/me", headers=cookies).status_code == 200  # the session is in the graph too
    assert httpx.patch(second + "/users/carol", json={"role": "steward"}, headers=admin).status_code == 200
    for url in (first, second):
        assert httpx.get(url + "/me", headers=carol).json()["role"] == "steward"
    spare = httpx.post(first + "/users/carol/tokens", headers=admin).json()
    spared = {"Authorization": f"Bearer {spare['token']}"}
    assert httpx.get(second + "/me", headers=spared).status_code == 200
    assert httpx.delete(first + f"/users/carol/tokens/{spare['id']}", headers=admin).status_code == 204
    assert httpx.get(second + "/me", headers=spared).status_code == 401
    assert httpx.delete(second + "/users/carol", headers=admin).status_code == 204
    assert httpx.get(first + "/me", headers=carol).status_code == 401
    assert httpx.get(first + "/me", headers=cookies).status_code == 401


def test_a_change_by_the_cli_is_seen_by_a_running_api_at_once(api):
    """The CLI's account changes go through the same store as the API's: they move the stamp too."""
    from watershed.api.service.accounts.store import AccountStore

    cli = AccountStore(api.graph)
    cli.add("dave", "viewer", None, actor="admin")
    made = cli.create_token("dave", actor="admin")
    dave = {"Authorization": f"Bearer {made.token}"}
    with api.client() as caller:
        assert caller.get("/me", headers=dave).json()["role"] == "viewer"
        cli.update("dave", actor="admin", role="admin")
        assert caller.get("/me", headers=dave).json()["role"] == "admin"
        cli.revoke_token("dave", made.id, actor="admin")
        assert caller.get("/me", headers=dave).status_code == 401


def test_serve_refuses_a_taken_port_naming_it(api, tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "watershed.api.cli", "serve", "--port", str(port)],
            env={**os.environ, "WATERSHED_DATA_DIR": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1
    assert f"port 127.0.0.1:{port} is taken" in result.stdout + result.stderr
