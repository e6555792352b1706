"""Hadoop delegation tokens of kind `kms-dt`, as the embedded KMS issues and checks them.

Hadoop's KMS client (KMSClientProvider through DelegationTokenAuthenticatedURL) skips its
authentication handshake when the current user's credentials hold a `kms-dt` token whose alias
or service is the provider URI (`kms://http@HOST:PORT/kms`) or `HOST:PORT`, and sends it in the
`X-Hadoop-Delegation-Token` header as `Token.encodeToUrlString()`: url-safe base64, unpadded, of
the Token Writable (vint-length identifier, vint-length password, Text kind, Text service).
The JVM loads tokens from the file named by HADOOP_TOKEN_FILE_LOCATION or `hadoop.token.files`
(Credentials storage: "HDTS", version 0, then the Writable token map).

The identifier is AbstractDelegationTokenIdentifier's Writable (version byte, owner, renewer,
real user, issue date, max date, sequence number, master key id), so Hadoop can decode it; the
password is HMAC-SHA256 of the identifier under the server's secret, as Hadoop's secret managers
derive passwords. Whoever can read the token file acts as its owner: it is written 0600.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import io
import os
import secrets
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from watershed.orc_crypto.keys.base import KeyProviderError
from watershed.orc_crypto.keys.private_file import write_private

TOKEN_KIND = "kms-dt"
TOKEN_HEADER = "X-Hadoop-Delegation-Token"
STORAGE_MAGIC = b"HDTS"
STORAGE_VERSION_WRITABLE = 0
#: a token is valid this long after it was issued (a server start re-issues the owner's token)
DEFAULT_TOKEN_LIFETIME_MS = 365 * 24 * 3600 * 1000
SECRET_BYTES = 32


def default_kms_directory() -> Path:
    """Where the KMS secret and token files live by default: DATA_DIR/kms (WATERSHED_DATA_DIR, else var)."""
    from watershed.graph.settings import data_dir

    return data_dir() / "kms"


class TokenError(KeyProviderError):
    """A token, token file or secret file is malformed, unreadable or not owner-only."""


# -- Hadoop Writable primitives ------------------------------------------------------------------
def _write_vlong(out: io.BytesIO, value: int) -> None:
    """WritableUtils.writeVLong."""
    if -112 <= value <= 127:
        out.write(bytes([value & 0xFF]))
        return
    length = -112
    if value < 0:
        value ^= -1
        length = -120
    tmp = value
    while tmp != 0:
        tmp >>= 8
        length -= 1
    out.write(bytes([length & 0xFF]))
    count = -(length + 120) if length < -120 else -(length + 112)
    for index in range(count, 0, -1):
        out.write(bytes([(value >> ((index - 1) * 8)) & 0xFF]))


def _read_byte(data: io.BytesIO) -> int:
    raw = data.read(1)
    if not raw:
        raise TokenError("truncated token data")
    return raw[0]


def _read_vlong(data: io.BytesIO) -> int:
    """WritableUtils.readVLong."""
    first = _read_byte(data)
    first = first - 256 if first > 127 else first
    if first >= -112:
        return first
    negative = first < -120
    count = (-119 - first) if negative else (-111 - first)
    value = 0
    for _ in range(count - 1):
        value = (value << 8) | _read_byte(data)
    return value ^ -1 if negative else value


def _write_bytes(out: io.BytesIO, value: bytes) -> None:
    _write_vlong(out, len(value))
    out.write(value)


def _read_bytes(data: io.BytesIO, limit: int = 1 << 16) -> bytes:
    length = _read_vlong(data)
    if not 0 <= length <= limit:
        raise TokenError(f"token field length {length} out of range")
    value = data.read(length)
    if len(value) != length:
        raise TokenError("truncated token data")
    return value


def _read_text(data: io.BytesIO) -> str:
    try:
        return _read_bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise TokenError("token text is not UTF-8") from None


# -- tokens --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TokenIdentifier:
    owner: str
    issue_ms: int
    max_ms: int
    sequence: int
    renewer: str = ""
    real_user: str = ""
    master_key_id: int = 0

    def to_bytes(self) -> bytes:
        out = io.BytesIO()
        out.write(b"\x00")  # AbstractDelegationTokenIdentifier.VERSION
        for text in (self.owner, self.renewer, self.real_user):
            _write_bytes(out, text.encode("utf-8"))
        for number in (self.issue_ms, self.max_ms, self.sequence, self.master_key_id):
            _write_vlong(out, number)
        return out.getvalue()

    @classmethod
    def from_bytes(cls, raw: bytes) -> TokenIdentifier:
        data = io.BytesIO(raw)
        if _read_byte(data) != 0:
            raise TokenError("unknown token identifier version")
        owner, renewer, real_user = _read_text(data), _read_text(data), _read_text(data)
        issue_ms, max_ms = _read_vlong(data), _read_vlong(data)
        sequence, master_key_id = _read_vlong(data), _read_vlong(data)
        return cls(owner, issue_ms, max_ms, sequence, renewer, real_user, master_key_id)


@dataclass(frozen=True)
class DelegationToken:
    identifier: bytes
    password: bytes
    kind: str
    service: str

    def to_bytes(self) -> bytes:
        out = io.BytesIO()
        _write_bytes(out, self.identifier)
        _write_bytes(out, self.password)
        _write_bytes(out, self.kind.encode("utf-8"))
        _write_bytes(out, self.service.encode("utf-8"))
        return out.getvalue()

    @classmethod
    def read(cls, data: io.BytesIO) -> DelegationToken:
        identifier, password = _read_bytes(data), _read_bytes(data)
        return cls(identifier, password, _read_text(data), _read_text(data))

    def encode(self) -> str:
        """Token.encodeToUrlString(): the value of the X-Hadoop-Delegation-Token header."""
        return base64.urlsafe_b64encode(self.to_bytes()).decode("ascii").rstrip("=")

    @classmethod
    def decode(cls, text: str) -> DelegationToken:
        cleaned = text.strip().replace("+", "-").replace("/", "_").rstrip("=")
        try:
            raw = base64.urlsafe_b64decode(cleaned + "=" * (-len(cleaned) % 4))
        except (binascii.Error, ValueError):
            raise TokenError("delegation token is not base64") from None
        data = io.BytesIO(raw)
        token = cls.read(data)
        if data.read(1):
            raise TokenError("delegation token has trailing bytes")
        return token

    def with_service(self, service: str) -> DelegationToken:
        return DelegationToken(self.identifier, self.password, self.kind, service)


def _password(secret: bytes, identifier: bytes) -> bytes:
    return hmac.new(secret, identifier, hashlib.sha256).digest()


def issue_token(
    secret: bytes, owner: str, *, service: str = "", lifetime_ms: int = DEFAULT_TOKEN_LIFETIME_MS
) -> DelegationToken:
    """A `kms-dt` token for `owner`, valid `lifetime_ms` from now, signed with `secret`."""
    now = int(time.time() * 1000)
    identifier = TokenIdentifier(
        owner=owner, issue_ms=now, max_ms=now + lifetime_ms, sequence=secrets.randbelow(2**31)
    ).to_bytes()
    return DelegationToken(identifier, _password(secret, identifier), TOKEN_KIND, service)


def verify_token(secret: bytes, encoded: str) -> str:
    """The owner of a valid, unexpired `kms-dt` token signed with `secret`; raises TokenError."""
    token = DelegationToken.decode(encoded)
    if token.kind != TOKEN_KIND:
        raise TokenError(f"delegation token of kind {token.kind!r}, expected {TOKEN_KIND}")
    if not hmac.compare_digest(token.password, _password(secret, token.identifier)):
        raise TokenError("delegation token has an invalid signature")
    identifier = TokenIdentifier.from_bytes(token.identifier)
    if identifier.max_ms and identifier.max_ms < int(time.time() * 1000):
        raise TokenError("delegation token has expired")
    if not identifier.owner:
        raise TokenError("delegation token has no owner")
    return identifier.owner


def token_services(host: str, port: int) -> list[str]:
    """The services Hadoop's KMS client looks a token up by: the provider URI, then HOST:PORT."""
    return [f"kms://http@{host}:{port}/kms", f"{host}:{port}"]


# -- files ---------------------------------------------------------------------------------------
def _check_owner_only(path: Path, what: str) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise TokenError(f"{what} {path} is readable by others (mode {mode:04o}); chmod 600 it")


def load_or_create_secret(path: Path) -> bytes:
    """The server secret in `path` (hex, mode 0600), generated on first use."""
    path = Path(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(SECRET_BYTES) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
    try:
        _check_owner_only(path, "KMS secret file")
        secret = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except OSError as exc:
        raise TokenError(f"cannot read KMS secret file {path}: {exc.strerror}") from exc
    except ValueError:
        raise TokenError(f"KMS secret file {path} is not hex") from None
    if len(secret) < 16:
        raise TokenError(f"KMS secret file {path} holds fewer than 16 bytes")
    return secret


def write_token_file(path: Path, token: DelegationToken, services: list[str]) -> None:
    """A Hadoop token storage file (HDTS, Writable format) holding `token` once per service alias."""
    out = io.BytesIO()
    out.write(STORAGE_MAGIC)
    out.write(bytes([STORAGE_VERSION_WRITABLE]))
    _write_vlong(out, len(services))
    for service in services:
        _write_bytes(out, service.encode("utf-8"))  # the alias
        out.write(token.with_service(service).to_bytes())
    _write_vlong(out, 0)  # no secret keys
    write_private(Path(path), out.getvalue())


def read_token_file(path: Path) -> dict[str, DelegationToken]:
    """alias -> token of a Hadoop token storage file (Writable format)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TokenError(f"cannot read token file {path}: {exc.strerror}") from exc
    data = io.BytesIO(raw)
    if data.read(4) != STORAGE_MAGIC or data.read(1) != bytes([STORAGE_VERSION_WRITABLE]):
        raise TokenError(f"{path} is not a Hadoop token file (Writable format)")
    try:
        count = _read_vlong(data)
        tokens = {}
        for _ in range(count):
            alias = _read_text(data)
            tokens[alias] = DelegationToken.read(data)
    except TokenError as exc:
        raise TokenError(f"token file {path}: {exc}") from None
    return tokens


def select_kms_token(tokens: dict[str, DelegationToken], services: list[str]) -> DelegationToken | None:
    """The `kms-dt` token for the first matching service, by alias or by the token's service."""
    for service in services:
        for alias, token in tokens.items():
            if token.kind == TOKEN_KIND and service in (alias, token.service):
                return token
    return None
