"""`--format json` of `orc inspect`, `kms list` and `kms describe`: each parses into its model."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.orc as orc
import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.orc_crypto.views import KeyList, KeyMetadata, OrcFileDescription

runner = CliRunner()


def json_of(model, *args: str):
    result = runner.invoke(app, [*args, "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return model.model_validate_json(result.stdout)


def test_kms_list_and_describe_speak_json_without_material(cli_keystore):
    assert (
        runner.invoke(
            app, ["kms", "create-key", "pii_128", "--bits", "128", "--keystore", str(cli_keystore)]
        ).exit_code
        == 0
    )
    assert runner.invoke(app, ["kms", "roll", "pii", "--keystore", str(cli_keystore)]).exit_code == 0

    listed = json_of(KeyList, "kms", "list", "--keystore", str(cli_keystore))
    assert listed.keystore == str(cli_keystore)
    assert [(k.name, k.bit_length, k.versions) for k in listed.keys] == [("pii", 256, 2), ("pii_128", 128, 1)]

    described = runner.invoke(
        app, ["kms", "describe", "pii", "--keystore", str(cli_keystore), "--format", "json"]
    )
    key = KeyMetadata.model_validate_json(described.stdout)
    assert (key.name, key.cipher, key.bit_length, key.current_version) == ("pii", "AES/CTR/NoPadding", 256, 1)
    assert key.created.endswith("+00:00") and key.created_ms > 0
    # Metadata only: no field of the output could carry the key's bytes.
    assert set(KeyMetadata.model_fields) == set(key.model_dump()) and "material" not in described.stdout


def test_orc_inspect_speaks_json(cli_keystore, tmp_path):
    table = pa.table({"id": list(range(1000)), "email": [f"u{i}@example.com" for i in range(1000)]})
    source, encrypted = tmp_path / "plain.orc", tmp_path / "enc.orc"
    orc.write_table(table, str(source))
    result = runner.invoke(
        app,
        [
            "orc", "encrypt", str(source), str(encrypted), "--encrypt", "pii:email",
            "--mask", "redact,`Xx7`:email", "--keystore", str(cli_keystore),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output

    plain = json_of(OrcFileDescription, "orc", "inspect", str(source))
    assert not plain.encrypted and plain.rows == 1000 and not plain.keys and plain.stripes

    described = json_of(OrcFileDescription, "orc", "inspect", str(encrypted))
    assert described.encrypted and described.rows == 1000
    assert [(k.name, k.version) for k in described.keys] == [("pii", 0)]
    assert [(m.name, m.parameters, m.columns) for m in described.masks] == [("redact", ["Xx7"], [2])]
    assert [(v.root, v.key) for v in described.variants] == [(2, "pii")]
    stripe = described.stripes[0]
    assert stripe.rows == 1000 and len(stripe.variant_streams) == 1 and stripe.variant_streams[0]
    assert {s.column for s in stripe.variant_streams[0]} == {2}


@pytest.mark.parametrize("args", [("kms", "list"), ("kms", "describe", "pii"), ("orc", "inspect", "x.orc")])
def test_a_bad_format_is_a_usage_error(args):
    result = runner.invoke(app, [*args, "--format", "xml"])
    assert result.exit_code == 2 and "xml" in result.output
