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
import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from watershed.orc_crypto.keys.base import KeyProviderError, MasterKeyInfo, UnknownKeyError
from watershed.orc_crypto.keys.material import (
    DEFAULT_CIPHER,
    MasterKeyRecord,
    check_key_name,
    unwrap_local_key,
)
from watershed.orc_crypto.keys.private_file import write_private
from watershed.orc_crypto.keys.tokens import default_kms_directory

FORMAT_NAME = "watershed-keystore"
FORMAT_VERSION = 1
SUPPORTED_BIT_LENGTHS = (128, 192, 256)


class KeystoreSettings(BaseSettings):
    """Where the keystore passphrase comes from: never from a command-line argument."""

    model_config = SettingsConfigDict(env_prefix="WATERSHED_", extra="ignore")

    #: the embedded keystore file used by `watershed kms` when --keystore is not given
    keystore_path: Path = Field(default_factory=lambda: default_kms_directory() / "keystore.json")
    keystore_passphrase: str | None = None
    keystore_passphrase_file: Path | None = None
    #: scrypt cost; 2**15 takes ~0.1 s and 32 MiB, enough to slow guessing without slowing the CLI
    keystore_scrypt_n: int = Field(default=2**15, ge=2)


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


_DERIVED: dict[tuple[bytes, bytes, int, int, int], bytes] = {}
_DERIVED_LOCK = threading.Lock()


def _derive(passphrase: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    """scrypt costs ~0.1 s: derived keys are cached per (passphrase digest, salt, parameters)."""
    # The cache key holds a digest, not the passphrase, so the dict never keeps it in clear.
    cache_key = (hashlib.sha256(passphrase.encode("utf-8")).digest(), salt, n, r, p)
    with _DERIVED_LOCK:
        cached = _DERIVED.get(cache_key)
    if cached is None:
        cached = Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(passphrase.encode("utf-8"))
        with _DERIVED_LOCK:
            _DERIVED[cache_key] = cached
    return cached


def _lock_path(path: Path) -> Path:
    # A separate lock file: the keystore itself is replaced by rename, so a lock on it would be
    # held on an inode that is no longer the keystore.
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def keystore_lock(path: Path, *, shared: bool = False) -> Iterator[None]:
    """The keystore's inter-process lock (flock on `<keystore>.lock`), exclusive unless `shared`."""
    lock_file = _lock_path(Path(path))
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the flock


def backup_keystore(src: Path, dst: Path) -> None:
    """Copy the keystore `src` to `dst` under both files' locks, atomically.

    No writer can change `src` during the copy, and a running server or CLI that uses `dst`
    as its keystore sees either the old or the copied file; so `backup_keystore(backup, live)`
    is also the restore. The copy stays encrypted under the same passphrase.
    """
    src, dst = Path(src), Path(dst)
    first, second = sorted([src, dst], key=lambda p: str(p.resolve()))
    with keystore_lock(first), keystore_lock(second):
        try:
            data = src.read_bytes()
        except OSError as exc:
            raise KeystoreError(f"cannot read keystore {src}: {exc.strerror}") from exc
        if not data:
            raise KeystoreError(f"keystore {src} is empty")
        write_private(dst, data)


class EmbeddedKeystore:
    """A KeyProvider and KMS backend over the encrypted keystore file.

    Several processes may use one file at once (the KMS server and `watershed kms` commands):
    every change is a read-modify-write under the keystore's exclusive file lock that re-reads
    the current file first, so no writer's key is lost, and reads reload the file when it
    changed on disk. A write replaces the file by rename, so a crash leaves the old or the new
    keystore, never a mix.
    """

    def __init__(self, path: Path, passphrase: str, *, scrypt_n: int | None = None) -> None:
        self.path = Path(path)
        self._passphrase = passphrase
        self._scrypt_n = scrypt_n or KeystoreSettings().keystore_scrypt_n
        self._keys: dict[str, MasterKeyRecord] = {}
        #: (salt, n, r, p) of the file; kept across rewrites so the derived key stays cached
        self._kdf: tuple[bytes, int, int, int] | None = None
        #: (device, inode, size, mtime_ns) of the file last read or written; None before that
        self._signature: tuple[int, int, int, int] | None = None
        self._mutex = threading.RLock()
        if self.path.exists():
            self._refresh()

    # -- construction -----------------------------------------------------------------
    @classmethod
    def create(cls, path: Path, passphrase: str, *, scrypt_n: int | None = None) -> EmbeddedKeystore:
        """A new, empty keystore file; refuses to overwrite an existing one."""
        path = Path(path)
        with keystore_lock(path):
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

    @classmethod
    def open_or_create(cls, path: Path, passphrase: str, *, scrypt_n: int | None = None) -> EmbeddedKeystore:
        """Open the keystore, creating it empty if missing (under the lock: two creators make one file)."""
        path = Path(path)
        with keystore_lock(path):
            store = cls(path, passphrase, scrypt_n=scrypt_n)
            if store._signature is None:
                store._save()
        return store

    # -- file I/O -----------------------------------------------------------------------
    @staticmethod
    def _file_signature(stat: os.stat_result) -> tuple[int, int, int, int]:
        return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def _refresh(self) -> None:
        """Reload the file if another process (or handle) replaced it since we last saw it."""
        with self._mutex:
            try:
                current = self._file_signature(self.path.stat())
            except FileNotFoundError:
                if self._signature is None:
                    return
                raise KeystoreError(f"keystore {self.path} disappeared") from None
            except OSError as exc:
                raise KeystoreError(f"cannot read keystore {self.path}: {exc.strerror}") from exc
            if current != self._signature:
                self._load()

    def _load(self) -> None:
        try:
            # The signature comes from the opened file, so it matches exactly the bytes parsed.
            with self.path.open("rb") as handle:
                signature = self._file_signature(os.fstat(handle.fileno()))
                envelope = json.loads(handle.read())
            if not isinstance(envelope, dict) or envelope.get("format") != FORMAT_NAME:
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
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise KeystoreError(f"cannot read keystore {self.path}: {exc}") from exc
        key = _derive(self._passphrase, salt, n, r, p)
        try:
            plaintext = AESGCM(key).decrypt(nonce, ciphertext, self._header_aad(envelope))
        except InvalidTag:
            raise KeystoreError(
                f"cannot decrypt keystore {self.path}: wrong passphrase or the file was modified"
            ) from None
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
        self._scrypt_n = n
        self._kdf = (salt, n, r, p)
        self._signature = signature

    @staticmethod
    def _header_aad(envelope: dict) -> bytes:
        header = {"format": envelope["format"], "version": envelope["version"], "kdf": envelope["kdf"]}
        return json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")

    def _save(self) -> None:
        """Write the in-memory keys; callers hold the file lock and have just re-read the file."""
        if self._kdf is None:
            self._kdf = (secrets.token_bytes(16), self._scrypt_n, 8, 1)
        salt, n, r, p = self._kdf
        # A fresh random 96-bit nonce per write under the same derived key (GCM's limit is 2^32 writes).
        nonce = secrets.token_bytes(12)
        envelope: dict = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "kdf": {"name": "scrypt", "salt": _b64(salt), "n": n, "r": r, "p": p},
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
        key = _derive(self._passphrase, salt, n, r, p)
        ciphertext = AESGCM(key).encrypt(nonce, json.dumps(body).encode("utf-8"), self._header_aad(envelope))
        envelope["nonce"] = _b64(nonce)
        envelope["ciphertext"] = _b64(ciphertext)
        write_private(self.path, json.dumps(envelope).encode("utf-8"))
        self._signature = self._file_signature(self.path.stat())

    @contextlib.contextmanager
    def _changing(self) -> Iterator[None]:
        """Read-modify-write: lock the file, re-read it, let the caller change `_keys`, save."""
        with self._mutex, keystore_lock(self.path):
            self._refresh()
            snapshot = dict(self._keys)
            try:
                yield
                self._save()
            except BaseException:
                # A failed change leaves memory as the file is; the next read reloads it anyway.
                self._keys = snapshot
                self._signature = None
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
        if bits not in SUPPORTED_BIT_LENGTHS:
            raise KeyProviderError(f"key {name!r}: bit length must be one of {SUPPORTED_BIT_LENGTHS}")
        if not cipher.startswith("AES/"):
            raise KeyProviderError(f"key {name!r}: cipher must be AES/..., got {cipher!r}")
        if material is None:
            material = secrets.token_bytes(bits // 8)
        elif len(material) * 8 != bits:
            raise KeyProviderError(f"key {name!r}: material is {len(material) * 8} bits, expected {bits}")
        with self._changing():
            if name in self._keys:
                raise KeyProviderError(f"key {name!r} already exists in {self.path}")
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
        return record

    def roll_key(self, name: str, material: bytes | None = None) -> MasterKeyRecord:
        """Add version `name@versions` with fresh material; writers switch to it, old files still decrypt."""
        with self._changing():
            old = self._get_loaded(name)
            if material is None:
                material = secrets.token_bytes(old.bit_length // 8)
            elif len(material) * 8 != old.bit_length:
                raise KeyProviderError(
                    f"key {name!r}: material is {len(material) * 8} bits, expected {old.bit_length}"
                )
            # A new record object: one handed out earlier keeps describing what it described.
            record = dataclasses.replace(old, versions=[*old.versions, material])
            self._keys[name] = record
        return record

    def delete_key(self, name: str) -> None:
        with self._changing():
            self._get_loaded(name)
            del self._keys[name]

    def names(self) -> list[str]:
        self._refresh()
        return sorted(self._keys)

    def get(self, name: str) -> MasterKeyRecord:
        self._refresh()
        return self._get_loaded(name)

    def _get_loaded(self, name: str) -> MasterKeyRecord:
        try:
            return self._keys[name]
        except KeyError:
            raise UnknownKeyError(f"unknown key {name!r} in keystore {self.path}") from None

    # -- KeyProvider ------------------------------------------------------------------------
    def key_info(self, name: str) -> MasterKeyInfo:
        record = self.get(name)
        return MasterKeyInfo(
            name=name, version=record.current_version, bit_length=record.bit_length, cipher=record.cipher
        )

    def decrypt_local_key(self, name: str, version: int, encrypted_key: bytes) -> bytes:
        return unwrap_local_key(self.get(name).material(version), encrypted_key)
