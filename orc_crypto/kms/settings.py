"""The KMS server's settings (env WATERSHED_KMS_*), apart from the server so that reading them
needs neither FastAPI nor uvicorn (the `kms` extra): `services status` reads them everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from watershed.orc_crypto.keys.tokens import default_kms_directory

DEFAULT_HOST = "127.0.0.1"
#: the largest request body the KMS reads (its requests are a few hundred bytes)
DEFAULT_MAX_BODY_BYTES = 64 * 1024


class KmsSettings(BaseSettings):
    """Knobs of `watershed kms serve` (env WATERSHED_KMS_HOST, WATERSHED_KMS_PORT, ...)."""

    model_config = SettingsConfigDict(env_prefix="WATERSHED_", extra="ignore")

    kms_host: str = DEFAULT_HOST
    kms_port: int = Field(default=9600, ge=1, le=65535)
    kms_acl_file: Path | None = None
    kms_audit_log: Path | None = Field(default_factory=lambda: default_kms_directory() / "audit.log")
    #: "token" (delegation tokens only) or "pseudo" (a claimed user.name: tests of Spark's client only)
    kms_auth: Literal["token", "pseudo"] = "token"
    #: the server secret that signs delegation tokens (generated on first start, mode 0600)
    kms_secret_file: Path = Field(default_factory=lambda: default_kms_directory() / "kms.secret")
    #: the owner's token file (Hadoop token storage, mode 0600), rewritten on every start
    kms_token_file: Path = Field(default_factory=lambda: default_kms_directory() / "kms.token")
    #: serve key material over REST (_currentversion, keyversion/<v>, _versions); ORC never needs it
    kms_allow_material_read: bool = False
    kms_max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, ge=1)
