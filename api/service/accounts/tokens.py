"""API tokens `wst_<id>_<secret>`: the id finds the stored record, the secret is only ever kept as a salted hash.

The secret is 256 random bits, so a fast hash would do; scrypt is used anyway
(a stolen graph dump should not make tokens cheap to test). Verifying costs one
scrypt per request, so a small in-process cache remembers which (token id,
stored hash, presented secret) triples matched. The stored hash comes from the
token's row, which an API process reuses only while no user or token has
changed (accounts.store), so a revoked token fails at its next request.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from functools import lru_cache

from watershed.graph.errors import WatershedError

PREFIX = "wst"
# ~16 MiB and a few tens of ms per hash; tokens are high-entropy, this only slows offline guessing.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1


class MalformedTokenError(WatershedError, ValueError):
    """A presented token is not of the form wst_<id>_<secret> (the message never repeats it)."""


@dataclass(frozen=True)
class NewToken:
    id: str
    secret: str
    salt: str
    hash: str

    @property
    def text(self) -> str:
        return f"{PREFIX}_{self.id}_{self.secret}"


def hash_secret(secret: str, salt: str) -> str:
    return hashlib.scrypt(
        secret.encode(), salt=bytes.fromhex(salt), n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32
    ).hex()


def new_token() -> NewToken:
    token_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    salt = secrets.token_hex(16)
    return NewToken(token_id, secret, salt, hash_secret(secret, salt))


def parse(text: str) -> tuple[str, str]:
    """(id, secret) of a presented token."""
    prefix, _, rest = text.partition("_")
    token_id, _, secret = rest.partition("_")
    if prefix != PREFIX or len(token_id) != 16 or not secret:
        raise MalformedTokenError("not a Watershed API token (expected wst_<id>_<secret>)")
    try:
        int(token_id, 16)
    except ValueError:
        raise MalformedTokenError("not a Watershed API token (expected wst_<id>_<secret>)") from None
    return token_id, secret


@lru_cache(maxsize=4096)
def _matches(token_id: str, stored_hash: str, salt: str, presented_digest: str, secret: str) -> bool:
    return secrets.compare_digest(hash_secret(secret, salt), stored_hash)


def verify(token_id: str, secret: str, salt: str, stored_hash: str) -> bool:
    """Constant-time check of a presented secret against the stored salted hash."""
    digest = hashlib.sha256(secret.encode()).hexdigest()
    # The cache key holds the secret itself only inside this process's memory, next to the
    # request that carried it; it is never logged or stored.
    return _matches(token_id, stored_hash, salt, digest, secret)


def session_secret() -> str:
    return secrets.token_urlsafe(32)


def session_hash(secret: str) -> str:
    """Sessions are looked up by this hash (a 256-bit random secret needs no salt)."""
    return hashlib.sha256(secret.encode()).hexdigest()
