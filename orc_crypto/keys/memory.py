"""An in-memory key provider (tests and keystore-less Python use), like ORC's InMemoryKeystore."""

from __future__ import annotations

from watershed.orc_crypto.ciphers import local_key_from_master
from watershed.orc_crypto.keys.base import KeyProviderError, MasterKeyInfo, UnknownKeyError


class InMemoryKeyProvider:
    """Master keys given as bytes; each `add` of an existing name adds a version."""

    def __init__(self, keys: dict[str, bytes] | None = None, bit_length: int = 256) -> None:
        self._versions: dict[str, list[bytes]] = {}
        self._bits: dict[str, int] = {}
        for name, material in (keys or {}).items():
            self.add(name, material, bit_length)

    def add(self, name: str, material: bytes, bit_length: int = 256) -> int:
        size = 16 if bit_length == 128 else 32
        # ORC's InMemoryKeystore zero-pads short material and truncates long material.
        padded = (bytes(material) + bytes(size))[:size]
        self._versions.setdefault(name, []).append(padded)
        self._bits[name] = bit_length
        return len(self._versions[name]) - 1

    def key_info(self, name: str) -> MasterKeyInfo:
        if name not in self._versions:
            raise UnknownKeyError(f"unknown key {name!r}")
        return MasterKeyInfo(name=name, version=len(self._versions[name]) - 1, bit_length=self._bits[name])

    def decrypt_local_key(self, name: str, version: int, encrypted_key: bytes) -> bytes:
        if name not in self._versions:
            raise UnknownKeyError(f"unknown key {name!r}")
        versions = self._versions[name]
        if not 0 <= version < len(versions):
            raise KeyProviderError(f"key {name!r} has no version {version}")
        if len(encrypted_key) < 16:
            raise KeyProviderError(f"encrypted local key for {name!r} is too short")
        return local_key_from_master(versions[version], encrypted_key)
