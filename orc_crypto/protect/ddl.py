"""Spark SQL that sets a table's ORC encryption options for future writes, from the columns a
plan wants protected (column -> ColumnKey).

`ALTER TABLE <table> SET TBLPROPERTIES (...)` (and SERDEPROPERTIES) for an existing table and
`ALTER TABLE ... UNSET TBLPROPERTIES` when nothing is protected any more; the `CREATE TABLE ...
USING ORC OPTIONS (...)` form is orc_crypto/ddl.py's `create_statement`. The statements come from
orc_crypto/ddl.py, which the old tags-file `watershed ddl` uses too: names quoted the Spark way and the ORC way, a CREATE TABLE column type
parsed as a Spark type and written back canonically (ddl.spark_type), so no catalog text reaches
a statement raw.
"""

from __future__ import annotations

from collections.abc import Mapping

from watershed.graph.protection import ColumnKey
from watershed.orc_crypto.ddl import (
    PROVIDER_OPTION,
    alter_statement,
    quote_table_name,
    sql_string,
)

ENCRYPTION_OPTIONS = (PROVIDER_OPTION, "orc.key.provider", "orc.encrypt", "orc.mask")


def alter_table_ddl(
    table: str, columns: Mapping[str, ColumnKey], key_provider_path: str | None = None
) -> list[str]:
    """ALTER TABLE ... SET TBLPROPERTIES and ... SET SERDEPROPERTIES with the provider path (when
    known), orc.key.provider, orc.encrypt and orc.mask: files Spark writes into the table from now
    on are encrypted.

    Both, because Spark hands ORC's writer a different set of options for each kind of table: a
    Hive `STORED AS ORC` table's writer reads its table properties, a `USING ORC` table's writer
    only its storage (serde) properties and ignores TBLPROPERTIES (checked with Spark 4.3,
    tests/orc_crypto/test_protect_apply_spark.py). Either statement is harmless on the other kind.
    """
    return [
        alter_statement(table, columns, key_provider_path),
        alter_statement(table, columns, key_provider_path, clause="SERDEPROPERTIES"),
    ]


def unset_table_ddl(table: str) -> str:
    """ALTER TABLE ... UNSET TBLPROPERTIES: new files are written in plaintext again."""
    props = ", ".join(sql_string(key) for key in ENCRYPTION_OPTIONS)
    return f"ALTER TABLE {quote_table_name(table)} UNSET TBLPROPERTIES IF EXISTS ({props})"
