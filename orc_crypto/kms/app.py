"""The Hadoop KMS REST subset as a FastAPI app (doc §6), backed by a keystore.

Compatibility points that real Hadoop clients (Spark's ORC writer/reader) depend on:
- everything lives under `/kms/v1/`; path segments arrive percent-decoded (`pii%400` -> `pii@0`);
- the OPTIONS handshake of pseudo auth: without `user.name` we answer 200 *without* a cookie (the
  client then falls back to simple auth), with `user.name` 200 plus a parseable `hadoop.auth`
  cookie; we never answer `WWW-Authenticate: Negotiate` (that would start Kerberos);
- JSON bodies with Content-Type application/json, `created` in milliseconds (a Java Long);
- errors as `{"RemoteException": {...}}` with a Java class the client can rebuild;
- base64 accepted in both alphabets, written url-safe without padding like Hadoop's server.

Authentication (KmsAuth): by default only a `kms-dt` delegation token signed with the server's
secret (header X-Hadoop-Delegation-Token, see orc_crypto.keys.tokens) identifies a user; Hadoop's
pseudo auth (a claimed `user.name`) is accepted only in the explicit "pseudo" mode, for tests of
Spark's own handshake. Identity is checked, and the body size capped, before a body is read.
Every request under /kms/v1/ gets one audit line, whatever its outcome.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import unquote

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from watershed.orc_crypto.keys.base import KeyProviderError, UnknownKeyError
from watershed.orc_crypto.keys.material import (
    DEFAULT_CIPHER,
    MasterKeyRecord,
    aes_ctr,
    flip_bytes,
    split_version_name,
)
from watershed.orc_crypto.keys.tokens import TOKEN_HEADER, TokenError, issue_token, verify_token
from watershed.orc_crypto.kms.acl import KeyAcls, KeyOp
from watershed.orc_crypto.kms.audit import AuditEvent, AuditLog, now_ms
from watershed.orc_crypto.kms.settings import DEFAULT_MAX_BODY_BYTES

log = logging.getLogger(__name__)

AUTH_COOKIE = "hadoop.auth"
#: how long a handshake cookie is valid; the client re-handshakes when it expires
COOKIE_LIFETIME_MS = 10 * 3600 * 1000
MAX_EEKS_PER_REQUEST = 1000
#: request bodies are small JSON objects (a decrypt body is ~150 bytes)

_EXCEPTIONS = {
    400: ("IllegalArgumentException", "java.lang.IllegalArgumentException"),
    401: (
        "AuthenticationException",
        "org.apache.hadoop.security.authentication.client.AuthenticationException",
    ),
    403: ("AuthorizationException", "org.apache.hadoop.security.authorize.AuthorizationException"),
    404: ("IOException", "java.io.IOException"),
    405: ("IOException", "java.io.IOException"),
    409: ("IOException", "java.io.IOException"),
    413: ("IOException", "java.io.IOException"),
    500: ("IOException", "java.io.IOException"),
}
_OUTCOMES = {401: "UNAUTHENTICATED", 403: "DENIED", 404: "UNKNOWN_KEY", 413: "TOO_LARGE"}


@dataclass(frozen=True)
class KmsAuth:
    """How the server identifies users and what it serves.

    mode "token" (the default): only a delegation token signed with `secret` identifies a user.
    mode "pseudo": Hadoop's simple auth, where the client names itself in `user.name` (anyone
    can claim any name: only for tests of Spark's own KMS client). A token is accepted in both.
    """

    mode: Literal["token", "pseudo"] = "token"
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)
    #: serve key material (_currentversion, keyversion/<v>, _versions); ORC never needs it
    allow_material_read: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES

    def issue_token(self, user: str, service: str = ""):
        return issue_token(self.secret, user, service=service)


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
    auth: KmsAuth = field(default_factory=KmsAuth)
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


# -- request classification (for the audit line) ---------------------------------------------
def classify(method: str, path: str, query: dict[str, list[str]]) -> tuple[str, str | None, str | None]:
    """(operation, key, version name) of a request path under /kms/v1/, for the audit line."""
    parts = [unquote(p) for p in path.removeprefix("/kms/v1/").split("/") if p]
    if parts[:1] == ["keys"] and len(parts) == 1 and method == "POST":
        return "create", None, None
    if parts == ["keys", "names"]:
        return "list", None, None
    if parts == ["keys", "metadata"]:
        return KeyOp.METADATA.value, ",".join(query.get("key", [])) or None, None
    if len(parts) >= 2 and parts[0] == "key":
        name, tail = parts[1], parts[2:]
        if not tail:
            return KeyOp.MANAGEMENT.value, name, None
        if tail == ["_metadata"]:
            return KeyOp.METADATA.value, name, None
        if tail in (["_currentversion"], ["_versions"]):
            return KeyOp.READ.value, name, None
        if tail == ["_eek"]:
            return KeyOp.GENERATE_EEK.value, name, None
    if len(parts) >= 2 and parts[0] == "keyversion":
        version = parts[1]
        key = version.rpartition("@")[0] or version
        if parts[2:] == ["_eek"]:
            decrypt = query.get("eek_op", [""])[0] == "decrypt"
            return (KeyOp.DECRYPT_EEK if decrypt else KeyOp.GENERATE_EEK).value, key, version
        if len(parts) == 2:
            return KeyOp.READ.value, key, version
    return "unknown", None, None


class _RequestTooLargeError(Exception):
    pass


class GuardMiddleware:
    """Identity first, then a bounded body, then the app; one audit line per /kms/v1/ request.

    A pure ASGI middleware so that nothing reads a body before the caller is known: an
    unauthenticated request is answered 401 and a body over the cap 413 without buffering it.
    """

    def __init__(self, app: ASGIApp, state: KmsState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        path, method = request.url.path, request.method
        user, auth_error = authenticate(self.state, request)
        scope.setdefault("state", {})["user"] = user
        status_holder = {"status": 500}
        recorded = False

        def record() -> None:
            nonlocal recorded
            if recorded:
                return
            recorded = True
            status = status_holder["status"]
            user = scope["state"].get("user")
            if path.startswith("/kms/v1/") and method != "OPTIONS":
                query: dict[str, list[str]] = {}
                for name, value in request.query_params.multi_items():
                    query.setdefault(name, []).append(value)
                op, key, version = classify(method, path, query)
                outcome = (
                    "OK"
                    if status < 400
                    else _OUTCOMES.get(status, "ERROR" if status >= 500 else "BAD_REQUEST")
                )
                self.state.audit.record(
                    AuditEvent(
                        time_ms=now_ms(),
                        user=user or "-",
                        op=op,
                        key=key,
                        version=version,
                        outcome=outcome,
                        status=status,
                        remote=request.client.host if request.client else None,
                    )
                )
            with self.state.lock:
                self.state.requests.append(
                    RequestRecord(method, unquote(path), request.url.query, status, user)
                )
                del self.state.requests[:-10_000]

        async def send_recording(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_holder["status"] = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                # Audited before the client has the whole answer: whoever saw the answer finds its line.
                record()
            await send(message)

        try:
            early = self._early_answer(request, user, auth_error)
            if early is not None:
                await early(scope, receive, send_recording)
            else:
                body = await self._bounded_body(request, receive)
                await self.app(scope, _replay(body), send_recording)
        except _RequestTooLargeError:
            await error_response(413, "request body too large")(scope, receive, send_recording)
        finally:
            record()  # a request that ended without a complete answer is audited too

    def _early_answer(self, request: Request, user: str | None, auth_error: str | None):
        if request.method == "OPTIONS" or not request.url.path.startswith("/kms/"):
            return None  # the handshake route decides; unknown paths get their 404
        if user is None:
            return error_response(401, auth_error or "Authentication required")
        length = request.headers.get("content-length")
        if length is not None:
            try:
                too_large = int(length) > self.state.auth.max_body_bytes
            except ValueError:
                return error_response(400, "invalid Content-Length")
            if too_large:
                return error_response(413, f"request body over {self.state.auth.max_body_bytes} bytes")
        return None

    async def _bounded_body(self, request: Request, receive: Receive) -> bytes:
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.state.auth.max_body_bytes:
                raise _RequestTooLargeError
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


def authenticate(state: KmsState, request: Request) -> tuple[str | None, str | None]:
    """(user, None) for a valid credential, else (None, why). Reads headers and query only."""
    token = request.headers.get(TOKEN_HEADER)
    if token is not None:
        try:
            user = verify_token(state.auth.secret, token)
        except TokenError as exc:
            return None, f"Authentication failed: {exc}"
        if not _valid_user_name(user):
            return None, "Authentication failed: invalid user in delegation token"
        return user, None
    if state.auth.mode != "pseudo":
        return None, f"Authentication required: send a KMS delegation token in {TOKEN_HEADER}"
    user = user_from_cookie(state.cookie_secret, request.headers.get("cookie"))
    if user is None:
        user = request.query_params.get("user.name")
    if user is None:
        return None, "Authentication required: handshake with OPTIONS ?user.name=USER"
    if not _valid_user_name(user):
        return None, "invalid user.name"
    return user, None


class CreateKeyBody(BaseModel):
    """POST keys: Hadoop's createKey body."""

    model_config = ConfigDict(extra="ignore")

    name: str
    cipher: str = DEFAULT_CIPHER
    length: int = Field(default=256, ge=1, le=1 << 16)
    material: str | None = None
    description: str | None = None
    attributes: dict[str, str] = Field(default_factory=dict)


def _body_json(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        return None


# -- the app ------------------------------------------------------------------------------------
def create_app(
    backend: KeyBackend, acls: KeyAcls, audit: AuditLog | None = None, auth: KmsAuth | None = None
) -> FastAPI:
    state = KmsState(backend=backend, acls=acls, audit=audit or AuditLog(), auth=auth or KmsAuth())
    app = FastAPI(title="Watershed embedded KMS", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.kms = state

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        status = exc.status_code
        if status == 405 and classify(request.method, request.url.path, {})[0] == "unknown":
            status = 404  # only the catch-all OPTIONS route matched: the path itself is unknown
        message = "no such KMS resource" if status == 404 else str(exc.detail)
        return error_response(status, message)

    @app.exception_handler(Exception)
    async def unexpected_error(request: Request, exc: Exception):
        # The type only: a message could quote request data.
        log.error("KMS request %s %s failed: %s", request.method, request.url.path, type(exc).__name__)
        return error_response(500, f"internal error ({type(exc).__name__})")

    def current_user(request: Request) -> str:
        user = getattr(request.state, "user", None)
        if user is None:
            raise KmsHttpError(401, "Authentication required")
        return user

    def run_key_op(request: Request, op: KeyOp | str, key: str | None, action):
        """Authorize `op` on `key` for the authenticated user and run `action` (the middleware audits)."""
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
            if op == KeyOp.READ and not state.auth.allow_material_read:
                raise KmsHttpError(
                    403, "reading key material over REST is disabled on this KMS (allow_material_read)"
                )
            with state.lock:
                return action()
        except KmsHttpError as exc:
            return error_response(exc.status, exc.message)
        except UnknownKeyError as exc:
            return error_response(404, str(exc))
        except KeyProviderError as exc:
            return error_response(400, str(exc))

    @app.options("/kms/{rest:path}")
    def handshake(request: Request) -> Response:
        if getattr(request.state, "user", None) is not None and request.headers.get(TOKEN_HEADER):
            return Response(status_code=200)  # a token needs no handshake; never a cookie for it
        if state.auth.mode != "pseudo":
            # Never `WWW-Authenticate: Negotiate` (that would start Kerberos): a plain 401.
            return error_response(
                401, f"Authentication required: send a KMS delegation token in {TOKEN_HEADER}"
            )
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
        return run_key_op(request, "list", None, lambda: JSONResponse(backend.names()))

    @app.get("/kms/v1/keys/metadata")
    def keys_metadata(request: Request):
        names = request.query_params.getlist("key")
        try:
            user = current_user(request)
        except KmsHttpError as exc:
            return error_response(exc.status, exc.message)
        result = []
        for name in names:
            if not state.acls.allows_key(user, KeyOp.METADATA, name):
                return error_response(403, f"User:{user} not allowed to do 'METADATA' on '{name}'")
            try:
                result.append(backend.get(name).metadata())
            except UnknownKeyError:
                result.append(None)  # Hadoop's server puts null for a missing key
        return JSONResponse(result)

    @app.get("/kms/v1/key/{name}/_metadata")
    def key_metadata(request: Request, name: str):
        return run_key_op(request, KeyOp.METADATA, name, lambda: JSONResponse(backend.get(name).metadata()))

    @app.get("/kms/v1/key/{name}/_currentversion")
    def current_version(request: Request, name: str):
        def action():
            record = backend.get(name)
            v = record.current_version
            return JSONResponse(key_version_json(name, f"{name}@{v}", record.material(v)))

        return run_key_op(request, KeyOp.READ, name, action)

    @app.get("/kms/v1/key/{name}/_versions")
    def key_versions(request: Request, name: str):
        def action():
            record = backend.get(name)
            return JSONResponse(
                [key_version_json(name, f"{name}@{v}", m) for v, m in enumerate(record.versions)]
            )

        return run_key_op(request, KeyOp.READ, name, action)

    @app.get("/kms/v1/keyversion/{version_name}")
    def key_version(request: Request, version_name: str):
        def action():
            record, v = parse_version(version_name)
            return JSONResponse(key_version_json(record.name, version_name, record.material(v)))

        return run_key_op(request, KeyOp.READ, version_key(version_name), action)

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

        return run_key_op(request, KeyOp.GENERATE_EEK, name, action)

    @app.post("/kms/v1/keyversion/{version_name}/_eek")
    async def eek_op(request: Request, version_name: str):
        op = request.query_params.get("eek_op")
        body = _body_json(await request.body())
        key = version_key(version_name)
        acl_op = KeyOp.DECRYPT_EEK if op == "decrypt" else KeyOp.GENERATE_EEK

        def action():
            if op not in ("decrypt", "reencrypt"):
                raise KmsHttpError(400, f"unsupported eek_op {op!r} (expected decrypt or reencrypt)")
            if not isinstance(body, dict) or not isinstance(body.get("iv"), str):
                raise KmsHttpError(400, "request body must be a JSON object with 'iv' and 'material'")
            record, version = parse_version(version_name)
            if body.get("name") not in (None, record.name):
                raise KmsHttpError(400, f"key name in the body does not match {version_name!r}")
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

        return run_key_op(request, acl_op, key, action)

    @app.post("/kms/v1/keys")
    async def create_key(request: Request):
        raw = _body_json(await request.body())

        def action():
            try:
                body = CreateKeyBody.model_validate(raw)
            except ValidationError as exc:
                # Field names only: the rejected values may include key material.
                fields = sorted({".".join(map(str, e["loc"])) or "body" for e in exc.errors()})
                raise KmsHttpError(400, f"invalid create-key body: {', '.join(fields)}") from None
            record = backend.create_key(
                body.name,
                bits=body.length,
                cipher=body.cipher,
                description=body.description,
                attributes=body.attributes,
                material=None if body.material is None else b64decode_any(body.material, "material"),
            )
            response = JSONResponse(
                key_version_json(body.name, f"{body.name}@{record.current_version}", None), status_code=201
            )
            response.headers["Location"] = str(request.url_for("key_metadata", name=body.name)).removesuffix(
                "/_metadata"
            )
            return response

        return run_key_op(request, "create", None, action)

    @app.post("/kms/v1/key/{name}")
    async def roll_key(request: Request, name: str):
        body = _body_json(await request.body())
        material = body.get("material") if isinstance(body, dict) else None

        def action():
            if material is not None and not isinstance(material, str):
                raise KmsHttpError(400, "'material' must be a base64 string")
            record = backend.roll_key(name, None if material is None else b64decode_any(material, "material"))
            v = record.current_version
            return JSONResponse(key_version_json(name, f"{name}@{v}", None))

        return run_key_op(request, KeyOp.MANAGEMENT, name, action)

    @app.delete("/kms/v1/key/{name}")
    def delete_key(request: Request, name: str):
        def action():
            backend.delete_key(name)
            return Response(status_code=200)

        return run_key_op(request, KeyOp.MANAGEMENT, name, action)

    app.add_middleware(GuardMiddleware, state=state)
    return app
