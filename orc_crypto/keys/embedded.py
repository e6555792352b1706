"""The embedded keystore: master keys in one local file, encrypted at rest.

File layout (JSON, mode 0600, replaced atomically on every change):
`{"format": "watershed-keystore", "version": 1, "kdf": {"name": "scrypt", "salt", "n", "r", "p"},
"nonce": ..., "ciphertext": ...}`; the ciphertext is AES-256-GCM, under the scrypt key of the
passphrase, of a JSON document holding every key's metadata and version material.
The header is bound to the ciphertext as associated data, so editing the KDF parameters
is detected like a wrong passphrase.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import tempfile
import time
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from pydantic_settings import BaseSettings, SettingsConfigDict

from orc_crypto.keys.base import KeyProviderError, MasterKeyInfo, UnknownKey
from orc_crypto.keys.material import (
    DEFAULT_CIPHER,
    MasterKeyRecord,
    check_key_name,
    unwrap_local_key,
)

FORMAT_NAME = "watershed-keystore"
FORMAT_VERSION = 1
SUPPORTED_BIT_LENGTHS = (128, 192, 256)


class KeystoreSettings(BaseSettings):
    """Where the keystore passphrase comes from: never from a command-line argument."""

    model_config = SettingsConfigDict(env_prefix="WATERSHED_", extra="ignore")

    #: the embedded keystore file used by `watershed kms` when --keystore is not given
    keystore_path: Path = Path("var/kms/keystore.json")
    keystore_passphrase: str | None = None
    keystore_passphrase_file: Path | None = None
    #: scrypt cost; 2**15 takes ~0.1 s and 32 MiB, enough to slow guessing without slowing the CLI
    keystore_scrypt_n: int = 2**15


class KeystoreError(KeyProviderError):
    """The keystore file is missing, unreadable, or the passphrase is wrong; the message names the file."""


def passphrase_from_environment(settings: KeystoreSettings | None = None) -> str:
    """WATERSHED_KEYSTORE_PASSPHRASE, else the file named by WATERSHED_KEYSTORE_PASSPHRASE_FILE."""
    settings = settings or KeystoreSettings()
    if settings.keystore_passphrase:
        return settings.keystore_passphrase
    if settings.keystore_passphrase_file is not None:
        path = settings.keystore_passphrase_file
        try:
            # A trailing newline from `echo pw > file` is not part of the passphrase.
            value = path.read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as exc:
            raise KeystoreError(f"cannot read passphrase file {path}: {exc.strerror}") from exc
        if not value:
            raise KeystoreError(f"passphrase file {path} is empty")
        return value
    raise KeystoreError(
        "no keystore passphrase: set WATERSHED_KEYSTORE_PASSPHRASE or WATERSHED_KEYSTORE_PASSPHRASE_FILE"
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def _derive(passphrase: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(passphrase.encode("utf-8"))


class EmbeddedKeystore:
    """A KeyProvider and KMS backend over the encrypted keystore file.

    Every mutation re-encrypts the whole file under a fresh nonce and renames a temp file
    over the old one, so a crash leaves either the old or the new keystore, never a mix.
    """

    def __init__(self, path: Path, passphrase: str, *, scrypt_n: int | None = None) -> None:
        self.path = Path(path)
        self._passphrase = passphrase
        self._scrypt_n = scrypt_n or KeystoreSettings().keystore_scrypt_n
        self._keys: dict[str, MasterKeyRecord] = {}
        if self.path.exists():
            self._load()

    # -- construction -----------------------------------------------------------------
    @classmethod
    def create(cls, path: Path, passphrase: str, *, scrypt_n: int | None = None) -> EmbeddedKeystore:
        """A new, empty keystore file; refuses to overwrite an existing one."""
        path = Path(path)
        if path.exists():
            raise KeystoreError(f"keystore {path} already exists")
        store = cls(path, passphrase, scrypt_n=scrypt_n)
        store._save()
        return store

    @classmethod
    def open(cls, path: Path, passphrase: str) -> EmbeddedKeystore:
        path = Path(path)
        if not path.is_file():
            raise KeystoreError(f"keystore {path} does not exist")
        return cls(path, passphrase)

    # -- file I/O -----------------------------------------------------------------------
    def _load(self) -> None:
        try:
            envelope = json.loads(self.path.read_text(encoding="utf-8"))
            if envelope.get("format") != FORMAT_NAME:
                raise KeystoreError(f"{self.path} is not a Watershed keystore")
            if envelope.get("version") != FORMAT_VERSION:
                raise KeystoreError(
                    f"keystore {self.path} has unsupported format version {envelope.get('version')!r}"
                )
            kdf = envelope["kdf"]
            if kdf.get("name") != "scrypt":
                raise KeystoreError(f"keystore {self.path}: unsupported KDF {kdf.get('name')!r}")
            salt, nonce = _unb64(kdf["salt"]), _unb64(envelope["nonce"])
            ciphertext = _unb64(envelope["ciphertext"])
            n, r, p = int(kdf["n"]), int(kdf["r"]), int(kdf["p"])
        except KeystoreError:
            raise
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise KeystoreError(f"cannot read keystore {self.path}: {exc}") from exc
        key = _derive(self._passphrase, salt, n, r, p)
        try:
            plaintext = AESGCM(key).decrypt(nonce, ciphertext, self._header_aad(envelope))
        except InvalidTag:
            raise KeystoreError(
                f"cannot decrypt keystore {self.path}: wrong passphrase or the file was modified"
            ) from None
        self._scrypt_n = n
        body = json.loads(plaintext)
        self._keys = {
            name: MasterKeyRecord(
                name=name,
                cipher=entry["cipher"],
                bit_length=int(entry["bit_length"]),
                created_ms=int(entry["created_ms"]),
                description=entry.get("description"),
                attributes=dict(entry.get("attributes") or {}),
                versions=[_unb64(m) for m in entry["versions"]],
            )
            for name, entry in body["keys"].items()
        }

    @staticmethod
    def _header_aad(envelope: dict) -> bytes:
        header = {"format": envelope["format"], "version": envelope["version"], "kdf": envelope["kdf"]}
        return json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")

    def _save(self) -> None:
        salt, nonce = secrets.token_bytes(16), secrets.token_bytes(12)
        envelope: dict = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "kdf": {"name": "scrypt", "salt": _b64(salt), "n": self._scrypt_n, "r": 8, "p": 1},
        }
        body = {
            "keys": {
                rec.name: {
                    "cipher": rec.cipher,
                    "bit_length": rec.bit_length,
                    "created_ms": rec.created_ms,
                    "description": rec.description,
                    "attributes": rec.attributes,
                    "versions": [_b64(m) for m in rec.versions],
                }
                for rec in self._keys.values()
            }
        }
        key = _derive(self._passphrase, salt, self._scrypt_n, 8, 1)
        ciphertext = AESGCM(key).encrypt(nonce, json.dumps(body).encode("utf-8"), self._header_aad(envelope))
        envelope["nonce"] = _b64(nonce)
        envelope["ciphertext"] = _b64(ciphertext)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(envelope, handle)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp_name, self.path)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise

    # -- key management -------------------------------------------------------------------
    def create_key(
        self,
        name: str,
        *,
        bits: int = 256,
        description: str | None = None,
        attributes: dict[str, str] | None = None,
        material: bytes | None = None,
        cipher: str = DEFAULT_CIPHER,
    ) -> MasterKeyRecord:
        check_key_name(name)
        if name in self._keys:
            raise KeyProviderError(f"key {name!r} already exists in {self.path}")
        if bits not in SUPPORTED_BIT_LENGTHS:
            raise KeyProviderError(f"key {name!r}: bit length must be one of {SUPPORTED_BIT_LENGTHS}")
        if not cipher.startswith("AES/"):
            raise KeyProviderError(f"key {name!r}: cipher must be AES/..., got {cipher!r}")
        if material is None:
            material = secrets.token_bytes(bits // 8)
        elif len(material) * 8 != bits:
            raise KeyProviderError(f"key {name!r}: material is {len(material) * 8} bits, expected {bits}")
        record = MasterKeyRecord(
            name=name,
            cipher=cipher,
            bit_length=bits,
            created_ms=int(time.time() * 1000),
            description=description,
            attributes=dict(attributes or {}),
            versions=[material],
        )
        self._keys[name] = record
        self._save()
        return record

    def roll_key(self, name: str, material: bytes | None = None) -> MasterKeyRecord:
        """Add version `name@versions` with fresh material; writers switch to it, old files still decrypt."""
        record = self.get(name)
        if material is None:
            material = secrets.token_bytes(record.bit_length // 8)
        elif len(material) * 8 != record.bit_length:
            raise KeyProviderError(
                f"key {name!r}: material is {len(material) * 8} bits, expected {record.bit_length}"
            )
        record.versions.append(material)
        self._save()
        return record

    def delete_key(self, name: str) -> None:
        self.get(name)
        del self._keys[name]
        self._save()

    def names(self) -> list[str]:
        return sorted(self._keys)

    def get(self, name: str) -> MasterKeyRecord:
        try:
            return self._keys[name]
        except KeyError:
            raise UnknownKey(f"unknown key {name!r} in keystore {self.path}") from None

    # -- KeyProvider ------------------------------------------------------------------------
    def key_info(self, name: str) -> MasterKeyInfo:
        record = self.get(name)
        return MasterKeyInfo(
            name=name, version=record.current_version, bit_length=record.bit_length, cipher=record.cipher
        )

    def decrypt_local_key(self, name: str, version: int, encrypted_key: bytes) -> bytes:
        return unwrap_local_key(self.get(name).material(version), encrypted_key)
