"""Spark DDL that makes ORC encrypt a table's sensitive columns (doc §9).

Input: the table's columns with their sensitivity tags (tags.json) and an EncryptionPolicy.

tags.json:

    {"table": "sales.customers",
     "columns": [{"name": "id", "type": "bigint"},
                 {"name": "ssn", "type": "string", "tags": ["pii"]},
                 {"name": "address", "type": "struct<street:string,zip:string>", "tags": ["pii"]},
                 {"name": "salary", "type": "int", "tags": ["financial"]}]}

`type` is a Spark SQL type, needed only for CREATE TABLE. Output order is deterministic:
keys sorted by name, masks sorted by their mask string (the order ORC itself uses), columns
in table order.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orc_crypto.options import quote_name
from orc_crypto.policy import EncryptionPolicy, PolicyError

_PLAIN_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Spark's ANSI reserved words that would break an unquoted identifier
_RESERVED = {
    "all", "and", "any", "as", "authorization", "both", "case", "cast", "check", "collate", "column",
    "constraint", "create", "cross", "current_date", "current_time", "current_timestamp", "current_user",
    "distinct", "else", "end", "escape", "except", "false", "fetch", "filter", "for", "foreign", "from",
    "full", "grant", "group", "having", "in", "inner", "intersect", "into", "is", "join", "leading",
    "left", "natural", "not", "null", "offset", "on", "only", "or", "order", "outer", "overlaps",
    "primary", "references", "right", "select", "session_user", "some", "table", "then", "time", "to",
    "trailing", "union", "unique", "unknown", "user", "using", "when", "where", "with",
}  # fmt: skip


class ColumnTags(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    type: str | None = None
    tags: list[str] = Field(default_factory=list)


class TableTags(BaseModel):
    model_config = ConfigDict(extra="forbid")

    table: str | None = None
    columns: list[ColumnTags]


class EncryptionPlan(BaseModel):
    """What ORC must encrypt and mask: the values of `orc.encrypt` and `orc.mask`."""

    #: key name -> columns, keys sorted, columns in table order
    encrypt: dict[str, list[str]]
    #: mask string -> columns, masks sorted
    mask: dict[str, list[str]]

    @property
    def orc_encrypt(self) -> str:
        return ";".join(f"{key}:{','.join(cols)}" for key, cols in self.encrypt.items())

    @property
    def orc_mask(self) -> str:
        return ";".join(f"{mask}:{','.join(cols)}" for mask, cols in self.mask.items())


def load_tags(path: Path) -> TableTags:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise PolicyError(f"cannot read tags file {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise PolicyError(f"tags file {path} is not valid JSON: {exc}") from exc
    try:
        return TableTags.model_validate(raw)
    except ValidationError as exc:
        raise PolicyError(f"tags file {path}: {exc}") from exc


def quote_identifier(name: str) -> str:
    """Backtick-quote a name part when Spark would not parse it bare."""
    if _PLAIN_IDENTIFIER.match(name) and name.lower() not in _RESERVED:
        return name
    return "`" + name.replace("`", "``") + "`"


def quote_table_name(table: str) -> str:
    """`db.my table` -> db.`my table`; an already quoted part is kept as is."""
    parts = re.findall(r"`(?:[^`]|``)*`|[^.]+", table)
    if not parts or "".join(parts).replace("`", "") == "":
        raise PolicyError(f"invalid table name {table!r}")
    return ".".join(p if p.startswith("`") else quote_identifier(p) for p in parts)


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _option_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def plan_encryption(tags: TableTags, policy: EncryptionPolicy) -> EncryptionPlan:
    encrypt: dict[str, list[str]] = {}
    mask: dict[str, list[str]] = {}
    seen: set[str] = set()
    for column in tags.columns:
        if column.name.lower() in seen:
            raise PolicyError(f"column {column.name!r} is listed twice")
        seen.add(column.name.lower())
        level = policy.level_for(column.tags)
        if level is None:
            continue
        # ORC's option syntax back-quotes names that are not plain (a `.` would read as a path)
        encrypt.setdefault(level.key, []).append(quote_name(column.name))
        mask.setdefault(level.mask, []).append(quote_name(column.name))
    return EncryptionPlan(
        encrypt={k: encrypt[k] for k in sorted(encrypt)}, mask={m: mask[m] for m in sorted(mask)}
    )


def create_table_ddl(
    table: str,
    tags: TableTags,
    policy: EncryptionPolicy,
    *,
    key_provider_path: str | None = None,
    extra_options: dict[str, str] | None = None,
) -> str:
    """CREATE TABLE ... USING ORC OPTIONS (...) with the encryption options.

    `extra_options` (for example `orc.compress`) follow the encryption options, sorted by name.
    """
    missing = [c.name for c in tags.columns if not c.type]
    if missing:
        raise PolicyError(f"CREATE TABLE needs a type for every column; missing for: {', '.join(missing)}")
    plan = plan_encryption(tags, policy)
    provider = key_provider_path or policy.key_provider_path
    columns = ",\n".join(f"  {quote_identifier(c.name)} {c.type}" for c in tags.columns)
    options: list[tuple[str, str]] = []
    if plan.encrypt:
        if provider:
            options.append(("hadoop.security.key.provider.path", provider))
        options += [("orc.key.provider", "hadoop"), ("orc.encrypt", plan.orc_encrypt)]
        options.append(("orc.mask", plan.orc_mask))
    for key in sorted(extra_options or {}):
        if key in dict(options):
            raise PolicyError(f"extra option {key!r} would override a generated encryption option")
        options.append((key, extra_options[key]))
    ddl = f"CREATE TABLE {quote_table_name(table)} (\n{columns}\n) USING ORC"
    if options:
        body = ",\n".join(f"  {key} {_option_string(value)}" for key, value in options)
        ddl += f"\nOPTIONS (\n{body}\n)"
    return ddl


def alter_table_ddl(table: str, tags: TableTags, policy: EncryptionPolicy) -> str:
    """ALTER TABLE ... SET TBLPROPERTIES for an existing Hive ORC table (new files get encrypted)."""
    plan = plan_encryption(tags, policy)
    if not plan.encrypt:
        raise PolicyError(f"no column of {table} has a tag that the policy encrypts")
    props = f"{_sql_string('orc.encrypt')}={_sql_string(plan.orc_encrypt)}, "
    props += f"{_sql_string('orc.mask')}={_sql_string(plan.orc_mask)}"
    return f"ALTER TABLE {quote_table_name(table)} SET TBLPROPERTIES ({props})"
