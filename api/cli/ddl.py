"""`watershed ddl`: Spark DDL that encrypts a table's sensitive ORC columns."""

from __future__ import annotations

from pathlib import Path

import typer

from watershed.api.cli.output import fail

TAGS_HELP = (
    'Tags file (JSON): {"table": "db.t", "columns": [{"name": "ssn", "type": "string", "tags": ["pii"]}, ...]}. '
    "`type` (a Spark SQL type, written back canonically) is needed for CREATE TABLE only; "
    "`table`, if given, must be TABLE."
)
POLICY_HELP = (
    "Policy file (YAML): `key_provider_path: kms://http@HOST:PORT/kms` (optional) and `levels:` a list, "
    "most sensitive first, of {name: TAG, key: MASTER_KEY, mask: nullify|sha256|redact[,params]}."
)


def ddl_command(
    table: str = typer.Argument(..., help="Table name, e.g. sales.customers (quoted where Spark needs it)."),
    tags: Path = typer.Option(..., "--tags", help=TAGS_HELP),
    policy: Path = typer.Option(..., "--policy", help=POLICY_HELP),
    alter: bool = typer.Option(
        False, "--alter", help="Print ALTER TABLE ... SET TBLPROPERTIES for an existing table instead."
    ),
    kms_uri: str = typer.Option(
        None, "--kms-uri", help="Key provider path for the table options (overrides the policy's)."
    ),
) -> None:
    """Print the CREATE TABLE (or ALTER TABLE) statement that makes ORC encrypt and mask tagged columns.

    A column takes the first policy level among its tags; it is encrypted with that level's master key and masked with its mask. Readers without the key see the masked values.
    """
    from watershed.graph.errors import PolicyError
    from watershed.orc_crypto.ddl import (
        alter_table_ddl,
        check_tags_table,
        create_table_ddl,
        load_ddl_policy,
        load_tags,
    )

    try:
        table_tags = load_tags(tags)
        check_tags_table(table, table_tags, tags)
        protection_policy = load_ddl_policy(policy)
        if alter:
            statement = alter_table_ddl(table, table_tags, protection_policy)
        else:
            statement = create_table_ddl(table, table_tags, protection_policy, key_provider_path=kms_uri)
    except PolicyError as exc:
        fail(str(exc))
    typer.echo(statement + ";")
