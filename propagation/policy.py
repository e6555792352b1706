"""The tag policy: which tags exist and how SQL transformations change them.

Loaded from YAML and validated with pydantic; an invalid file is an error
naming the file and the bad key. Example:

    sensitivity:
      pii:
        levels: [L1, L2, L3, L4]        # lowest to highest
        pseudonymised: L1               # what hashing downgrades to (default: the lowest level)
        types_key: pii_type
        types: [ssn, email, phone, id_card]
        enumerable: [ssn, phone, id_card]   # types a plain hash does not hide (default below)
    business:
      app:
        columns: [app, app_name, app_id]
        values: [douyin, toutiao, xigua]
        value_map: {app_id: {"1128": douyin, "13": toutiao}}
    functions: {sum: drop, my_mask_udf: drop}   # merged over the defaults
    weak_references: none                          # none | business
    conditional_value: keep                        # an effect: keep | drop | downgrade:<level>
    keyed_hashes: [hmac]                           # keyed hashes (at the gateway: keyed by a secret function)
    secret_functions: [vault_salt]                 # `sha2(concat(vault_salt(), x))` is keyed
    seeds:
      - {pattern: "*ssn*", tags: {pii: L4, pii_type: ssn}}
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from watershed.graph import ids
from watershed.graph.errors import PolicyError, WatershedError
from watershed.graph.lineage import OPENLINEAGE_MASKING
from watershed.graph.protection import ProtectionPolicy

KEEP_FUNCTIONS = [
    "cast",
    "trim",
    "ltrim",
    "rtrim",
    "upper",
    "lower",
    "substr",
    "concat",
    "concat_ws",
    "coalesce",
    "nvl",
    "min",
    "max",
    "first",
    "last",
    "first_value",
    "last_value",
    "collect_set",
    "collect_list",
    "get_json_object",
    "json_tuple",
    "explode",
    "posexplode",
    "lpad",
    "rpad",
    "reverse",
    "regexp_replace",
    "regexp_extract",
    "split",
    "named_struct",
]
DROP_FUNCTIONS = [
    "count",
    "count_distinct",
    "approx_count_distinct",
    "size",
    "length",
    "mask",
    "mask_first_n",
    "mask_last_n",
    "mask_show_first_n",
    "mask_show_last_n",
    "mask_hash",
]
#: OPENLINEAGE_MASKING: a hop an OpenLineage producer marked `masking: true` downgrades as a hash
#: does (a policy's `functions: {openlineage.masking: drop}` makes it a mask)
HASH_FUNCTIONS = ["md5", "sha1", "sha2", "hash", "xxhash64", "crc32", OPENLINEAGE_MASKING]
#: types whose values are few enough to enumerate (a phone number, an id): a plain hash of one
#: is reversed by hashing every candidate, so it keeps its level unless the hash is keyed
ENUMERABLE_TYPES = ["phone", "ssn", "id_card", "bank_card"]
#: functions that take their argument whole (the value is still all there after them): in the
#: gateway's strict mode a drop or downgrade counts only after these (see `rules.derive`); the
#: strict resolver names a cast to another type than text `cast:<type>`, which is not one
WHOLE_VALUE_FUNCTIONS = frozenset(
    {"cast", "trim", "ltrim", "rtrim", "upper", "lower", "concat", "concat_ws", "coalesce", "nvl"}
)
AGGREGATE_NUMERIC = ("sum", "avg")


class UnknownTagError(WatershedError, ValueError):
    """A tag (a seed's, a steward's `tag set` or `tag block`) that the policy does not define or allow."""


class _Strict(BaseModel):
    # A misspelt key (`seed:` for `seeds:`) must be an error, not a section silently left out.
    model_config = ConfigDict(extra="forbid")


def _effect(value: str) -> str:
    value = value.strip()
    kind, _, argument = value.partition(":")
    if kind in ("keep", "drop") and not argument:
        return kind
    if kind in ("downgrade", "retype") and argument:
        return f"{kind}:{argument}"
    raise ValueError(f"effect {value!r} must be keep, drop, downgrade:<level> or retype:<type>")


class SensitivityFamily(_Strict):
    levels: list[str] = Field(min_length=1)
    pseudonymised: str | None = None
    types_key: str | None = None
    types: list[str] = Field(default_factory=list)
    #: types a plain hash does not hide; default: those of ENUMERABLE_TYPES among `types`
    enumerable: list[str] | None = None

    @model_validator(mode="after")
    def _check(self) -> SensitivityFamily:
        if len(set(self.levels)) != len(self.levels):
            raise ValueError("levels must be distinct")
        if self.enumerable is None:
            self.enumerable = (
                []
                if self.types_key is None
                else [t for t in ENUMERABLE_TYPES if not self.types or t in self.types]
            )
        else:
            unknown = [t for t in self.enumerable if self.types and t not in self.types]
            if unknown:
                raise ValueError(f"enumerable: {', '.join(unknown)} not one of its types {self.types}")
            if self.enumerable and self.types_key is None:
                raise ValueError("enumerable: the family has no types_key to tell its types")
        if self.pseudonymised is None:
            self.pseudonymised = self.levels[0]
        elif self.pseudonymised not in self.levels:
            raise ValueError(f"pseudonymised level {self.pseudonymised!r} is not one of {self.levels}")
        return self

    def rank(self, level: str) -> int:
        return self.levels.index(level)


class BusinessDimension(_Strict):
    columns: list[str] = Field(min_length=1)
    values: list[str] = Field(default_factory=list)
    #: per column, raw value -> dimension value (`app_id: {1128: douyin}`)
    value_map: dict[str, dict[str, str]] = Field(default_factory=dict)

    @field_validator("columns")
    @classmethod
    def _lower(cls, columns: list[str]) -> list[str]:
        return [c.lower() for c in columns]

    @field_validator("value_map", mode="before")
    @classmethod
    def _stringify(cls, value: object) -> object:
        if isinstance(value, dict):
            return {
                str(column).lower(): {str(k): str(v) for k, v in (mapping or {}).items()}
                for column, mapping in value.items()
            }
        return value

    def map_value(self, column: str, raw: str) -> str:
        return self.value_map.get(column, {}).get(raw, raw)


class SeedRule(_Strict):
    pattern: str
    tags: dict[str, str]

    def matches(self, column_id: str) -> bool:
        name = ids.name(column_id)
        return fnmatch.fnmatch(name, self.pattern) or fnmatch.fnmatch(column_id, self.pattern)


class Policy(_Strict):
    sensitivity: dict[str, SensitivityFamily] = Field(default_factory=dict)
    business: dict[str, BusinessDimension] = Field(default_factory=dict)
    functions: dict[str, str] = Field(default_factory=dict)
    unknown_function: str = "keep"
    weak_references: Literal["none", "business"] = "none"
    conditional_value: str = "keep"
    #: hash functions that take a key: they downgrade an enumerable type as any other
    keyed_hashes: list[str] = Field(default_factory=lambda: ["hmac"])
    #: functions that return a secret: a hash of a value concatenated with one is keyed
    secret_functions: list[str] = Field(default_factory=list)
    seeds: list[SeedRule] = Field(default_factory=list)
    #: which tagged columns are encrypted, with which key and mask (graph/protection.py)
    protection: ProtectionPolicy | None = None

    @field_validator("functions")
    @classmethod
    def _effects(cls, functions: dict[str, str]) -> dict[str, str]:
        return {name.lower(): _effect(effect) for name, effect in functions.items()}

    @field_validator("keyed_hashes", "secret_functions")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        return [name.strip().lower() for name in names]

    @field_validator("unknown_function", "conditional_value")
    @classmethod
    def _one_effect(cls, value: str) -> str:
        return _effect(value)

    @model_validator(mode="after")
    def _check_levels(self) -> Policy:
        effects = {**self.functions, "(conditional_value)": self.conditional_value}
        known_levels = {level for family in self.sensitivity.values() for level in family.levels}
        for name, effect in effects.items():
            if effect.startswith("downgrade:") and effect.split(":", 1)[1] not in known_levels:
                raise ValueError(f"functions.{name}: {effect} names no level of any sensitivity family")
        # A seed is checked as a steward's `tag set` is: an unknown level would otherwise pass
        # here and only fail deep inside a propagation run.
        for i, rule in enumerate(self.seeds):
            for key, value in rule.tags.items():
                try:
                    self.check_tag(key, [value])
                except UnknownTagError as exc:
                    raise ValueError(f"seeds[{i}] ({rule.pattern}): {exc}") from None
        if self.protection is not None:
            self._check_protection(self.protection)
        return self

    def _check_protection(self, protection: ProtectionPolicy) -> None:
        """Each rule names a sensitivity family, levels and types of it (one vocabulary with the
        seeds and `tag set`); its type key comes from the family. Key names, masks and whether the
        KMS has the keys are the protection planner's checks (`orc_crypto.protect`)."""
        for i, rule in enumerate(protection.rules):
            where = f"protection.rules[{i}]"
            family = self.sensitivity.get(rule.tag)
            if family is None:
                known = ", ".join(self.sensitivity) or "none"
                raise ValueError(f"{where}.tag: {rule.tag!r} is not a sensitivity family (known: {known})")
            unknown = [level for level in rule.levels if level not in family.levels]
            if unknown:
                raise ValueError(
                    f"{where}.levels: {', '.join(unknown)} not a level of {rule.tag} {family.levels}"
                )
            if rule.types:
                if family.types_key is None:
                    raise ValueError(f"{where}.types: {rule.tag} has no types_key to match types against")
                unknown = [t for t in rule.types if family.types and t not in family.types]
                if unknown:
                    raise ValueError(
                        f"{where}.types: {', '.join(unknown)} not a type of {rule.tag} {family.types}"
                    )
                rule.types_key = family.types_key

    # ------------------------------------------------------------ tags against the policy

    def tag_keys(self) -> list[str]:
        """Every tag key the policy defines: families, their type keys, business dimensions."""
        return [
            *self.sensitivity,
            *(f.types_key for f in self.sensitivity.values() if f.types_key),
            *self.business,
        ]

    def check_key(self, key: str) -> None:
        """Raise `UnknownTagError` unless `key` is a tag key of the policy."""
        if key not in self.tag_keys():
            raise UnknownTagError(f"{key}: not a tag of the policy (known: {', '.join(self.tag_keys())})")

    def check_tag(self, key: str, values: list[str]) -> None:
        """Raise `UnknownTagError` unless `key=values` is a tag the policy allows.

        The one check of seeds, `tag set` and `tag block`: a typo would otherwise propagate.
        """
        self.check_key(key)
        family = self.sensitivity.get(key)
        if family is not None:
            if len(values) != 1 or values[0] not in family.levels:
                raise UnknownTagError(
                    f"{key}={','.join(values)}: a {key} tag is one level of {family.levels}"
                )
            return
        typed = self.family_of_type_key(key)
        if typed is not None:
            unknown = [v for v in values if typed[1].types and v not in typed[1].types]
            if unknown:
                raise UnknownTagError(
                    f"{key}={','.join(unknown)}: not a {key} of the policy ({', '.join(typed[1].types)})"
                )
            return
        dimension = self.business[key]
        unknown = [v for v in values if dimension.values and v not in dimension.values]
        if unknown:
            raise UnknownTagError(
                f"{key}={','.join(unknown)}: not a value of {key} in the policy ({', '.join(dimension.values)})"
            )

    # ------------------------------------------------------------ queries

    def effect(self, function: str, family: SensitivityFamily, *, strict: bool = False) -> str:
        """The effect of `function` on a tag of `family`. `strict` (the query gateway): a
        function the table does not name keeps the tag, whatever `unknown_function` says."""
        effect = self.functions.get(function)
        if effect is not None:
            return effect
        if function in HASH_FUNCTIONS or function in self.keyed_hashes:
            return f"downgrade:{family.pseudonymised}"
        if function in DROP_FUNCTIONS:
            return "drop"
        if function in KEEP_FUNCTIONS or function in AGGREGATE_NUMERIC or strict:
            return "keep"
        return self.unknown_function

    def names_function(self, function: str) -> bool:
        """Whether the function-effect table (the policy's `functions` over the defaults) names
        `function`: one it does not is opaque (a UDF), and `unknown_function` decides its effect."""
        return (
            function in self.functions
            or function in HASH_FUNCTIONS
            or function in self.keyed_hashes
            or function in DROP_FUNCTIONS
            or function in KEEP_FUNCTIONS
            or function in AGGREGATE_NUMERIC
        )

    def plain_hash(
        self, functions: tuple[str, ...] | list[str], position: int, *, strict: bool = False
    ) -> bool:
        """Whether `functions[position]` is a hash without a key: a hash function the policy
        does not name as keyed, with no secret function before it on the path (the path runs
        from the source outward: `sha2(concat(salt(), x))` is `[salt, concat, sha2]`).
        `strict` (the query gateway): a keyed hash is keyed only by a secret function too, as
        `hmac(vault_salt(), x)`; a key written in the query (`hmac('k', x)`) is the asker's own,
        who hashes every candidate with it."""
        function = functions[position]
        keyed = function in self.keyed_hashes
        if function not in HASH_FUNCTIONS and not keyed:
            return False
        if keyed and not strict:
            return False
        return not any(f in self.secret_functions for f in functions[:position])

    def is_hash(self, function: str) -> bool:
        """Whether `function` is a hash, plain or keyed."""
        return function in HASH_FUNCTIONS or function in self.keyed_hashes

    def takes_whole(self, function: str) -> bool:
        """Whether `function` passes its argument on whole (a cast, a trim, a concatenation, or
        a secret function's salt): a function after it still sees the source's own value."""
        return function in WHOLE_VALUE_FUNCTIONS or function in self.secret_functions

    def blocked_keys(self, blocks: frozenset[str]) -> frozenset[str]:
        """The keys a node's blocks remove: each blocked key, and a blocked sensitivity family's
        type key with it (a block of `pii` stops `pii_type` too: the type of a value the steward
        said is not sensitive here would keep the column looking sensitive). Blocking only the
        type key leaves the family's level alone."""
        types = (self.sensitivity[key].types_key for key in blocks if key in self.sensitivity)
        return blocks | {key for key in types if key}

    def family_of_type_key(self, key: str) -> tuple[str, SensitivityFamily] | None:
        for name, family in self.sensitivity.items():
            if family.types_key == key:
                return name, family
        return None

    def dimension_of_column(self, column: str) -> tuple[str, BusinessDimension] | None:
        for name, dimension in self.business.items():
            if column in dimension.columns:
                return name, dimension
        return None

    def seed_tags(self, column_id: str) -> dict[str, str]:
        tags: dict[str, str] = {}
        for rule in self.seeds:
            if rule.matches(column_id):
                tags.update(rule.tags)
        return tags

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except FileNotFoundError:
            raise PolicyError(f"{path}: policy file not found") from None
        except IsADirectoryError:
            raise PolicyError(f"{path}: a directory, not a policy file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise PolicyError(f"{path}: cannot read the policy file ({exc})") from None
        except yaml.YAMLError as exc:
            raise PolicyError(f"{path}: not valid YAML ({exc})") from None
        return cls.from_data(data, source=str(path))

    @classmethod
    def from_data(cls, data: object, *, source: str = "<policy>") -> Policy:
        if not isinstance(data, dict):
            raise PolicyError(f"{source}: a policy must be a mapping")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(_problem(err) for err in exc.errors())
            raise PolicyError(f"{source}: {problems}") from None


def _problem(error: dict) -> str:
    """One validation error as `key.path: message` (a whole-policy check already names its key)."""
    message = error["msg"].removeprefix("Value error, ")
    where = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        known = ", ".join(Policy.model_fields) if len(error["loc"]) == 1 else "see docs/propagation.md"
        message = f"unknown key (known: {known})"
    return f"{where}: {message}" if where else message


DEFAULT_POLICY_YAML = """
sensitivity:
  pii:
    levels: [L1, L2, L3, L4]
    pseudonymised: L1
    types_key: pii_type
    types: [ssn, email, phone, id_card, bank_card, name, address, ip]
    enumerable: [phone, ssn, id_card, bank_card]
business:
  app:
    columns: [app, app_name, app_id]
    values: [douyin, toutiao, xigua, lark]
    value_map: {app_id: {"1128": douyin, "13": toutiao, "32": xigua, "1": lark}}
  region:
    columns: [region]
    values: [cn, sg, us, eu]
keyed_hashes: [hmac]
seeds:
  - {pattern: "*ssn*", tags: {pii: L4, pii_type: ssn}}
  - {pattern: "*email*", tags: {pii: L3, pii_type: email}}
  - {pattern: "*phone*", tags: {pii: L3, pii_type: phone}}
protection:
  on_release: keep
  rules:
    - {tag: pii, levels: [L4, L3], key: pii, mask: nullify}
    - {tag: pii, levels: [L2], key: pii, mask: sha256}
"""


def default_policy() -> Policy:
    return Policy.from_data(yaml.safe_load(DEFAULT_POLICY_YAML), source="<default policy>")


def load_policy(path: str | Path | None) -> Policy:
    """The policy file at `path`, or the built-in default policy when there is none."""
    return default_policy() if path is None else Policy.load(path)
