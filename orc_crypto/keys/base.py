"""The key-provider interface that the ORC writer and reader use.

ORC never sees master key material through this interface: a provider only
describes a master key and turns the random bytes stored in a file (the
"encrypted local key") into the local key, the way Hadoop KMS's decrypt-EEK
does (see ../shared/docs/orc-encryption.md §1 and §5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from watershed.graph.errors import WatershedError


class KeyProviderError(WatershedError):
    """A key could not be described or unwrapped; the message names the key."""


class KeyAccessDeniedError(KeyProviderError):
    """The provider refused access to the key (for example a KMS 403)."""


class UnknownKeyError(KeyProviderError):
    """The provider has no key of that name."""


@dataclass(frozen=True)
class MasterKeyInfo:
    name: str
    #: latest version number: a writer uses `name@version`
    version: int
    #: key length in bits (128 -> AES_CTR_128, anything else -> AES_CTR_256)
    bit_length: int
    cipher: str = "AES/CTR/NoPadding"

    @property
    def key_bytes(self) -> int:
        return 16 if self.bit_length == 128 else 32


@runtime_checkable
class KeyProvider(Protocol):
    def key_info(self, name: str) -> MasterKeyInfo:
        """Metadata of the master key `name` (raises UnknownKeyError)."""
        ...

    def decrypt_local_key(self, name: str, version: int, encrypted_key: bytes) -> bytes:
        """Local key = AES-CTR(master `name@version`, iv=encrypted_key[:16]) over encrypted_key."""
        ...
