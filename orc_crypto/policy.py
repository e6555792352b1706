"""The encryption policy DDL generation needs: sensitivity level -> master key name and mask.

policy.yaml:

    key_provider_path: kms://http@127.0.0.1:9600/kms   # optional; `--kms-uri` overrides it
    levels:                 # most sensitive first: a column with several tags takes the first level listed
      - name: pii           # a tag name as it appears in tags.json
        key: pii            # the KMS master key name
        mask: nullify       # nullify | sha256 | redact[,params...] in ORC's orc.mask syntax: back-quote
                            # parameters with other than letters, digits and _: redact,`Xx9`,`_`,`0:3`
      - name: financial
        key: fin
        mask: redact

Tags that are not a level (for example `public`) do not encrypt anything.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from watershed.graph.errors import WatershedError

BUILTIN_MASKS = ("nullify", "redact", "sha256")


class PolicyError(WatershedError, ValueError):
    """The policy or tags file is unreadable or inconsistent; the message names the file and entry."""


class LevelPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    key: str
    mask: str = "nullify"

    @field_validator("key")
    @classmethod
    def _key_name(cls, value: str) -> str:
        # the names the key providers accept (the DDL back-quotes them for orc.encrypt)
        from watershed.orc_crypto.keys.base import KeyProviderError
        from watershed.orc_crypto.keys.material import check_key_name

        try:
            return check_key_name(value)
        except KeyProviderError as exc:
            raise ValueError(str(exc)) from exc

    @field_validator("mask")
    @classmethod
    def _mask(cls, value: str) -> str:
        # Checked as ORC will read it, so a policy cannot produce DDL that Spark rejects.
        from watershed.orc_crypto.masking.values import MaskError, check_mask
        from watershed.orc_crypto.options import OptionError, parse_mask

        try:
            check_mask(parse_mask(value))
        except (OptionError, MaskError) as exc:
            raise ValueError(f"invalid mask {value!r}: {exc}") from exc
        return value.strip()


class EncryptionPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key_provider_path: str | None = None
    levels: list[LevelPolicy] = Field(default_factory=list)

    @field_validator("levels")
    @classmethod
    def _unique_levels(cls, levels: list[LevelPolicy]) -> list[LevelPolicy]:
        seen: set[str] = set()
        for level in levels:
            if level.name in seen:
                raise ValueError(f"level {level.name!r} is listed twice")
            seen.add(level.name)
        return levels

    def level_for(self, tags: list[str]) -> LevelPolicy | None:
        """The most sensitive level among `tags` (the first one in policy order), or None."""
        tagged = set(tags)
        return next((level for level in self.levels if level.name in tagged), None)


def load_policy(path: Path) -> EncryptionPolicy:
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise PolicyError(f"cannot read policy file {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise PolicyError(f"policy file {path} is not valid YAML: {exc}") from exc
    try:
        return EncryptionPolicy.model_validate(raw)
    except ValidationError as exc:
        raise PolicyError(f"policy file {path}: {exc}") from exc
