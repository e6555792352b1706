"""Key ACLs in the spirit of Hadoop KMS: which users may do which operation on which key.

ACL file (YAML or JSON):

    admins: [ops]            # every operation on every key, plus create/list
    list: ["*"]              # who may list key names (GET keys/names)
    keys:
      pii:
        metadata: ["*"]      # GET _metadata, keys/metadata
        decrypt_eek: [alice] # POST _eek?eek_op=decrypt   (what ORC readers and writers need)
        generate_eek: [alice]
        read: []             # key versions with their material (_currentversion, keyversion, _versions)
        management: [ops]    # roll over, delete

`"*"` matches every user. A key that is not listed under `keys` is denied to everyone except
admins (default deny), and so is an operation a key does not list.
"""

from __future__ import annotations

import threading
from enum import StrEnum
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from watershed.graph.errors import WatershedError

WILDCARD = "*"


class KeyOp(StrEnum):
    METADATA = "metadata"
    DECRYPT_EEK = "decrypt_eek"
    GENERATE_EEK = "generate_eek"
    READ = "read"
    MANAGEMENT = "management"


class KeyAcl(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metadata: list[str] = Field(default_factory=list)
    decrypt_eek: list[str] = Field(default_factory=list)
    generate_eek: list[str] = Field(default_factory=list)
    read: list[str] = Field(default_factory=list)
    management: list[str] = Field(default_factory=list)

    def users(self, op: KeyOp) -> list[str]:
        return getattr(self, op.value)


class AclConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    admins: list[str] = Field(default_factory=list)
    #: `list` in the file: who may list key names
    listers: list[str] = Field(default_factory=list, alias="list")
    keys: dict[str, KeyAcl] = Field(default_factory=dict)


class AclError(WatershedError, ValueError):
    """The ACL file is unreadable or malformed; the message names the file."""


def _matches(users: list[str], user: str) -> bool:
    return WILDCARD in users or user in users


class KeyAcls:
    """Thread-safe, replaceable ACLs (a test or an operator may swap them while the server runs)."""

    def __init__(self, config: AclConfig) -> None:
        self._config = config
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path) -> KeyAcls:
        return cls(load_acl_file(path))

    @classmethod
    def owner_only(cls, user: str) -> KeyAcls:
        """The default without an ACL file: only the user who runs the server, with every right."""
        return cls(AclConfig(admins=[user], listers=[user]))

    @property
    def config(self) -> AclConfig:
        with self._lock:
            return self._config

    def replace(self, config: AclConfig) -> None:
        with self._lock:
            self._config = config

    def allows_key(self, user: str, op: KeyOp, key: str) -> bool:
        config = self.config
        if _matches(config.admins, user):
            return True
        acl = config.keys.get(key)
        return acl is not None and _matches(acl.users(op), user)

    def allows_list(self, user: str) -> bool:
        config = self.config
        return _matches(config.admins, user) or _matches(config.listers, user)

    def allows_create(self, user: str) -> bool:
        return _matches(self.config.admins, user)


def load_acl_file(path: Path) -> AclConfig:
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise AclError(f"cannot read ACL file {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise AclError(f"ACL file {path} is not valid YAML/JSON: {exc}") from exc
    try:
        return AclConfig.model_validate(raw)
    except ValidationError as exc:
        raise AclError(f"ACL file {path}: {exc}") from exc
