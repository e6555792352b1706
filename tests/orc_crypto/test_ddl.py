"""DDL generation from column tags and an encryption policy."""

from __future__ import annotations

import pytest

from tests.orc_crypto.conftest import ENCRYPTED_TABLE, POLICY, TABLE_TAGS
from watershed.graph.errors import PolicyError
from watershed.graph.protection import ProtectionPolicy
from watershed.orc_crypto.ddl import (
    TableTags,
    alter_table_ddl,
    create_table_ddl,
    ddl_policy,
    plan_encryption,
    quote_identifier,
    quote_table_name,
)

PROVIDER = "kms://http@127.0.0.1:9600/kms"


@pytest.fixture
def tags() -> TableTags:
    return TableTags.model_validate(TABLE_TAGS)


@pytest.fixture
def policy() -> ProtectionPolicy:
    return ddl_policy(POLICY)


def test_create_table_ddl(tags, policy):
    assert create_table_ddl(ENCRYPTED_TABLE, tags, policy, key_provider_path=PROVIDER) == (
        f"CREATE TABLE {ENCRYPTED_TABLE} (\n"
        "  id BIGINT,\n"
        "  ssn STRING,\n"
        "  email STRING,\n"
        "  salary INT,\n"
        "  address STRUCT<street: STRING, zip: STRING>,\n"
        "  name STRING\n"
        ") USING ORC\n"
        "OPTIONS (\n"
        '  hadoop.security.key.provider.path "kms://http@127.0.0.1:9600/kms",\n'
        '  orc.key.provider "hadoop",\n'
        '  orc.encrypt "fin:salary;pii:ssn,email,address",\n'
        '  orc.mask "nullify:ssn,address;redact:salary;sha256:email"\n'
        ")"
    )


def test_alter_table_ddl(tags, policy):
    assert alter_table_ddl(ENCRYPTED_TABLE, tags, policy) == (
        f"ALTER TABLE {ENCRYPTED_TABLE} SET TBLPROPERTIES ("
        "'orc.encrypt'='fin:salary;pii:ssn,email,address', "
        "'orc.mask'='nullify:ssn,address;redact:salary;sha256:email')"
    )


def test_order_is_deterministic_whatever_the_input_order(policy):
    columns = [
        {"name": "b", "type": "string", "tags": ["contact"]},
        {"name": "a", "type": "int", "tags": ["financial", "pii"]},  # most sensitive level listed first wins
        {"name": "c", "type": "string", "tags": ["pii"]},
    ]
    plan = plan_encryption(TableTags(columns=columns), policy)
    assert plan.orc_encrypt == "pii:b,a,c"
    assert plan.orc_mask == "nullify:a,c;sha256:b"
    reversed_plan = plan_encryption(TableTags(columns=columns[::-1]), policy)
    assert reversed_plan.orc_encrypt == "pii:c,a,b" and reversed_plan.orc_mask == "nullify:c,a;sha256:b"


def test_identifiers_are_quoted_where_needed(policy):
    assert quote_identifier("ssn") == "ssn"
    assert quote_identifier("order") == "`order`"
    assert quote_identifier("first name") == "`first name`"
    assert quote_identifier("we`ird") == "`we``ird`"
    assert quote_identifier("1col") == "`1col`"
    assert quote_table_name("db.my table") == "db.`my table`"
    assert quote_table_name("`db.x`.t") == "`db.x`.t"
    tags = TableTags(columns=[{"name": "select", "type": "string", "tags": ["pii"]}])
    ddl = create_table_ddl("my-db.t", tags, policy)
    assert ddl.startswith("CREATE TABLE `my-db`.t (\n  `select` STRING\n)")
    assert 'orc.encrypt "pii:select"' in ddl and "hadoop.security.key.provider.path" not in ddl


def test_option_values_are_escaped(policy):
    policy = ddl_policy({"levels": [{"name": "pii", "key": "pii", "mask": "redact,`X'x\"9`"}]})
    tags = TableTags(columns=[{"name": "s", "type": "string", "tags": ["pii"]}])
    assert 'orc.mask "redact,`X\'x\\"9`:s"' in create_table_ddl("t", tags, policy)
    assert "'orc.mask'='redact,`X\\'x\"9`:s'" in alter_table_ddl("t", tags, policy)


def test_bad_inputs_are_rejected(policy):
    plan = plan_encryption(
        TableTags(columns=[{"name": "a:b", "tags": ["pii"]}, {"name": "c.d", "tags": ["pii"]}]), policy
    )
    assert plan.orc_encrypt.endswith(":`a:b`,`c.d`")  # ORC's quoting, not a path
    with pytest.raises(PolicyError, match="listed twice"):
        plan_encryption(TableTags(columns=[{"name": "a"}, {"name": "A"}]), policy)
    with pytest.raises(PolicyError, match="missing for: x"):
        create_table_ddl("t", TableTags(columns=[{"name": "x", "tags": ["pii"]}]), policy)
    with pytest.raises(PolicyError, match="no column of t"):
        alter_table_ddl("t", TableTags(columns=[{"name": "x", "tags": ["public"]}]), policy)
    with pytest.raises(ValueError, match="listed twice"):
        ddl_policy({"levels": [{"name": "p", "key": "k"}, {"name": "p", "key": "k"}]})
    for mask, message in [
        ("a:b", "unexpected text"),
        ("hash", "unknown mask"),
        ("sha256,x", "no parameters"),
    ]:
        with pytest.raises(ValueError, match=message):
            ddl_policy({"levels": [{"name": "p", "key": "k", "mask": mask}]})


def test_table_without_sensitive_columns_gets_plain_ddl(policy):
    ddl = create_table_ddl("t", TableTags(columns=[{"name": "x", "type": "int", "tags": ["public"]}]), policy)
    assert ddl == "CREATE TABLE t (\n  x INT\n) USING ORC"
