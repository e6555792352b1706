"""The embedded KMS over HTTP, and the KMS client against it."""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from tests.support.sample_keys import SAMPLE1_ENCRYPTED_KEYS, SAMPLE_KEYSTORE
from watershed.orc_crypto.keys.base import KeyAccessDeniedError, KeyProviderError, UnknownKeyError
from watershed.orc_crypto.keys.jceks import JceksKeystore
from watershed.orc_crypto.keys.kms_client import KmsClient, kms_base_urls
from watershed.orc_crypto.keys.material import flip_bytes, unwrap_local_key
from watershed.orc_crypto.keys.tokens import TOKEN_HEADER
from watershed.orc_crypto.kms.acl import AclError, KeyAcl, KeyAcls, load_acl_file
from watershed.orc_crypto.kms.app import KmsAuth
from watershed.orc_crypto.kms.server import KmsServer


@pytest.fixture
def client(kms_server):
    with KmsClient(kms_server.provider_path) as kms:
        yield kms


@contextmanager
def _session(kms_server, user: str) -> Iterator[httpx.Client]:
    """An HTTP client that authenticates as `user` with a delegation token."""
    with httpx.Client(base_url=kms_server.url + "/v1/", headers=kms_server.token_header(user)) as http:
        yield http


@pytest.fixture
def pseudo_server(kms_server) -> Iterator[KmsServer]:
    """A second server on the session keystore in the explicit pseudo-auth mode."""
    with KmsServer(
        kms_server.keystore, KeyAcls(kms_server.default_acl()), auth=KmsAuth(mode="pseudo")
    ) as server:
        yield server


def test_provider_uri_parsing():
    assert kms_base_urls("kms://http@kms1:9600/kms") == ["http://kms1:9600/kms/v1/"]
    assert kms_base_urls("kms://https@a;b:16000/kms/") == [
        "https://a:16000/kms/v1/",
        "https://b:16000/kms/v1/",
    ]
    for bad in ("http://h:1/kms", "kms://ftp@h:1/kms", "kms://http@h/kms", "kms://http@:1/kms"):
        with pytest.raises(KeyProviderError, match="invalid KMS provider URI"):
            kms_base_urls(bad)


def test_handshake_follows_hadoop_pseudo_auth(pseudo_server, kms_server):
    """In the explicit pseudo mode (tests of Spark's own client only) the handshake works as Hadoop's."""
    with httpx.Client() as http:
        first = http.request("OPTIONS", pseudo_server.url + "/v1/key/pii/_metadata")
        assert first.status_code == 200
        assert "set-cookie" not in first.headers and "www-authenticate" not in first.headers
        second = http.request(
            "OPTIONS", pseudo_server.url + "/v1/key/pii/_metadata", params={"user.name": "alice"}
        )
        assert second.status_code == 200
        cookie = second.headers["set-cookie"]
        assert cookie.startswith('hadoop.auth="u=alice&p=alice&t=simple&e=') and "Path=/" in cookie
        value = cookie.split('"')[1]
        fields = dict(item.split("=", 1) for item in value.split("&"))
        assert set(fields) == {"u", "p", "t", "e", "s"} and int(fields["e"]) > 2**31
        # Without a cookie or user.name a key operation is refused, never with Negotiate.
        anonymous = httpx.get(pseudo_server.url + "/v1/key/pii/_metadata")
        assert anonymous.status_code == 401 and "www-authenticate" not in anonymous.headers
        assert anonymous.json()["RemoteException"]["exception"] == "AuthenticationException"
        forged = httpx.get(
            pseudo_server.url + "/v1/key/pii/_metadata",
            headers={"Cookie": f'hadoop.auth="u={kms_server.user}&p=x&t=simple&e=99999999999999&s=AAAA"'},
        )
        assert forged.status_code == 401


def test_client_reads_metadata_and_unwraps_like_the_keystore(client, kms_server):
    pii, fin = client.key_info("pii"), client.key_info("fin")
    assert (pii.version, pii.bit_length, pii.cipher) == (0, 256, "AES/CTR/NoPadding")
    assert (fin.bit_length, fin.key_bytes) == (128, 16)
    for name, size in (("pii", 32), ("fin", 16)):
        stored = secrets.token_bytes(size)
        expected = unwrap_local_key(kms_server.keystore.get(name).material(0), stored)
        assert client.decrypt_local_key(name, 0, stored) == expected
    assert client.key_names() == ["fin", "pii"]


def test_metadata_wire_format(kms_server):
    with _session(kms_server, kms_server.user) as http:
        response = http.get("key/pii/_metadata")
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["cipher"] == "AES/CTR/NoPadding" and body["length"] == 256 and body["versions"] == 1
    assert isinstance(body["created"], int) and body["created"] > 2**31
    assert "material" not in body


def test_decrypt_accepts_both_base64_alphabets_and_encoded_paths(kms_server):
    stored = secrets.token_bytes(32)
    expected = unwrap_local_key(kms_server.keystore.get("pii").material(0), stored)
    iv = flip_bytes(stored[:16])
    forms = [
        (base64.b64encode(iv).decode(), base64.b64encode(stored).decode()),
        (
            base64.urlsafe_b64encode(iv).decode().rstrip("="),
            base64.urlsafe_b64encode(stored).decode().rstrip("="),
        ),
    ]
    with _session(kms_server, kms_server.user) as http:
        for iv_text, material in forms:
            response = http.post(
                "keyversion/pii%400/_eek",
                params={"eek_op": "decrypt"},
                content=json.dumps({"name": "pii", "iv": iv_text, "material": material}, indent=2),
                headers={"Content-Type": "application/json"},
            )
            assert response.status_code == 200, response.text
            body = response.json()
            assert body["versionName"] == "EK" and "=" not in body["material"]
            got = base64.urlsafe_b64decode(body["material"] + "=" * (-len(body["material"]) % 4))
            assert got == expected
        bad = http.post(
            "keyversion/pii@0/_eek", params={"eek_op": "decrypt"}, json={"iv": "!!", "material": "x"}
        )
        assert bad.status_code == 400 and "RemoteException" in bad.json()


def test_generate_eek_round_trips_through_decrypt(client):
    eeks = client.generate_encrypted_keys("pii", 3)
    assert len(eeks) == 3
    for eek in eeks:
        assert eek["versionName"] == "pii@0" and eek["encryptedKeyVersion"]["versionName"] == "EEK"
        iv = base64.urlsafe_b64decode(eek["iv"] + "==")
        encrypted = base64.urlsafe_b64decode(eek["encryptedKeyVersion"]["material"] + "==")
        local = client.decrypt_eek("pii@0", iv, encrypted)
        assert len(local) == 32 and local != encrypted


def test_errors_map_to_provider_exceptions(kms_server):
    with KmsClient(kms_server.provider_path, token=kms_server.issue_token("mallory")) as stranger:
        with pytest.raises(KeyAccessDeniedError, match=r"mallory.*not allowed"):
            stranger.decrypt_local_key("pii", 0, bytes(32))
        with pytest.raises(KeyAccessDeniedError):
            stranger.key_info("fin")
    with KmsClient(kms_server.provider_path) as owner:
        with pytest.raises(KeyAccessDeniedError, match="nope"):
            owner.key_info("nope")  # default deny: not in the ACL
        config = kms_server.default_acl()
        config.keys["nope"] = KeyAcl(metadata=[kms_server.user])
        kms_server.set_acl(config)
        try:
            with pytest.raises(UnknownKeyError, match="nope"):
                owner.key_info("nope")  # allowed, but the keystore has no such key: 404
        finally:
            kms_server.reset_acl()
        with pytest.raises(KeyProviderError, match="no version 7"):
            owner.decrypt_local_key("pii", 7, bytes(32))


def test_acl_flip_and_audit_never_log_material(kms_server, client):
    stored = secrets.token_bytes(32)
    kms_server.clear_requests()
    client.decrypt_local_key("pii", 0, stored)
    kms_server.deny_decrypt("pii")
    try:
        with pytest.raises(KeyAccessDeniedError):
            client.decrypt_local_key("pii", 0, stored)
        client.decrypt_local_key("fin", 0, stored[:16])  # other keys unaffected
    finally:
        kms_server.reset_acl()
    events = [(e.user, e.op, e.key, e.version, e.outcome) for e in kms_server.audit_events()]
    assert events == [
        (kms_server.user, "decrypt_eek", "pii", "pii@0", "OK"),
        (kms_server.user, "decrypt_eek", "pii", "pii@0", "DENIED"),
        (kms_server.user, "decrypt_eek", "fin", "fin@0", "OK"),
    ]
    log = (kms_server.keystore_path.parent / "audit.log").read_text()
    material = kms_server.keystore.get("pii").material(0)
    local = unwrap_local_key(material, stored)
    for secret in (material, local, stored):
        for text in (
            secret.hex(),
            base64.b64encode(secret).decode(),
            base64.urlsafe_b64encode(secret).decode(),
        ):
            assert text.rstrip("=") not in log


def test_multi_host_uri_fails_over_to_the_live_host(kms_server):
    uri = f"kms://http@127.0.0.2;127.0.0.1:{kms_server.port}/kms"
    with KmsClient(uri, timeout=5) as kms:
        assert kms.key_info("pii").bit_length == 256
    dead_uri = f"kms://http@127.0.0.2:{kms_server.port}/kms"
    with KmsClient(dead_uri, timeout=5) as dead, pytest.raises(KeyProviderError, match="unreachable"):
        dead.key_info("pii")


def test_jceks_backed_server_with_acl_file(tmp_path, monkeypatch):
    acl_file = tmp_path / "acl.yaml"
    acl_file.write_text(
        "admins: [ops]\nlist: ['*']\nkeys:\n  pii:\n    metadata: ['*']\n    decrypt_eek: [alice]\n"
    )
    monkeypatch.setenv("HADOOP_KEYSTORE_PASSWORD", "ORC_KEY")
    with KmsServer(JceksKeystore(SAMPLE_KEYSTORE), KeyAcls.load(acl_file)) as server:
        with KmsClient(server.provider_path, token=server.issue_token("alice")) as alice:
            for encrypted, local in SAMPLE1_ENCRYPTED_KEYS.items():
                assert alice.decrypt_local_key("pii", 0, bytes.fromhex(encrypted)).hex() == local
            assert alice.key_names() == ["pii"]
        with KmsClient(server.provider_path, token=server.issue_token("bob")) as bob:
            assert bob.key_info("pii").version == 0  # metadata: '*'
            with pytest.raises(KeyAccessDeniedError):
                bob.decrypt_local_key("pii", 0, bytes(32))
        ops = {TOKEN_HEADER: server.issue_token("ops").encode()}
        with httpx.Client(base_url=server.url + "/v1/", headers=ops) as http:
            created = http.post("keys", json={"name": "new", "cipher": "AES/CTR/NoPadding", "length": 256})
            assert created.status_code == 400 and "read-only" in created.json()["RemoteException"]["message"]


def test_admin_creates_and_rolls_keys_over_rest(tmp_path):
    from watershed.orc_crypto.keys.embedded import EmbeddedKeystore

    store = EmbeddedKeystore.create(tmp_path / "ks.json", "pw", scrypt_n=2**10)
    auth = KmsAuth(allow_material_read=True)
    ops = {TOKEN_HEADER: auth.issue_token("ops").encode()}
    with (
        KmsServer(store, KeyAcls.owner_only("ops"), auth=auth) as server,
        httpx.Client(base_url=server.url + "/v1/", headers=ops) as http,
    ):
        created = http.post("keys", json={"name": "hr", "cipher": "AES/CTR/NoPadding", "length": 128})
        assert created.status_code == 201 and created.headers["location"].endswith("/kms/v1/key/hr")
        rolled = http.post("key/hr", json={})
        assert rolled.status_code == 200 and rolled.json()["versionName"] == "hr@1"
        versions = http.get("key/hr/_versions").json()
        assert [v["versionName"] for v in versions] == ["hr@0", "hr@1"]
        assert http.get("keyversion/hr@1").json()["material"] == versions[1]["material"]
        assert http.get("key/hr/_currentversion").json()["versionName"] == "hr@1"
        assert http.get("keys/metadata", params=[("key", "hr")]).json()[0]["versions"] == 2
    assert EmbeddedKeystore.open(tmp_path / "ks.json", "pw").key_info("hr").version == 1


def test_acl_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "acl.yaml"
    bad.write_text("keys:\n  pii:\n    decrypt: [alice]\n")
    with pytest.raises(AclError, match=r"acl\.yaml"):
        load_acl_file(bad)
    with pytest.raises(AclError, match="cannot read"):
        load_acl_file(tmp_path / "missing.yaml")
