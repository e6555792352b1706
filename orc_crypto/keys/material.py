"""Master-key records and the local-key formula shared by every keystore.

The formula is what Hadoop KMS's decrypt-EEK computes for ORC (doc §1, §5):
local key = AES-CTR(master material, initial counter block = E[0:16]) over E.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from watershed.orc_crypto.keys.base import KeyProviderError

DEFAULT_CIPHER = "AES/CTR/NoPadding"
#: Hadoop's createKey rejects uppercase; we also keep names path- and ORC-option-safe
#: (ORC splits `orc.encrypt` on `:` `;` `,`, and the KMS puts `@` between name and version).
KEY_NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,127}$")


@dataclass
class MasterKeyRecord:
    """One master key as a keystore or KMS holds it: metadata plus the material of every version."""

    name: str
    bit_length: int
    created_ms: int
    versions: list[bytes] = field(repr=False)
    cipher: str = DEFAULT_CIPHER
    description: str | None = None
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def current_version(self) -> int:
        return len(self.versions) - 1

    def material(self, version: int) -> bytes:
        if not 0 <= version < len(self.versions):
            raise KeyProviderError(
                f"key {self.name!r} has no version {version} (versions 0..{len(self.versions) - 1})"
            )
        return self.versions[version]

    def metadata(self) -> dict[str, object]:
        """The Hadoop KMS metadata object (doc §6.2); never contains material."""
        return {
            "name": self.name,
            "cipher": self.cipher,
            "length": self.bit_length,
            "description": self.description,
            "attributes": dict(self.attributes),
            "created": self.created_ms,
            "versions": len(self.versions),
        }


def check_key_name(name: str) -> str:
    if not KEY_NAME_PATTERN.match(name):
        raise KeyProviderError(
            f"invalid key name {name!r}: use lowercase letters, digits, '_', '.', '-' (max 128)"
        )
    return name


def split_version_name(version_name: str) -> tuple[str, int]:
    """`pii@3` -> ("pii", 3)."""
    name, sep, raw = version_name.rpartition("@")
    if not sep or not name or not raw.isdigit():
        raise KeyProviderError(f"invalid key version name {version_name!r}: expected NAME@N")
    return name, int(raw)


def aes_ctr(key: bytes, iv: bytes, data: bytes) -> bytes:
    """AES-CTR with a 128-bit big-endian counter starting at `iv` (the same keystream as Java's)."""
    if len(key) not in (16, 24, 32):
        raise KeyProviderError(f"AES key must be 16, 24 or 32 bytes, got {len(key)}")
    if len(iv) != 16:
        raise KeyProviderError(f"AES-CTR IV must be 16 bytes, got {len(iv)}")
    encryptor = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
    return encryptor.update(data) + encryptor.finalize()


def unwrap_local_key(master_material: bytes, encrypted_key: bytes) -> bytes:
    """The local key ORC gets back from decrypt-EEK for the stored bytes `encrypted_key`."""
    if len(encrypted_key) < 16:
        raise KeyProviderError(f"encrypted local key must be at least 16 bytes, got {len(encrypted_key)}")
    return aes_ctr(master_material, encrypted_key[:16], encrypted_key)


def flip_bytes(data: bytes) -> bytes:
    """XOR every byte with 0xFF: ORC's iv "mangling" undone by the KMS (doc §5)."""
    return bytes(b ^ 0xFF for b in data)
