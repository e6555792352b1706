"""Generated DDL carries only what it should: column types parsed as Spark types, key names
checked and quoted as ORC reads them, tags only for the table asked."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from tests.orc_crypto.conftest import ENCRYPTED_TABLE, POLICY, TABLE_TAGS
from watershed.api.cli import app
from watershed.graph.errors import PolicyError
from watershed.orc_crypto.ddl import TableTags, alter_table_ddl, create_table_ddl, ddl_policy, plan_encryption
from watershed.orc_crypto.options import parse_encrypt_option


def _flat(result) -> str:
    return " ".join(result.output.split())


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("boolean", "BOOLEAN"),
        ("tinyint", "TINYINT"),
        ("byte", "TINYINT"),
        ("smallint", "SMALLINT"),
        ("int", "INT"),
        ("integer", "INT"),
        ("bigint", "BIGINT"),
        ("long", "BIGINT"),
        ("float", "FLOAT"),
        ("double", "DOUBLE"),
        ("decimal(10,2)", "DECIMAL(10, 2)"),
        ("decimal(38)", "DECIMAL(38)"),
        ("decimal", "DECIMAL"),
        ("string", "STRING"),
        ("varchar(20)", "VARCHAR(20)"),
        ("char(3)", "CHAR(3)"),
        ("binary", "BINARY"),
        ("date", "DATE"),
        ("timestamp", "TIMESTAMP"),
        ("timestamp_ntz", "TIMESTAMP_NTZ"),
        ("interval day to second", "INTERVAL DAY TO SECOND"),
        ("array<int>", "ARRAY<INT>"),
        ("map<string,array<decimal(5,1)>>", "MAP<STRING, ARRAY<DECIMAL(5, 1)>>"),
        ("struct<street:string,zip:string>", "STRUCT<street: STRING, zip: STRING>"),
        (
            "struct<`a b`:int,`c``d`:array<struct<e:date>>>",
            "STRUCT<`a b`: INT, `c``d`: ARRAY<STRUCT<e: DATE>>>",
        ),
    ],
)
def test_spark_types_are_accepted_and_rendered_canonically(text, canonical):
    from watershed.orc_crypto.ddl import spark_type

    assert spark_type("c", text) == canonical
    assert spark_type("c", canonical) == canonical  # canonical form is a fixed point


@pytest.mark.parametrize(
    "text",
    [
        "int); DROP TABLE x; --",
        "int) USING ORC; DROP TABLE x; CREATE TABLE y (z int",
        "string, evil int",
        "int comment 'x'",
        "int not null",
        "foo",
        "array<foo>",
        "uuid",
        "json",
        "int(5)",
        "decimal(40,2)",
        "decimal(5,6)",
        "decimal(10,2,3)",
        "varchar(0)",
        "struct<a:int",
        "",
    ],
)
def test_anything_but_a_spark_type_is_refused_naming_the_column(text):
    from watershed.orc_crypto.ddl import spark_type

    with pytest.raises(PolicyError) as raised:
        spark_type("amount", text)
    assert str(raised.value).startswith(f"column 'amount': type {text!r} is not a Spark SQL type")


def test_injected_type_never_reaches_the_statement(tmp_path):
    tags, policy = tmp_path / "tags.json", tmp_path / "policy.yaml"
    tags.write_text(
        json.dumps({"columns": [{"name": "id", "type": "int); DROP TABLE x; --", "tags": ["pii"]}]})
    )
    policy.write_text(yaml.safe_dump(POLICY))
    result = CliRunner().invoke(app, ["ddl", "t", "--tags", str(tags), "--policy", str(policy)])
    assert result.exit_code == 1
    assert "DROP TABLE" not in result.stdout
    assert "column 'id': type 'int); DROP TABLE x; --' is not a Spark SQL type" in _flat(result)
    assert len(result.output.strip().splitlines()) == 1


def test_key_names_are_checked_and_quoted_as_orc_reads_them():
    policy = ddl_policy(
        {
            "levels": [
                {"name": "pii", "key": "pii"},
                {"name": "financial", "key": "fin.v2-eu", "mask": "redact"},
            ]
        }
    )
    tags = TableTags(columns=[{"name": "ssn", "tags": ["pii"]}, {"name": "salary", "tags": ["financial"]}])
    plan = plan_encryption(tags, policy)
    assert plan.orc_encrypt == "`fin.v2-eu`:salary;pii:ssn"
    assert parse_encrypt_option(plan.orc_encrypt) == {"fin.v2-eu": ["salary"], "pii": ["ssn"]}
    assert "'orc.encrypt'='`fin.v2-eu`:salary;pii:ssn'" in alter_table_ddl("t", tags, policy)
    for bad in ["Pii", "pii:x", "a;b", "a,b", "pii@1", "`pii`", "", "x" * 129, "pii) DROP"]:
        with pytest.raises(ValueError, match="invalid key name"):
            ddl_policy({"levels": [{"name": "p", "key": bad}]})


def test_tags_for_another_table_are_refused(tmp_path):
    tags, policy = tmp_path / "tags.json", tmp_path / "policy.yaml"
    tags.write_text(json.dumps(TABLE_TAGS))
    policy.write_text(yaml.safe_dump(POLICY))
    runner = CliRunner()
    for extra in ([], ["--alter"]):
        result = runner.invoke(
            app, ["ddl", "sales.other", "--tags", str(tags), "--policy", str(policy), *extra]
        )
        assert result.exit_code == 1
        assert f"tags file {tags} is for table '{ENCRYPTED_TABLE}', not for 'sales.other'" in _flat(result)
    # the same table, spelled as Spark would also accept it
    for same in (ENCRYPTED_TABLE.upper(), f"`{ENCRYPTED_TABLE}`"):
        result = runner.invoke(app, ["ddl", same, "--tags", str(tags), "--policy", str(policy)])
        assert result.exit_code == 0, result.output
    table_tags = TableTags.model_validate(TABLE_TAGS)
    with pytest.raises(PolicyError, match="is for table"):
        create_table_ddl("db.enc_customers", table_tags, ddl_policy(POLICY))
