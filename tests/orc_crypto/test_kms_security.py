"""The embedded KMS's authentication, limits and audit, against real server processes and real Spark."""

from __future__ import annotations

import base64
import json
import logging
import os
import pwd
import secrets
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from watershed.orc_crypto.keys.embedded import EmbeddedKeystore
from watershed.orc_crypto.keys.kms_client import KmsClient
from watershed.orc_crypto.keys.material import flip_bytes, unwrap_local_key
from watershed.orc_crypto.keys.tokens import TOKEN_HEADER, DelegationToken, issue_token, read_token_file
from watershed.orc_crypto.kms.acl import KeyAcls
from watershed.orc_crypto.kms.app import KmsAuth
from watershed.orc_crypto.kms.server import KmsServer, free_port

REPO = Path(__file__).resolve().parents[2]
PASSPHRASE = "security-test-passphrase"
OTHER_USER = "wsh-kms-probe"
SYSTEM_PYTHON = Path("/usr/bin/python3")  # readable by every user, unlike the venv under /root
MIB = 1 << 20


@dataclass
class ServeProcess:
    process: subprocess.Popen
    port: int
    directory: Path
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/kms/v1/"

    @property
    def token_file(self) -> Path:
        return self.directory / "kms.token"

    def owner_token(self) -> str:
        tokens = read_token_file(self.token_file)
        return tokens[f"127.0.0.1:{self.port}"].encode()


@pytest.fixture(scope="module")
def serve(tmp_path_factory) -> Iterator[ServeProcess]:
    """`watershed kms serve` in its default mode, files in a directory every user may traverse."""
    directory = tmp_path_factory.mktemp("kms-serve")
    directory.chmod(0o755)
    for parent in directory.parents:
        if parent == Path("/tmp") or parent == Path("/"):
            break
        parent.chmod(parent.stat().st_mode | 0o011)  # traversable, not listable, by others
    keystore = EmbeddedKeystore.create(directory / "ks.json", PASSPHRASE, scrypt_n=1024)
    keystore.create_key("pii")
    port = free_port()
    env = {
        **os.environ,
        "WATERSHED_KEYSTORE_PASSPHRASE": PASSPHRASE,
        "WATERSHED_KEYSTORE_PATH": str(directory / "ks.json"),
        "WATERSHED_KMS_SECRET_FILE": str(directory / "kms.secret"),
        "WATERSHED_KMS_TOKEN_FILE": str(directory / "kms.token"),
    }
    env.pop("HADOOP_TOKEN_FILE_LOCATION", None)
    log = directory / "serve.log"
    command = [
        sys.executable,
        "-c",
        "from watershed.api.cli import main; main()",
        "kms",
        "serve",
        "--port",
        str(port),
    ]
    command += ["--audit-log", str(directory / "audit.log")]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = ServeProcess(process, port, directory, log)
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "kms serve did not start"
            time.sleep(0.2)
    yield server
    process.terminate()
    process.wait(timeout=10)


def _other_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(OTHER_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER_USER], check=True
        )
        return pwd.getpwnam(OTHER_USER)


PROBE = r"""
import http.client, json, sys
port, token_file, secret_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
result = {}
for name, path in (("token", token_file), ("secret", secret_file)):
    try:
        open(path, "rb").read()
        result[name] = "read"
    except PermissionError:
        result[name] = "denied"
    except OSError as exc:
        result[name] = type(exc).__name__
def call(method, path, headers=None, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, "/kms/v1/" + path, body=body, headers=headers or {})
    response = conn.getresponse()
    data = response.read().decode("utf-8", "replace")
    cookie = response.getheader("Set-Cookie")
    conn.close()
    return response.status, data, cookie
answers = []
for user in ("root", "alice"):
    q = "?user.name=" + user
    answers.append(call("GET", "key/pii/_metadata" + q))
    answers.append(call("GET", "key/pii/_currentversion" + q))
    answers.append(call("GET", "keyversion/pii%400" + q))
    answers.append(call("GET", "key/pii/_versions" + q))
    answers.append(call("GET", "keys/names" + q))
    body = json.dumps({"name": "pii", "iv": "AAAAAAAAAAAAAAAAAAAAAA==", "material": "A" * 44})
    answers.append(call("POST", "keyversion/pii@0/_eek?eek_op=decrypt&user.name=" + user,
                        {"Content-Type": "application/json"}, body))
    status, _, cookie = call("OPTIONS", "keys/names" + q)
    answers.append((status, "", cookie))
    if cookie:
        answers.append(call("GET", "key/pii/_currentversion", {"Cookie": cookie.split(";")[0]}))
result["answers"] = answers
print(json.dumps(result))
"""


def test_another_os_user_cannot_read_the_token_nor_get_key_data(serve):
    """Any local user could claim `user.name=root` under pseudo auth; the default refuses every claim."""
    if not SYSTEM_PYTHON.exists():
        pytest.skip(f"{SYSTEM_PYTHON} (a Python every user may run) is missing")
    other = _other_user()
    secret_file = serve.directory / "kms.secret"
    probe = subprocess.run(
        [str(SYSTEM_PYTHON), "-c", PROBE, str(serve.port), str(serve.token_file), str(secret_file)],
        user=other.pw_uid,
        group=other.pw_gid,
        extra_groups=[],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
    )
    assert probe.returncode == 0, probe.stderr
    result = json.loads(probe.stdout)
    material = EmbeddedKeystore.open(serve.directory / "ks.json", PASSPHRASE).get("pii").versions[0]
    encodings = {
        base64.b64encode(material).decode().rstrip("="),
        base64.urlsafe_b64encode(material).decode().rstrip("="),
    }
    for status, body, cookie in result["answers"]:
        assert status == 401 and cookie is None, (status, body)
        assert '"material"' not in body and not any(e in body for e in encodings)
    assert result["token"] == "denied" and result["secret"] == "denied"
    for path in (serve.token_file, secret_file):
        info = path.stat()
        assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.getuid()
    # The owner, with the token file, is served (metadata and decrypt; material reads stay off).
    with httpx.Client(base_url=serve.url, headers={TOKEN_HEADER: serve.owner_token()}) as owner:
        assert owner.get("key/pii/_metadata").status_code == 200
        refused = owner.get("key/pii/_currentversion")
        assert refused.status_code == 403 and "material" in refused.json()["RemoteException"]["message"]


def _stream_body(port: int, path: str, headers: dict[str, str], total: int, chunked: bool) -> int:
    """POST `total` bytes without ever holding them (1 MiB at a time); the response status."""
    sock = socket.create_connection(("127.0.0.1", port))
    head = [f"POST /kms/v1/{path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json"]
    head += [f"{name}: {value}" for name, value in headers.items()]
    head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}")
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
    chunk = b"[" * MIB

    def pump() -> None:
        try:
            for _ in range(total // MIB):
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
            if chunked:
                sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server answered and closed: the rest is not wanted

    sender = threading.Thread(target=pump, daemon=True)
    sender.start()
    response = b""
    sock.settimeout(300)
    try:
        while b"\r\n" not in response:
            data = sock.recv(65536)
            if not data:
                break
            response += data
    finally:
        sock.close()
        sender.join(timeout=60)
    return int(response.split(b" ", 2)[1])


def _rss_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def test_huge_bodies_are_refused_before_they_are_buffered(serve):
    """300 MB bodies, unauthenticated and authenticated, sized and chunked: 401/413, no RSS growth."""
    total = 300 * MIB
    before = _rss_kib(serve.process.pid, "VmRSS")
    path = "keyversion/pii%400/_eek?eek_op=decrypt"
    assert _stream_body(serve.port, path, {}, total, chunked=False) == 401
    assert _stream_body(serve.port, path + "&user.name=root", {}, total, chunked=True) == 401
    growth = _rss_kib(serve.process.pid, "VmHWM") - before  # the highest RSS the process ever had
    assert growth * 1024 < 64 * MIB, f"unauthenticated bodies raised the server's RSS by {growth // 1024} MiB"
    token = {TOKEN_HEADER: serve.owner_token()}
    assert _stream_body(serve.port, path, token, total, chunked=False) == 413
    assert _stream_body(serve.port, path, token, total, chunked=True) == 413
    assert _stream_body(serve.port, "keys", token, total, chunked=True) == 413
    growth = _rss_kib(serve.process.pid, "VmHWM") - before
    assert growth * 1024 < 64 * MIB, f"authenticated bodies raised the server's RSS by {growth // 1024} MiB"
    with httpx.Client(base_url=serve.url, headers=token) as owner:  # and it still serves
        assert owner.get("key/pii/_metadata").status_code == 200
    audit = [json.loads(line) for line in (serve.directory / "audit.log").read_text().splitlines()]
    assert [e["status"] for e in audit if e["status"] in (401, 413)][-5:] == [401, 401, 413, 413, 413]


def test_spark_authenticates_with_the_delegation_token(kms_server, spark_encrypted_orc):
    """Spark's Hadoop KMS client found the kms-dt token (hadoop.token.files) and never handshook."""
    requests = spark_encrypted_orc.kms_requests
    assert requests, "Spark made no KMS request"
    assert [r for r in requests if r.method == "OPTIONS"] == []
    assert all("user.name" not in r.query for r in requests)
    assert all(r.status == 200 and r.user == kms_server.user for r in requests)
    # Claimed names and the pseudo handshake are refused by the same server.
    with httpx.Client(base_url=kms_server.url + "/v1/") as http:
        claimed = http.get("key/pii/_metadata", params={"user.name": kms_server.user})
        assert claimed.status_code == 401 and "www-authenticate" not in claimed.headers
        handshake = http.request("OPTIONS", "key/pii/_metadata", params={"user.name": kms_server.user})
        assert handshake.status_code == 401 and "set-cookie" not in handshake.headers


def test_tokens_are_verified(kms_server):
    good = kms_server.issue_token(kms_server.user)
    forged = DelegationToken(good.identifier, secrets.token_bytes(32), good.kind, good.service)
    other_kind = DelegationToken(good.identifier, good.password, "HDFS_DELEGATION_TOKEN", good.service)
    expired = issue_token(kms_server.server.state.auth.secret, kms_server.user, lifetime_ms=-1000)
    with httpx.Client(base_url=kms_server.url + "/v1/") as http:
        assert http.get("key/pii/_metadata", headers={TOKEN_HEADER: good.encode()}).status_code == 200
        for bad in (forged.encode(), other_kind.encode(), expired.encode(), "!!!", good.encode()[:-8]):
            answer = http.get("key/pii/_metadata", headers={TOKEN_HEADER: bad})
            assert answer.status_code == 401, bad
            assert answer.json()["RemoteException"]["exception"] == "AuthenticationException"


def test_every_key_request_is_audited_and_errors_are_remote_exceptions(tmp_path):
    store = EmbeddedKeystore.create(tmp_path / "ks.json", "pw", scrypt_n=2**10)
    store.create_key("pii")
    auth = KmsAuth()
    ops = {TOKEN_HEADER: auth.issue_token("ops").encode()}
    with (
        KmsServer(store, KeyAcls.owner_only("ops"), auth=auth, audit_path=tmp_path / "audit.log") as server,
        httpx.Client(base_url=server.url + "/v1/") as http,
    ):
        calls = [
            ("POST", "keys", ops, b'{"name": "x", "length": "abc"}', 400),
            ("POST", "keys", ops, b'{"name": "y", "attributes": ["a"]}', 400),
            ("POST", "keys", ops, b"not json", 400),
            ("POST", "keys", ops, b'{"name": "z", "material": 5}', 400),
            ("POST", "key/pii", ops, b'{"material": 5}', 400),
            ("GET", "key/pii/_metadata", {}, None, 401),
            ("GET", "keys/metadata?key=pii", {}, None, 401),
            ("GET", "keys/metadata?key=pii&user.name=ops", {}, None, 401),
            ("GET", "key/pii/_metadata", {TOKEN_HEADER: "garbage"}, None, 401),
            ("GET", "key/nope/_metadata", ops, None, 404),
            ("GET", "no/such/route", ops, None, 404),
            ("PUT", "key/pii/_metadata", ops, None, 405),
            ("GET", "key/pii/_metadata", ops, None, 200),
        ]
        for method, path, headers, body, status in calls:
            answer = http.request(method, path, headers=headers, content=body)
            assert answer.status_code == status, (method, path, answer.text)
            if status >= 400:
                assert answer.headers["content-type"] == "application/json", (method, path)
                remote = answer.json()["RemoteException"]
                assert set(remote) == {"message", "exception", "javaClassName"}
        outside = httpx.get(f"http://127.0.0.1:{server.port}/elsewhere")
        assert outside.status_code == 404 and "RemoteException" in outside.json()
    lines = [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]
    assert [(e["status"], e["op"]) for e in lines] == [
        (400, "create"),
        (400, "create"),
        (400, "create"),
        (400, "create"),
        (400, "management"),
        (401, "metadata"),
        (401, "metadata"),
        (401, "metadata"),
        (401, "metadata"),
        (404, "metadata"),
        (404, "unknown"),
        (405, "metadata"),
        (200, "metadata"),
    ]
    assert lines[5]["key"] == "pii" and lines[5]["outcome"] == "UNAUTHENTICATED" and lines[5]["user"] == "-"
    assert lines[-1]["user"] == "ops" and lines[-1]["outcome"] == "OK"


def test_no_secret_reaches_a_log_or_the_audit_file(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    store = EmbeddedKeystore.create(tmp_path / "ks.json", PASSPHRASE, scrypt_n=2**10)
    store.create_key("pii")
    auth = KmsAuth(allow_material_read=True)
    token = auth.issue_token("ops").encode()
    new_material = secrets.token_bytes(32)
    stored = secrets.token_bytes(32)
    with (
        KmsServer(store, KeyAcls.owner_only("ops"), auth=auth, audit_path=tmp_path / "audit.log") as server,
        KmsClient(server.provider_path, token=token) as client,
    ):
        local = client.decrypt_local_key("pii", 0, stored)
        http = httpx.Client(base_url=server.url + "/v1/", headers={TOKEN_HEADER: token})
        b64 = base64.b64encode(new_material).decode()
        assert http.post("keys", json={"name": "hr", "length": 256, "material": b64}).status_code == 201
        assert http.post("key/hr", json={"material": b64}).status_code == 200
        assert http.get("key/pii/_versions").status_code == 200
        assert http.post("keys", json={"name": "bad", "length": "x", "material": b64}).status_code == 400
        http.post(
            "keyversion/pii@0/_eek?eek_op=decrypt", content=b'{"iv": 1, "material": "%s"}' % b64.encode()
        )
        http.close()
    master = store.get("pii").versions[0]
    written = (tmp_path / "audit.log").read_text() + "\n".join(r.getMessage() for r in caplog.records)
    written += caplog.text
    assert written.count('"op"') >= 7  # the audit lines are there
    secrets_in_clear = [token, server.state.auth.secret.hex(), PASSPHRASE]
    for value in (master, new_material, stored, local, flip_bytes(stored[:16]), server.state.auth.secret):
        secrets_in_clear += [
            value.hex(),
            base64.b64encode(value).decode().rstrip("="),
            base64.urlsafe_b64encode(value).decode().rstrip("="),
        ]
    for value in secrets_in_clear:
        assert value not in written, value
    assert unwrap_local_key(master, stored) == local
