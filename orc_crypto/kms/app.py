"""The Hadoop KMS REST subset as a FastAPI app (doc §6), backed by a keystore.

Compatibility points that real Hadoop clients (Spark's ORC writer/reader) depend on:
- everything lives under `/kms/v1/`; path segments arrive percent-decoded (`pii%400` -> `pii@0`);
- the OPTIONS handshake of pseudo auth: without `user.name` we answer 200 *without* a cookie (the
  client then falls back to simple auth), with `user.name` 200 plus a parseable `hadoop.auth`
  cookie; we never answer `WWW-Authenticate: Negotiate` (that would start Kerberos);
- JSON bodies with Content-Type application/json, `created` in milliseconds (a Java Long);
- errors as `{"RemoteException": {...}}` with a Java class the client can rebuild;
- base64 accepted in both alphabets, written url-safe without padding like Hadoop's server.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import unquote

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from orc_crypto.keys.base import KeyProviderError, UnknownKey
from orc_crypto.keys.material import (
    DEFAULT_CIPHER,
    MasterKeyRecord,
    aes_ctr,
    flip_bytes,
    split_version_name,
)
from orc_crypto.kms.acl import KeyAcls, KeyOp
from orc_crypto.kms.audit import AuditEvent, AuditLog, now_ms

AUTH_COOKIE = "hadoop.auth"
#: how long a handshake cookie is valid; the client re-handshakes when it expires
COOKIE_LIFETIME_MS = 10 * 3600 * 1000
MAX_EEKS_PER_REQUEST = 1000

_EXCEPTIONS = {
    400: ("IllegalArgumentException", "java.lang.IllegalArgumentException"),
    401: (
        "AuthenticationException",
        "org.apache.hadoop.security.authentication.client.AuthenticationException",
    ),
    403: ("AuthorizationException", "org.apache.hadoop.security.authorize.AuthorizationException"),
    404: ("IOException", "java.io.IOException"),
    409: ("IOException", "java.io.IOException"),
    500: ("IOException", "java.io.IOException"),
}


class KeyBackend(Protocol):
    """What the server needs from a keystore (EmbeddedKeystore, JceksKeystore)."""

    def names(self) -> list[str]: ...

    def get(self, name: str) -> MasterKeyRecord: ...

    def create_key(
        self,
        name: str,
        *,
        bits: int = 256,
        description: str | None = None,
        attributes: dict[str, str] | None = None,
        material: bytes | None = None,
        cipher: str = DEFAULT_CIPHER,
    ) -> MasterKeyRecord: ...

    def roll_key(self, name: str, material: bytes | None = None) -> MasterKeyRecord: ...

    def delete_key(self, name: str) -> None: ...


@dataclass(frozen=True)
class RequestRecord:
    """One HTTP request as seen by the server (method, decoded path, query, status, user)."""

    method: str
    path: str
    query: str
    status: int
    user: str | None


@dataclass
class KmsState:
    backend: KeyBackend
    acls: KeyAcls
    audit: AuditLog
    cookie_secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    requests: list[RequestRecord] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class KmsHttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# -- encoding helpers ---------------------------------------------------------------------------
def b64decode_any(text: str, what: str) -> bytes:
    """Decode standard or url-safe base64, padded or not (like commons-codec decodeBase64)."""
    cleaned = text.strip().replace("-", "+").replace("_", "/").rstrip("=")
    try:
        return base64.b64decode(cleaned + "=" * (-len(cleaned) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise KmsHttpError(400, f"'{what}' is not valid base64") from exc


def b64encode_urlsafe(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def error_response(status: int, message: str) -> JSONResponse:
    exception, java_class = _EXCEPTIONS.get(status, _EXCEPTIONS[500])
    body = {"RemoteException": {"message": message, "exception": exception, "javaClassName": java_class}}
    return JSONResponse(body, status_code=status)


# -- auth ---------------------------------------------------------------------------------------
def _sign(secret: bytes, payload: str) -> str:
    return b64encode_urlsafe(hmac.new(secret, payload.encode("utf-8"), hashlib.sha256).digest())


def make_auth_cookie(secret: bytes, user: str) -> str:
    """`u=..&p=..&t=simple&e=..&s=..` as hadoop-auth's AuthToken.parse expects."""
    expires = now_ms() + COOKIE_LIFETIME_MS
    payload = f"u={user}&p={user}&t=simple&e={expires}"
    return f"{payload}&s={_sign(secret, payload)}"


def user_from_cookie(secret: bytes, header: str | None) -> str | None:
    """The user of a valid, unexpired, correctly signed `hadoop.auth` cookie, else None."""
    if not header:
        return None
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name != AUTH_COOKIE:
            continue
        value = value.strip().strip('"')
        payload, sep, signature = value.rpartition("&s=")
        if not sep or not hmac.compare_digest(signature, _sign(secret, payload)):
            return None
        fields = dict(item.partition("=")[::2] for item in payload.split("&"))
        try:
            if int(fields.get("e", "0")) < now_ms():
                return None
        except ValueError:
            return None
        return fields.get("u") or None
    return None


def _valid_user_name(user: str) -> bool:
    return 0 < len(user) <= 256 and all(c.isprintable() and c not in '&=";, ' for c in user)


# -- JSON shapes --------------------------------------------------------------------------------
def key_version_json(name: str, version_name: str, material: bytes | None) -> dict[str, Any]:
    return {
        "name": name,
        "versionName": version_name,
        "material": None if material is None else b64encode_urlsafe(material),
    }


def eek_json(record: MasterKeyRecord, version: int, iv: bytes, encrypted: bytes) -> dict[str, Any]:
    return {
        "versionName": f"{record.name}@{version}",
        "iv": b64encode_urlsafe(iv),
        "encryptedKeyVersion": {
            "name": record.name,
            "versionName": "EEK",
            "material": b64encode_urlsafe(encrypted),
        },
    }


def generate_eek(record: MasterKeyRecord) -> dict[str, Any]:
    version = record.current_version
    local_key = secrets.token_bytes(record.bit_length // 8)
    iv = secrets.token_bytes(16)
    encrypted = aes_ctr(record.material(version), flip_bytes(iv), local_key)
    return eek_json(record, version, iv, encrypted)


# -- the app ------------------------------------------------------------------------------------
def create_app(backend: KeyBackend, acls: KeyAcls, audit: AuditLog | None = None) -> FastAPI:
    state = KmsState(backend=backend, acls=acls, audit=audit or AuditLog())
    app = FastAPI(title="Watershed embedded KMS", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.kms = state

    def current_user(request: Request) -> str:
        user = user_from_cookie(state.cookie_secret, request.headers.get("cookie"))
        if user is None:
            user = request.query_params.get("user.name")
        if user is None:
            raise KmsHttpError(401, "Authentication required: handshake with OPTIONS ?user.name=USER")
        if not _valid_user_name(user):
            raise KmsHttpError(400, "invalid user.name")
        request.state.user = user
        return user

    def audited(request: Request, op: str, key: str | None, version: str | None, outcome: str, status: int):
        state.audit.record(
            AuditEvent(
                time_ms=now_ms(),
                user=getattr(request.state, "user", None) or "-",
                op=op,
                key=key,
                version=version,
                outcome=outcome,
                status=status,
                remote=request.client.host if request.client else None,
            )
        )

    def run_key_op(request: Request, op: KeyOp | str, key: str | None, version: str | None, action):
        """Authenticate, authorize `op` on `key`, run `action`, audit the outcome either way."""
        op_name = op.value if isinstance(op, KeyOp) else op
        try:
            user = current_user(request)
            allowed = (
                state.acls.allows_key(user, op, key)
                if isinstance(op, KeyOp) and key is not None
                else state.acls.allows_list(user)
                if op_name == "list"
                else state.acls.allows_create(user)
            )
            if not allowed:
                raise KmsHttpError(
                    403, f"User:{user} not allowed to do '{op_name.upper()}' on '{key or '*'}'"
                )
            with state.lock:
                response = action()
        except KmsHttpError as exc:
            outcome = {401: "UNAUTHENTICATED", 403: "DENIED", 404: "UNKNOWN_KEY"}.get(
                exc.status, "BAD_REQUEST"
            )
            audited(request, op_name, key, version, outcome, exc.status)
            return error_response(exc.status, exc.message)
        except UnknownKey as exc:
            audited(request, op_name, key, version, "UNKNOWN_KEY", 404)
            return error_response(404, str(exc))
        except KeyProviderError as exc:
            audited(request, op_name, key, version, "BAD_REQUEST", 400)
            return error_response(400, str(exc))
        audited(request, op_name, key, version, "OK", response.status_code)
        return response

    @app.middleware("http")
    async def record_requests(request: Request, call_next):
        try:
            response = await call_next(request)
        except KmsHttpError as exc:
            response = error_response(exc.status, exc.message)
        with state.lock:
            state.requests.append(
                RequestRecord(
                    request.method,
                    unquote(request.url.path),
                    request.url.query,
                    response.status_code,
                    getattr(request.state, "user", None),
                )
            )
            del state.requests[:-10_000]
        return response

    @app.options("/kms/{rest:path}")
    def handshake(request: Request) -> Response:
        user = request.query_params.get("user.name")
        if user is None:
            # 200 without a cookie sends the Hadoop client to its pseudo-auth fallback (doc §6.4).
            return Response(status_code=200)
        if not _valid_user_name(user):
            return error_response(400, "invalid user.name")
        request.state.user = user
        response = Response(status_code=200)
        cookie = make_auth_cookie(state.cookie_secret, user)
        response.headers.append("Set-Cookie", f'{AUTH_COOKIE}="{cookie}"; Path=/; HttpOnly')
        return response

    def parse_version(version_name: str) -> tuple[MasterKeyRecord, int]:
        try:
            name, version = split_version_name(version_name)
        except KeyProviderError as exc:
            raise KmsHttpError(400, str(exc)) from exc
        record = backend.get(name)
        record.material(version)  # raises if the version does not exist
        return record, version

    def version_key(version_name: str) -> str:
        return version_name.rpartition("@")[0] or version_name

    @app.get("/kms/v1/keys/names")
    def key_names(request: Request):
        return run_key_op(request, "list", None, None, lambda: JSONResponse(backend.names()))

    @app.get("/kms/v1/keys/metadata")
    def keys_metadata(request: Request):
        names = request.query_params.getlist("key")
        user = None
        try:
            user = current_user(request)
        except KmsHttpError as exc:
            return error_response(exc.status, exc.message)
        result = []
        for name in names:
            if not state.acls.allows_key(user, KeyOp.METADATA, name):
                audited(request, KeyOp.METADATA.value, name, None, "DENIED", 403)
                return error_response(403, f"User:{user} not allowed to do 'METADATA' on '{name}'")
            try:
                result.append(backend.get(name).metadata())
            except UnknownKey:
                result.append(None)  # Hadoop's server puts null for a missing key
        for name in names:
            audited(request, KeyOp.METADATA.value, name, None, "OK", 200)
        return JSONResponse(result)

    @app.get("/kms/v1/key/{name}/_metadata")
    def key_metadata(request: Request, name: str):
        return run_key_op(
            request, KeyOp.METADATA, name, None, lambda: JSONResponse(backend.get(name).metadata())
        )

    @app.get("/kms/v1/key/{name}/_currentversion")
    def current_version(request: Request, name: str):
        def action():
            record = backend.get(name)
            v = record.current_version
            return JSONResponse(key_version_json(name, f"{name}@{v}", record.material(v)))

        return run_key_op(request, KeyOp.READ, name, None, action)

    @app.get("/kms/v1/key/{name}/_versions")
    def key_versions(request: Request, name: str):
        def action():
            record = backend.get(name)
            return JSONResponse(
                [key_version_json(name, f"{name}@{v}", m) for v, m in enumerate(record.versions)]
            )

        return run_key_op(request, KeyOp.READ, name, None, action)

    @app.get("/kms/v1/keyversion/{version_name}")
    def key_version(request: Request, version_name: str):
        def action():
            record, v = parse_version(version_name)
            return JSONResponse(key_version_json(record.name, version_name, record.material(v)))

        return run_key_op(request, KeyOp.READ, version_key(version_name), version_name, action)

    @app.get("/kms/v1/key/{name}/_eek")
    def generate(request: Request, name: str):
        op = request.query_params.get("eek_op")

        def action():
            if op != "generate":
                raise KmsHttpError(400, f"unsupported eek_op {op!r} for GET (expected generate)")
            try:
                count = int(request.query_params.get("num_keys", "1"))
            except ValueError:
                raise KmsHttpError(400, "num_keys must be an integer") from None
            if not 1 <= count <= MAX_EEKS_PER_REQUEST:
                raise KmsHttpError(400, f"num_keys must be 1..{MAX_EEKS_PER_REQUEST}")
            record = backend.get(name)
            return JSONResponse([generate_eek(record) for _ in range(count)])

        return run_key_op(request, KeyOp.GENERATE_EEK, name, None, action)

    @app.post("/kms/v1/keyversion/{version_name}/_eek")
    async def eek_op(request: Request, version_name: str):
        op = request.query_params.get("eek_op")
        try:
            body = await request.json()
        except ValueError:
            body = None
        key = version_key(version_name)
        acl_op = KeyOp.DECRYPT_EEK if op == "decrypt" else KeyOp.GENERATE_EEK

        def action():
            if op not in ("decrypt", "reencrypt"):
                raise KmsHttpError(400, f"unsupported eek_op {op!r} (expected decrypt or reencrypt)")
            if not isinstance(body, dict) or not isinstance(body.get("iv"), str):
                raise KmsHttpError(400, "request body must be a JSON object with 'iv' and 'material'")
            record, version = parse_version(version_name)
            if body.get("name") not in (None, record.name):
                raise KmsHttpError(400, f"key name {body.get('name')!r} does not match {version_name!r}")
            iv = b64decode_any(body["iv"], "iv")
            if len(iv) != 16:
                raise KmsHttpError(400, f"iv must be 16 bytes, got {len(iv)}")
            material_field = body.get("material")
            if material_field is None and isinstance(body.get("encryptedKeyVersion"), dict):
                material_field = body["encryptedKeyVersion"].get("material")
            if not isinstance(material_field, str):
                raise KmsHttpError(400, "request body has no 'material'")
            encrypted = b64decode_any(material_field, "material")
            if not encrypted:
                raise KmsHttpError(400, "'material' is empty")
            local_key = aes_ctr(record.material(version), flip_bytes(iv), encrypted)
            if op == "decrypt":
                return JSONResponse(key_version_json(record.name, "EK", local_key))
            current = record.current_version
            reencrypted = aes_ctr(record.material(current), flip_bytes(iv), local_key)
            return JSONResponse(eek_json(record, current, iv, reencrypted))

        return run_key_op(request, acl_op, key, version_name, action)

    @app.post("/kms/v1/keys")
    async def create_key(request: Request):
        try:
            body = await request.json()
        except ValueError:
            body = None
        name = body.get("name") if isinstance(body, dict) else None

        def action():
            if not isinstance(name, str):
                raise KmsHttpError(400, "request body must be a JSON object with 'name'")
            material = body.get("material")
            record = backend.create_key(
                name,
                bits=int(body.get("length") or 256),
                cipher=body.get("cipher") or DEFAULT_CIPHER,
                description=body.get("description"),
                attributes=body.get("attributes") or {},
                material=None if material is None else b64decode_any(material, "material"),
            )
            response = JSONResponse(
                key_version_json(name, f"{name}@{record.current_version}", None), status_code=201
            )
            response.headers["Location"] = str(request.url_for("key_metadata", name=name)).removesuffix(
                "/_metadata"
            )
            return response

        return run_key_op(request, "create", name, None, action)

    @app.post("/kms/v1/key/{name}")
    async def roll_key(request: Request, name: str):
        try:
            body = await request.json()
        except ValueError:
            body = {}
        material = body.get("material") if isinstance(body, dict) else None

        def action():
            record = backend.roll_key(name, None if material is None else b64decode_any(material, "material"))
            v = record.current_version
            return JSONResponse(key_version_json(name, f"{name}@{v}", None))

        return run_key_op(request, KeyOp.MANAGEMENT, name, None, action)

    @app.delete("/kms/v1/key/{name}")
    def delete_key(request: Request, name: str):
        def action():
            backend.delete_key(name)
            return Response(status_code=200)

        return run_key_op(request, KeyOp.MANAGEMENT, name, None, action)

    return app
