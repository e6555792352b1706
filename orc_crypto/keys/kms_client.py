"""A Hadoop KMS / Ranger KMS REST client (doc §6) implementing KeyProvider.

Master keys never leave the KMS: the client asks for metadata and has the KMS decrypt
the encrypted local key (decrypt-EEK), exactly as ORC Java does (doc §5).

Authentication, like Hadoop's client: a `kms-dt` delegation token for the provider (given, or
found in the token files named by HADOOP_TOKEN_FILE_LOCATION / WATERSHED_KMS_TOKEN_FILE, or in
DATA_DIR/kms/kms.token) is sent in X-Hadoop-Delegation-Token; without one, the pseudo-auth handshake
with `user.name` (which the embedded KMS accepts only in its explicit pseudo mode).
"""

from __future__ import annotations

import base64
import binascii
import getpass
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from watershed.orc_crypto.keys.base import (
    KeyAccessDeniedError,
    KeyProviderError,
    MasterKeyInfo,
    UnknownKeyError,
)
from watershed.orc_crypto.keys.material import flip_bytes
from watershed.orc_crypto.keys.tokens import (
    TOKEN_HEADER,
    DelegationToken,
    TokenError,
    TokenIdentifier,
    default_kms_directory,
    read_token_file,
    select_kms_token,
    token_services,
)

DEFAULT_TIMEOUT = 30.0


def kms_base_urls(provider_uri: str) -> list[str]:
    """`kms://http@h1;h2:9600/kms` -> ["http://h1:9600/kms/v1/", "http://h2:9600/kms/v1/"]."""
    scheme, sep, rest = provider_uri.partition("://")
    if scheme != "kms" or not sep:
        raise KeyProviderError(
            f"invalid KMS provider URI {provider_uri!r}: expected kms://http@HOST:PORT/kms"
        )
    proto, at, location = rest.partition("@")
    if not at or proto not in ("http", "https"):
        raise KeyProviderError(
            f"invalid KMS provider URI {provider_uri!r}: expected kms://http@ or kms://https@"
        )
    authority, slash, path = location.partition("/")
    path = ("/" + path if slash else "").rstrip("/")
    hosts_part, colon, port = authority.rpartition(":")
    if not colon or not port.isdigit() or not hosts_part:
        raise KeyProviderError(f"invalid KMS provider URI {provider_uri!r}: missing HOST:PORT")
    hosts = [h for h in hosts_part.split(";") if h]
    if not hosts:
        raise KeyProviderError(f"invalid KMS provider URI {provider_uri!r}: no host")
    return [f"{proto}://{host}:{port}{path}/v1/" for host in hosts]


def b64decode_any(text: str) -> bytes:
    cleaned = text.strip().replace("-", "+").replace("_", "/").rstrip("=")
    return base64.b64decode(cleaned + "=" * (-len(cleaned) % 4), validate=True)


def token_file_candidates() -> list[Path]:
    """Token files to search, as Hadoop's UGI would plus ours: env files first, then the default."""
    names = [os.environ.get("HADOOP_TOKEN_FILE_LOCATION", ""), os.environ.get("WATERSHED_KMS_TOKEN_FILE", "")]
    paths = [Path(part.strip()) for name in names for part in name.split(",") if part.strip()]
    # where `watershed kms serve` writes its owner's token unless WATERSHED_KMS_TOKEN_FILE says otherwise
    return [*paths, default_kms_directory() / "kms.token"]


def find_token(provider_uri: str, files: list[Path] | None = None) -> DelegationToken | None:
    """The kms-dt token for `provider_uri` in the first token file that has one (unreadable files skipped)."""
    services = [provider_uri.rstrip("/")]
    for base in kms_base_urls(provider_uri):
        parts = urlsplit(base)
        services += token_services(parts.hostname or "", parts.port or 0)
    for path in token_file_candidates() if files is None else files:
        if not path.is_file():
            continue
        try:
            token = select_kms_token(read_token_file(path), services)
        except TokenError:
            continue
        if token is not None:
            return token
    return None


def _segment(value: str) -> str:
    # Hadoop's client encodes each path segment like Java's URLEncoder.
    return quote(value, safe="")


class KmsClient:
    """KeyProvider over one or more KMS hosts (tried in order on connection errors)."""

    def __init__(
        self,
        provider_uri: str,
        *,
        user: str | None = None,
        token: DelegationToken | str | None = None,
        token_file: Path | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """`token` (or the kms-dt token in `token_file`, else in the default token files)
        authenticates; with `user` given and no token, pseudo auth as `user`."""
        self.provider_uri = provider_uri
        self.base_urls = kms_base_urls(provider_uri)
        if isinstance(token, str):
            token = DelegationToken.decode(token)
        if token is None and token_file is not None:
            token = find_token(provider_uri, [Path(token_file)])
            if token is None:
                raise KeyProviderError(f"token file {token_file} has no KMS token for {provider_uri}")
        if token is None and user is None:
            token = find_token(provider_uri)
        self._token = token
        self.user = user or getpass.getuser()
        if token is not None:
            self.user = TokenIdentifier.from_bytes(token.identifier).owner
        headers = {TOKEN_HEADER: token.encode()} if token is not None else None
        self._client = httpx.Client(timeout=timeout, transport=transport, headers=headers)
        self._authenticated: set[str] = set(self.base_urls) if token is not None else set()

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> KmsClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport ---------------------------------------------------------------------------
    def _handshake(self, base: str) -> None:
        """Simple (pseudo) auth: OPTIONS with user.name; the server answers with a hadoop.auth cookie."""
        response = self._client.request("OPTIONS", base, params={"user.name": self.user})
        if response.status_code not in (200, 201, 202):
            raise KeyProviderError(
                f"KMS {base}: authentication as {self.user!r} failed with HTTP {response.status_code}"
            )
        self._authenticated.add(base)

    def _request(self, method: str, path: str, *, what: str, params=None, json: Any = None) -> Any:
        errors: list[str] = []
        for base in self.base_urls:
            try:
                for attempt in range(2):
                    if base not in self._authenticated:
                        self._handshake(base)
                    response = self._client.request(method, base + path, params=params, json=json)
                    if response.status_code == 401 and attempt == 0 and self._token is None:
                        # Expired or foreign cookie: authenticate again once, like Hadoop's client.
                        self._authenticated.discard(base)
                        self._client.cookies.clear()
                        continue
                    return self._check(response, what)
            except httpx.TransportError as exc:
                errors.append(f"{base}: {exc}")
        raise KeyProviderError(f"KMS {self.provider_uri} unreachable for {what}: {'; '.join(errors)}")

    @staticmethod
    def _remote_message(response: httpx.Response) -> str:
        try:
            body = response.json()
            message = body["RemoteException"]["message"]
            if isinstance(message, str):
                return message
        except (ValueError, KeyError, TypeError):
            pass
        return response.reason_phrase or response.text[:200]

    def _check(self, response: httpx.Response, what: str) -> Any:
        status = response.status_code
        if status in (200, 201):
            if not response.headers.get("content-type", "").startswith("application/json"):
                if not response.content:
                    return None
                raise KeyProviderError(f"KMS answered {what} without a JSON body")
            try:
                return response.json()
            except ValueError as exc:
                raise KeyProviderError(f"KMS answered {what} with invalid JSON") from exc
        message = self._remote_message(response)
        if status == 403:
            raise KeyAccessDeniedError(f"KMS denied {what} to user {self.user!r}: {message}")
        if status == 404:
            raise UnknownKeyError(f"KMS does not know {what}: {message}")
        raise KeyProviderError(f"KMS failed {what} with HTTP {status}: {message}")

    # -- KeyProvider -------------------------------------------------------------------------
    def metadata(self, name: str) -> dict[str, Any]:
        body = self._request("GET", f"key/{_segment(name)}/_metadata", what=f"metadata of key {name!r}")
        if not isinstance(body, dict) or not body:
            # Hadoop's KMS answers an unknown key with 200 and `{}`.
            raise UnknownKeyError(f"KMS does not know key {name!r}")
        return body

    def key_info(self, name: str) -> MasterKeyInfo:
        body = self.metadata(name)
        try:
            versions, bits, cipher = int(body["versions"]), int(body["length"]), str(body["cipher"])
        except (KeyError, TypeError, ValueError) as exc:
            raise KeyProviderError(f"KMS metadata of key {name!r} lacks versions/length/cipher") from exc
        if versions < 1:
            raise KeyProviderError(f"KMS key {name!r} has no versions")
        if not cipher.startswith("AES/"):
            raise KeyProviderError(f"KMS key {name!r} has cipher {cipher!r}; ORC needs AES")
        return MasterKeyInfo(name=name, version=versions - 1, bit_length=bits, cipher=cipher)

    def decrypt_local_key(self, name: str, version: int, encrypted_key: bytes) -> bytes:
        if len(encrypted_key) < 16:
            raise KeyProviderError(f"encrypted local key for {name!r} must be at least 16 bytes")
        version_name = f"{name}@{version}"
        # ORC sends the first 16 bytes flipped; the KMS flips them back (doc §5).
        payload = {
            "name": name,
            "iv": base64.b64encode(flip_bytes(encrypted_key[:16])).decode("ascii"),
            "material": base64.b64encode(encrypted_key).decode("ascii"),
        }
        body = self._request(
            "POST",
            f"keyversion/{_segment(version_name)}/_eek",
            params={"eek_op": "decrypt"},
            json=payload,
            what=f"decrypt with key version {version_name!r}",
        )
        try:
            local_key = b64decode_any(body["material"])
        except (KeyError, TypeError, ValueError, binascii.Error) as exc:
            raise KeyProviderError(
                f"KMS decrypt response for {version_name!r} has no valid material"
            ) from exc
        if len(local_key) != len(encrypted_key):
            raise KeyProviderError(
                f"KMS returned a {len(local_key)}-byte key for {version_name!r}, expected {len(encrypted_key)}"
            )
        return local_key

    # -- other KMS operations ------------------------------------------------------------------
    def create_key(self, name: str, bits: int = 256, description: str | None = None) -> dict[str, Any]:
        """Create a key on the KMS (needs the create right); the answer names version NAME@0."""
        return self._request(
            "POST",
            "keys",
            json={"name": name, "cipher": "AES/CTR/NoPadding", "length": bits, "description": description},
            what=f"create key {name!r}",
        )

    def roll_key(self, name: str) -> dict[str, Any]:
        """Roll a key over on the KMS (needs the management right); the answer names the new version."""
        return self._request("POST", f"key/{_segment(name)}", json={}, what=f"roll key {name!r}")

    def key_names(self) -> list[str]:
        body = self._request("GET", "keys/names", what="the key names")
        return list(body or [])

    def generate_encrypted_keys(self, name: str, count: int = 1) -> list[dict[str, Any]]:
        """Generate-EEK (not used by ORC): `count` fresh local keys, encrypted by the KMS."""
        return self._request(
            "GET",
            f"key/{_segment(name)}/_eek",
            params={"eek_op": "generate", "num_keys": count},
            what=f"generate EEK with key {name!r}",
        )

    def decrypt_eek(self, version_name: str, iv: bytes, encrypted: bytes) -> bytes:
        """The raw decrypt-EEK call, for an EEK from generate_encrypted_keys."""
        name = version_name.rpartition("@")[0]
        body = self._request(
            "POST",
            f"keyversion/{_segment(version_name)}/_eek",
            params={"eek_op": "decrypt"},
            json={
                "name": name,
                "iv": base64.b64encode(iv).decode(),
                "material": base64.b64encode(encrypted).decode(),
            },
            what=f"decrypt with key version {version_name!r}",
        )
        return b64decode_any(body["material"])
