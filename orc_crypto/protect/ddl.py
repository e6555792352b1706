"""Spark SQL that sets a table's ORC encryption options for future writes, from the columns a
plan wants protected (column -> ColumnKey).

`ALTER TABLE <table> SET TBLPROPERTIES ('orc.encrypt'=..., 'orc.mask'=..., ...)` for an existing
table, `ALTER TABLE ... UNSET TBLPROPERTIES` when nothing is protected any more, and the
`CREATE TABLE ... USING ORC OPTIONS (...)` form on request. Names are quoted the Spark way and
the ORC way (orc_crypto/ddl.py, options.py); a CREATE TABLE column type is parsed as a Spark type
and written back canonically (ddl.spark_type), so no catalog text reaches a statement raw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from watershed.graph.protection import ColumnKey
from watershed.orc_crypto.ddl import (
    EncryptionPlan,
    option_string,
    quote_identifier,
    quote_table_name,
    spark_type,
    sql_string,
)
from watershed.orc_crypto.options import quote_name
from watershed.orc_crypto.policy import PolicyError

#: the option that names the key provider (ORC takes the first one listed)
PROVIDER_OPTION = "hadoop.security.key.provider.path"
ENCRYPTION_OPTIONS = ("orc.encrypt", "orc.mask", PROVIDER_OPTION, "orc.key.provider")


def encryption_plan(columns: Mapping[str, ColumnKey]) -> EncryptionPlan:
    """orc.encrypt / orc.mask of these columns: keys and masks sorted, columns in the given order."""
    encrypt: dict[str, list[str]] = {}
    mask: dict[str, list[str]] = {}
    for name, column in columns.items():
        encrypt.setdefault(column.key, []).append(quote_name(name))
        mask.setdefault(column.mask, []).append(quote_name(name))
    return EncryptionPlan(
        encrypt={k: encrypt[k] for k in sorted(encrypt)}, mask={m: mask[m] for m in sorted(mask)}
    )


def encryption_options(
    columns: Mapping[str, ColumnKey], key_provider_path: str | None
) -> list[tuple[str, str]]:
    """The table options, in a fixed order: orc.encrypt, orc.mask, the provider path, orc.key.provider."""
    plan = encryption_plan(columns)
    options = [("orc.encrypt", plan.orc_encrypt), ("orc.mask", plan.orc_mask)]
    if key_provider_path:
        options.append((PROVIDER_OPTION, key_provider_path))
    options.append(("orc.key.provider", "hadoop"))
    return options


def alter_table_ddl(
    table: str, columns: Mapping[str, ColumnKey], key_provider_path: str | None = None
) -> str:
    """ALTER TABLE ... SET TBLPROPERTIES: files Spark writes into the table from now on are encrypted."""
    if not columns:
        raise PolicyError(f"no column of {table} is to be encrypted")
    props = ", ".join(
        f"{sql_string(key)}={sql_string(value)}"
        for key, value in encryption_options(columns, key_provider_path)
    )
    return f"ALTER TABLE {quote_table_name(table)} SET TBLPROPERTIES ({props})"


def unset_table_ddl(table: str) -> str:
    """ALTER TABLE ... UNSET TBLPROPERTIES: new files are written in plaintext again."""
    props = ", ".join(sql_string(key) for key in ENCRYPTION_OPTIONS)
    return f"ALTER TABLE {quote_table_name(table)} UNSET TBLPROPERTIES IF EXISTS ({props})"


def create_table_ddl(
    table: str,
    column_types: Sequence[tuple[str, str | None]],
    columns: Mapping[str, ColumnKey],
    key_provider_path: str | None = None,
    extra_options: Mapping[str, str] | None = None,
) -> str:
    """CREATE TABLE ... USING ORC OPTIONS (...) with every column (name, Spark type) in table order.

    PolicyError names a column without a type or with one that is not a Spark SQL type (a type
    followed by more SQL is refused, never pasted). `extra_options` (orc.compress, ...) follow,
    sorted by name, and may not override an encryption option.
    """
    missing = [name for name, type_ in column_types if not type_]
    if missing:
        raise PolicyError(
            f"CREATE TABLE {table} needs a type for every column; missing for: {', '.join(missing)}"
        )
    rendered = ",\n".join(
        f"  {quote_identifier(name)} {spark_type(name, type_ or '')}" for name, type_ in column_types
    )
    options = encryption_options(columns, key_provider_path) if columns else []
    for key in sorted(extra_options or {}):
        if key in dict(options):
            raise PolicyError(f"extra option {key!r} would override a generated encryption option")
        options.append((key, (extra_options or {})[key]))
    ddl = f"CREATE TABLE {quote_table_name(table)} (\n{rendered}\n) USING ORC"
    if options:
        body = ",\n".join(f"  {key} {option_string(value)}" for key, value in options)
        ddl += f"\nOPTIONS (\n{body}\n)"
    return ddl
