"""Read master keys from a Hadoop JavaKeyStoreProvider (JCEKS) file (doc §7).

Aliases `name@N` hold version material; alias `name` holds the key's metadata as a
Java-serialized KeyMetadata whose block data is a 4-byte length plus JSON. pyjks cannot
turn that object into a key, so we decrypt its sealed bytes ourselves and pull out the JSON.
The store (and every entry) password is HADOOP_KEYSTORE_PASSWORD, else `none`.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import jks
from jks import rfc2898, sun_crypto
from pyasn1.codec.ber import decoder

from watershed.orc_crypto.keys.base import KeyProviderError, MasterKeyInfo, UnknownKeyError
from watershed.orc_crypto.keys.material import DEFAULT_CIPHER, MasterKeyRecord, unwrap_local_key

PASSWORD_ENV = "HADOOP_KEYSTORE_PASSWORD"
DEFAULT_PASSWORD = "none"


class JceksError(KeyProviderError):
    """The JCEKS file is unreadable, has the wrong password, or an entry is malformed."""


def keystore_password() -> str:
    return os.environ.get(PASSWORD_ENV) or DEFAULT_PASSWORD


def _unseal(entry, password: str, path: Path) -> bytes:
    """The plaintext of a JCEKS SealedObject (PBEWithMD5AndTripleDES)."""
    sealed = entry._encrypted  # pyjks keeps the SealedObject here until decrypt()
    if sealed.sealAlg != "PBEWithMD5AndTripleDES" or not sealed.encodedParams:
        raise JceksError(f"{path}: entry {entry.alias!r} is sealed with unsupported {sealed.sealAlg!r}")
    params = decoder.decode(bytes(sealed.encodedParams), asn1Spec=rfc2898.PBEParameter())[0]
    try:
        return sun_crypto.jce_pbe_decrypt(
            bytes(sealed.encryptedContent),
            password,
            params["salt"].asOctets(),
            int(params["iterationCount"]),
        )
    except sun_crypto.BadPaddingException:
        raise JceksError(f"{path}: cannot decrypt entry {entry.alias!r}: wrong keystore password") from None


def _metadata_json(serialized: bytes, alias: str, path: Path) -> dict:
    """Find the length-prefixed JSON inside the serialized KeyMetadata (its custom writeObject data)."""
    start = serialized.find(b"{")
    while start >= 4:
        (length,) = struct.unpack(">i", serialized[start - 4 : start])
        if 0 < length <= len(serialized) - start:
            try:
                value = json.loads(serialized[start : start + length].decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                value = None
            if isinstance(value, dict):
                return value
        start = serialized.find(b"{", start + 1)
    raise JceksError(f"{path}: metadata entry {alias!r} holds no readable key metadata")


class JceksKeystore:
    """Read-only KeyProvider and KMS backend over a Hadoop JCEKS keystore."""

    def __init__(self, path: Path, password: str | None = None) -> None:
        self.path = Path(path)
        password = password if password is not None else keystore_password()
        try:
            store = jks.KeyStore.load(str(self.path), password, try_decrypt_keys=False)
        except FileNotFoundError:
            raise JceksError(f"JCEKS keystore {self.path} does not exist") from None
        except jks.util.KeystoreSignatureException:
            raise JceksError(f"JCEKS keystore {self.path}: wrong password (integrity check failed)") from None
        except (jks.util.BadKeystoreFormatException, OSError, ValueError) as exc:
            raise JceksError(f"cannot read JCEKS keystore {self.path}: {exc}") from exc
        if store.store_type != "jceks":
            raise JceksError(f"{self.path} is a {store.store_type} keystore, expected jceks")
        self._keys = self._read_keys(store.secret_keys, password)

    def _read_keys(self, entries: dict, password: str) -> dict[str, MasterKeyRecord]:
        materials: dict[str, dict[int, bytes]] = {}
        metadata: dict[str, dict] = {}
        for alias, entry in entries.items():
            name, at, version = alias.rpartition("@")
            if at and version.isdigit():
                try:
                    entry.decrypt(password)
                except jks.util.DecryptionFailureException:
                    raise JceksError(f"{self.path}: cannot decrypt {alias!r}: wrong key password") from None
                materials.setdefault(name, {})[int(version)] = bytes(entry.key)
            else:
                metadata[alias] = _metadata_json(_unseal(entry, password, self.path), alias, self.path)
        keys: dict[str, MasterKeyRecord] = {}
        for name, meta in metadata.items():
            versions = int(meta.get("versions", 0))
            found = materials.get(name, {})
            missing = [v for v in range(versions) if v not in found]
            if missing:
                raise JceksError(f"{self.path}: key {name!r} lacks material for versions {missing}")
            keys[name] = MasterKeyRecord(
                name=name,
                cipher=meta.get("cipher") or DEFAULT_CIPHER,
                bit_length=int(meta.get("bitLength") or len(found[0]) * 8),
                created_ms=int(meta.get("created") or 0),
                description=meta.get("description"),
                attributes=dict(meta.get("attributes") or {}),
                versions=[found[v] for v in range(versions)],
            )
        return keys

    # -- KMS backend --------------------------------------------------------------------------
    def names(self) -> list[str]:
        return sorted(self._keys)

    def get(self, name: str) -> MasterKeyRecord:
        try:
            return self._keys[name]
        except KeyError:
            raise UnknownKeyError(f"unknown key {name!r} in JCEKS keystore {self.path}") from None

    def _read_only(self, *args: object, **kwargs: object):
        raise KeyProviderError(f"JCEKS keystore {self.path} is read-only here; manage it with `hadoop key`")

    create_key = _read_only
    roll_key = _read_only
    delete_key = _read_only

    # -- KeyProvider --------------------------------------------------------------------------
    def key_info(self, name: str) -> MasterKeyInfo:
        record = self.get(name)
        return MasterKeyInfo(
            name=name, version=record.current_version, bit_length=record.bit_length, cipher=record.cipher
        )

    def decrypt_local_key(self, name: str, version: int, encrypted_key: bytes) -> bytes:
        return unwrap_local_key(self.get(name).material(version), encrypted_key)
