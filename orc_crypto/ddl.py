"""Spark DDL that makes ORC encrypt a table's sensitive columns (doc §9).

Input: the table's columns with their sensitivity tags (tags.json) and a policy file
(policy.yaml), read into the protection policy the planner uses (graph/protection.py):

    key_provider_path: kms://http@127.0.0.1:9600/kms   # optional; `--kms-uri` overrides it
    levels:                 # most sensitive first: a column with several tags takes the first level listed
      - name: pii           # a tag name as it appears in tags.json
        key: pii            # the KMS master key name
        mask: nullify       # nullify | sha256 | redact[,params...] in ORC's orc.mask syntax: back-quote
                            # parameters with other than letters, digits and _: redact,`Xx9`,`_`,`0:3`
      - name: financial
        key: fin
        mask: redact

Each level is the protection rule for one tag of the tags file; tags that are not a level (for
example `public`) do not encrypt anything.

tags.json:

    {"table": "sales.customers",
     "columns": [{"name": "id", "type": "bigint"},
                 {"name": "ssn", "type": "string", "tags": ["pii"]},
                 {"name": "address", "type": "struct<street:string,zip:string>", "tags": ["pii"]},
                 {"name": "salary", "type": "int", "tags": ["financial"]}]}

`type` is a Spark SQL type, needed only for CREATE TABLE: it is parsed as one (nested
struct/array/map, decimal(p,s), varchar(n) and so on) and written back in canonical form, so
nothing but a type reaches the statement. `table`, when given, must name the table the DDL is
for. Output order is deterministic: keys sorted by name, masks sorted by their mask string (the
order ORC itself uses), columns in table order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlglot import exp, parse_one
from sqlglot.errors import SqlglotError

from watershed.graph.errors import PolicyError
from watershed.graph.protection import ColumnKey, ProtectionPolicy, ProtectionRule
from watershed.orc_crypto.options import quote_name
from watershed.orc_crypto.protect.checks import ProtectionError, check_protection

_T = exp.DataType.Type
#: the types Spark SQL has (sqlglot's names for them); anything else sqlglot parses is refused
_SPARK_TYPES = {
    _T.BOOLEAN, _T.TINYINT, _T.SMALLINT, _T.INT, _T.BIGINT, _T.FLOAT, _T.DOUBLE, _T.DECIMAL,
    _T.TEXT, _T.VARCHAR, _T.CHAR, _T.BINARY, _T.DATE, _T.TIMESTAMP, _T.TIMESTAMPTZ,
    _T.TIMESTAMPNTZ, _T.TIMESTAMPLTZ, _T.ARRAY, _T.MAP, _T.STRUCT, _T.VARIANT,
}  # fmt: skip
#: how many parameters a type takes, at most (decimal(p,s), varchar(n), char(n)); others take none
_PARAMETERS = {_T.DECIMAL: 2, _T.VARCHAR: 1, _T.CHAR: 1}

#: the option that names the key provider (ORC takes the first one listed)
PROVIDER_OPTION = "hadoop.security.key.provider.path"

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


#: the tag family of a tags file, whose tags are bare names (`pii`, `financial`): a policy file's
#: level `pii` is the protection rule for the value `pii` of this family
TAGS_FILE_FAMILY = "tags"
#: a policy file's keys, and a level's
_POLICY_KEYS = ("key_provider_path", "levels")
_LEVEL_KEYS = ("name", "key", "mask")


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
        # ORC reads a key name as it reads a field name: back-quoted unless plain (`fin.v2`)
        return ";".join(f"{quote_name(key)}:{','.join(cols)}" for key, cols in self.encrypt.items())

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


def ddl_policy(data: object, source: str = "policy") -> ProtectionPolicy:
    """A policy file's content (`key_provider_path`, `levels`) as a ProtectionPolicy: level i is
    rule i, protecting the columns tagged with its name, so the first level among a column's
    tags decides, as rules do. Masks and key names pass the planner's checks. PolicyError names
    `source` and the entry at fault."""
    if not isinstance(data, dict):
        raise PolicyError(f"{source}: a policy must be a mapping of {', '.join(_POLICY_KEYS)}")
    _known_keys(data, _POLICY_KEYS, source)
    levels = data.get("levels", [])
    if not isinstance(levels, list):
        raise PolicyError(f"{source}: levels must be a list of {{{', '.join(_LEVEL_KEYS)}}}")
    rules = []
    for i, level in enumerate(levels):
        where = f"{source}: levels[{i}]"
        if not isinstance(level, dict):
            raise PolicyError(f"{where}: a level must be a mapping of {', '.join(_LEVEL_KEYS)}")
        _known_keys(level, _LEVEL_KEYS, where)
        if "name" not in level:
            raise PolicyError(f"{where}.name: Field required")
        if any(level["name"] in rule.levels for rule in rules):
            raise PolicyError(f"{source}: level {level['name']!r} is listed twice")
        fields = {
            key: value.strip() if key == "mask" and isinstance(value, str) else value
            for key, value in level.items()
            if key != "name"
        }
        try:
            rules.append(ProtectionRule(tag=TAGS_FILE_FAMILY, levels=[level["name"]], **fields))
        except ValidationError as exc:
            error = exc.errors()[0]
            field = {"levels": "name"}.get(str(error["loc"][0]), str(error["loc"][0]))
            raise PolicyError(f"{where}.{field}: {error['msg']}") from None
    try:
        policy = ProtectionPolicy(key_provider_path=data.get("key_provider_path"), rules=rules)
    except ValidationError as exc:  # the rules are valid: only the path can be wrong
        raise PolicyError(f"{source}: key_provider_path: {exc.errors()[0]['msg']}") from None
    try:
        check_protection(policy, section="levels")
    except ProtectionError as exc:
        raise PolicyError(f"{source}: {exc}") from None
    return policy


def _known_keys(mapping: dict, known: tuple[str, ...], where: str) -> None:
    unknown = [key for key in mapping if key not in known]
    if unknown:
        raise PolicyError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(known)})")


def load_ddl_policy(path: Path) -> ProtectionPolicy:
    """The policy file at `path` (YAML; see the module's docstring) as a ProtectionPolicy."""
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise PolicyError(f"cannot read policy file {path}: {exc.strerror}") from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PolicyError(f"policy file {path} is not valid YAML: {exc}") from exc
    return ddl_policy(raw, f"policy file {path}")


def _table_parts(table: str) -> list[str]:
    parts = re.findall(r"`(?:[^`]|``)*`|[^.]+", table)
    return [p[1:-1].replace("``", "`") if p.startswith("`") else p for p in parts]


def check_tags_table(table: str, tags: TableTags, tags_path: str | Path | None = None) -> None:
    """A tags file that names a table must name `table` (Spark compares names case-insensitively)."""
    if tags.table is None:
        return
    if [p.lower() for p in _table_parts(tags.table)] != [p.lower() for p in _table_parts(table)]:
        where = f"tags file {tags_path}" if tags_path else "the tags"
        raise PolicyError(f"{where} is for table {tags.table!r}, not for {table!r}")


def spark_type(column: str, text: str) -> str:
    """`text` parsed as a Spark SQL type and written back canonically; PolicyError names the
    column and the text when it is anything else (a type followed by more SQL, an unknown type,
    bad decimal/varchar parameters)."""

    def refuse(why: str) -> PolicyError:
        return PolicyError(f"column {column!r}: type {text!r} is not a Spark SQL type ({why})")

    try:
        parsed = parse_one(text, into=exp.DataType, dialect="spark")
    except SqlglotError as exc:
        raise refuse("it does not parse as one") from exc
    for node in parsed.find_all(exp.DataType):
        if isinstance(node.this, exp.Interval) or node.find_ancestor(exp.Interval):
            continue  # interval year to month, interval day to second
        if node.this not in _SPARK_TYPES:
            name = node.this.value if isinstance(node.this, exp.DataType.Type) else node.sql("spark")
            raise refuse(f"{name.lower()} is not a Spark type")
        parameters = [e for e in node.expressions if isinstance(e, exp.DataTypeParam)]
        if len(parameters) > _PARAMETERS.get(node.this, 0):
            raise refuse(f"too many parameters for {node.this.value.lower()}")
        values = []
        for parameter in parameters:
            if not (isinstance(parameter.this, exp.Literal) and parameter.this.is_int):
                raise refuse(f"parameter {parameter.sql(dialect='spark')} is not a whole number")
            values.append(int(parameter.this.this))
        if (
            node.this == _T.DECIMAL
            and values
            and not (1 <= values[0] <= 38 and 0 <= (values[1:] or [0])[0] <= values[0])
        ):
            raise refuse("decimal(p,s) needs 1 <= p <= 38 and 0 <= s <= p")
        if node.this in (_T.VARCHAR, _T.CHAR) and values and values[0] < 1:
            raise refuse("the length must be at least 1")
    rendered = parsed.sql(dialect="spark")
    # what is printed must read back as this same type and nothing more
    try:
        if parse_one(rendered, into=exp.DataType, dialect="spark") != parsed:
            raise refuse("it does not render back to itself")
    except SqlglotError as exc:
        raise refuse("it does not render back to itself") from exc
    return rendered


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


def sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def option_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def column_keys(tags: TableTags, policy: ProtectionPolicy) -> dict[str, ColumnKey]:
    """The tags-file input: each column a policy level encrypts, with that level's key and mask
    (in table order), the same map the protection planner builds from the graph's tags."""
    columns: dict[str, ColumnKey] = {}
    seen: set[str] = set()
    for column in tags.columns:
        if column.name.lower() in seen:
            raise PolicyError(f"column {column.name!r} is listed twice")
        seen.add(column.name.lower())
        found = policy.rule_for({TAGS_FILE_FAMILY: column.tags})
        if found is not None:
            columns[column.name] = ColumnKey(key=found[0].key, mask=found[0].mask)
    return columns


def encryption_plan(columns: Mapping[str, ColumnKey]) -> EncryptionPlan:
    """orc.encrypt / orc.mask of these columns: keys and masks sorted, columns in the given order."""
    encrypt: dict[str, list[str]] = {}
    mask: dict[str, list[str]] = {}
    for name, column in columns.items():
        # ORC's option syntax back-quotes names that are not plain (a `.` would read as a path)
        encrypt.setdefault(column.key, []).append(quote_name(name))
        mask.setdefault(column.mask, []).append(quote_name(name))
    return EncryptionPlan(
        encrypt={k: encrypt[k] for k in sorted(encrypt)}, mask={m: mask[m] for m in sorted(mask)}
    )


def plan_encryption(tags: TableTags, policy: ProtectionPolicy) -> EncryptionPlan:
    return encryption_plan(column_keys(tags, policy))


def encryption_options(
    columns: Mapping[str, ColumnKey], key_provider_path: str | None, *, key_provider: bool = True
) -> list[tuple[str, str]]:
    """The table options that make ORC encrypt `columns` (none when there are none): the provider
    path, `orc.key.provider` (unless `key_provider` is false), `orc.encrypt`, `orc.mask`."""
    if not columns:
        return []
    plan = encryption_plan(columns)
    options: list[tuple[str, str]] = []
    if key_provider_path:
        options.append((PROVIDER_OPTION, key_provider_path))
    if key_provider:
        options.append(("orc.key.provider", "hadoop"))
    return [*options, ("orc.encrypt", plan.orc_encrypt), ("orc.mask", plan.orc_mask)]


def create_statement(
    table: str,
    column_types: Sequence[tuple[str, str | None]],
    columns: Mapping[str, ColumnKey],
    key_provider_path: str | None = None,
    extra_options: Mapping[str, str] | None = None,
) -> str:
    """CREATE TABLE ... USING ORC OPTIONS (...): every column (name, Spark type) in table order,
    then the encryption options of `columns`, then `extra_options` (for example `orc.compress`)
    sorted by name. A missing type, or one that is not a Spark SQL type, is a PolicyError naming
    the column."""
    missing = [name for name, type_ in column_types if not type_]
    if missing:
        raise PolicyError(f"CREATE TABLE needs a type for every column; missing for: {', '.join(missing)}")
    rendered = ",\n".join(
        f"  {quote_identifier(name)} {spark_type(name, type_ or '')}" for name, type_ in column_types
    )
    options = encryption_options(columns, key_provider_path)
    for key in sorted(extra_options or {}):
        if key in dict(options):
            raise PolicyError(f"extra option {key!r} would override a generated encryption option")
        options.append((key, (extra_options or {})[key]))
    ddl = f"CREATE TABLE {quote_table_name(table)} (\n{rendered}\n) USING ORC"
    if options:
        body = ",\n".join(f"  {key} {option_string(value)}" for key, value in options)
        ddl += f"\nOPTIONS (\n{body}\n)"
    return ddl


def alter_statement(
    table: str,
    columns: Mapping[str, ColumnKey],
    key_provider_path: str | None = None,
    *,
    key_provider: bool = True,
    clause: Literal["TBLPROPERTIES", "SERDEPROPERTIES"] = "TBLPROPERTIES",
) -> str:
    """ALTER TABLE ... SET TBLPROPERTIES (or SERDEPROPERTIES): files written into the table from
    now on are encrypted."""
    if not columns:
        raise PolicyError(f"no column of {table} is to be encrypted")
    options = encryption_options(columns, key_provider_path, key_provider=key_provider)
    props = ", ".join(f"{sql_string(key)}={sql_string(value)}" for key, value in options)
    return f"ALTER TABLE {quote_table_name(table)} SET {clause} ({props})"


def create_table_ddl(
    table: str,
    tags: TableTags,
    policy: ProtectionPolicy,
    *,
    key_provider_path: str | None = None,
    extra_options: dict[str, str] | None = None,
) -> str:
    """CREATE TABLE ... USING ORC OPTIONS (...) with the encryption options (tags-file input).

    `extra_options` (for example `orc.compress`) follow the encryption options, sorted by name.
    """
    missing = [c.name for c in tags.columns if not c.type]
    if missing:
        raise PolicyError(f"CREATE TABLE needs a type for every column; missing for: {', '.join(missing)}")
    check_tags_table(table, tags)
    return create_statement(
        table,
        [(c.name, c.type) for c in tags.columns],
        column_keys(tags, policy),
        key_provider_path or policy.key_provider_path,
        extra_options,
    )


def alter_table_ddl(table: str, tags: TableTags, policy: ProtectionPolicy) -> str:
    """ALTER TABLE ... SET TBLPROPERTIES for an existing Hive ORC table (new files get encrypted);
    the tags-file form sets orc.encrypt and orc.mask only."""
    check_tags_table(table, tags)
    columns = column_keys(tags, policy)
    if not columns:
        raise PolicyError(f"no column of {table} has a tag that the policy encrypts")
    return alter_statement(table, columns, key_provider=False)
