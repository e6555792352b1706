"""`watershed orc encrypt|decrypt|inspect` on an embedded keystore."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.orc as orc
import pytest
from typer.testing import CliRunner

from tests.orc_crypto.conftest import flat
from watershed.api.cli import app


def test_encrypt_inspect_decrypt(cli_keystore, tmp_path):
    table = pa.table({"id": list(range(1000)), "email": [f"User{i}@Example.com" for i in range(1000)]})
    source, encrypted, decrypted = tmp_path / "plain.orc", tmp_path / "enc.orc", tmp_path / "dec.orc"
    orc.write_table(table, str(source))
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "orc", "encrypt", str(source), str(encrypted), "--encrypt", "pii:email",
            "--mask", "redact,`Xx7`:email", "--keystore", str(cli_keystore),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "stripe 1/1" in flat(result) and "MB/s" in flat(result)
    assert orc.ORCFile(str(encrypted)).read().column("email")[3].as_py() == "Xxxx7.Xxxxxxx.xxx"
    inspected = runner.invoke(app, ["orc", "inspect", str(encrypted)])
    assert "key pii@0" in flat(inspected) and "mask redact,Xx7 columns [2]" in flat(inspected)
    result = runner.invoke(
        app, ["orc", "decrypt", str(encrypted), str(decrypted), "--keystore", str(cli_keystore)]
    )
    assert result.exit_code == 0, result.output
    assert orc.ORCFile(str(decrypted)).read().equals(table)


@pytest.mark.parametrize(
    ("arguments", "message", "code"),
    [
        (["--encrypt", "pii:nosuch"], "column 'nosuch' does not exist", 1),
        (["--encrypt", "pii:email", "--mask", "redact,0:3:email"], "unexpected text at position 10", 2),
        (["--encrypt", "pii:email", "--mask", "hash:email"], "unknown mask 'hash'", 1),
        (["--encrypt", "nokey:email"], "nokey", 1),
    ],
)
def test_encrypt_errors_name_the_cause(cli_keystore, tmp_path, arguments, message, code):
    source = tmp_path / "plain.orc"
    orc.write_table(pa.table({"id": [1, 2], "email": ["a@b.c", None]}), str(source))
    result = CliRunner().invoke(
        app,
        [
            "orc",
            "encrypt",
            str(source),
            str(tmp_path / "out.orc"),
            *arguments,
            "--keystore",
            str(cli_keystore),
        ],
    )
    assert result.exit_code == code
    assert message in flat(result)
    assert not (tmp_path / "out.orc").exists()
