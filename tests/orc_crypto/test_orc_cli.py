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


def test_read_and_rewrap(cli_keystore, tmp_path):
    """`orc read` with and without the key, one stripe, json/csv/table, --out; then `kms roll` and
    `orc rewrap`: the file names pii@1, reads the same, and a second rewrap leaves it alone."""
    import json

    rows = 3000
    table = pa.table({"id": list(range(rows)), "email": [f"user{i}@example.com" for i in range(rows)]})
    source, encrypted = tmp_path / "plain.orc", tmp_path / "enc.orc"
    orc.write_table(table, str(source), stripe_size=16 * 1024)
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "orc", "encrypt", str(source), str(encrypted), "--encrypt", "pii:email",
            "--mask", "sha256:email", "--keystore", str(cli_keystore), "-q",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    stripes = orc.ORCFile(str(encrypted)).nstripes
    assert stripes >= 2
    first = orc.ORCFile(str(encrypted)).read_stripe(0).num_rows
    keyed = ["--keystore", str(cli_keystore)]
    result = runner.invoke(
        app, ["orc", "read", str(encrypted), "--columns", "email,id", "--stripes", "1", "-f", "json", *keyed]
    )
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got[0] == {"email": f"user{first}@example.com", "id": first}
    assert "decrypted" in result.stderr
    result = runner.invoke(
        app, ["orc", "read", str(encrypted), "-c", "email", "--limit", "2", "-f", "csv", "-q"]
    )
    assert result.exit_code == 0, result.output
    masked = orc.ORCFile(str(encrypted)).read().column("email").to_pylist()[:2]
    assert result.stdout == "email\n" + "".join(f"{m}\n" for m in masked)
    out = tmp_path / "rows.txt"
    result = runner.invoke(
        app, ["orc", "read", str(encrypted), "--limit", "1", "--out", str(out), "-q", *keyed]
    )
    assert result.exit_code == 0 and result.stdout == ""
    assert out.read_text().split() == ["id", "email", "0", "user0@example.com"]
    bad = runner.invoke(app, ["orc", "read", str(encrypted), "--stripes", "1-x"])
    assert bad.exit_code == 2 and "'1-x'" in flat(bad)
    bad = runner.invoke(app, ["orc", "read", str(encrypted), "-c", "nope"])
    assert bad.exit_code == 1 and "no top-level column 'nope'" in flat(bad)

    assert runner.invoke(app, ["kms", "roll", "pii", *keyed]).exit_code == 0
    result = runner.invoke(app, ["orc", "rewrap", str(encrypted), *keyed])
    assert result.exit_code == 0, result.output
    assert "rewrapped (pii@0->1" in flat(result)
    assert "key pii@1" in flat(runner.invoke(app, ["orc", "inspect", str(encrypted)]))
    result = runner.invoke(app, ["orc", "read", str(encrypted), "-f", "json", "-q", *keyed])
    assert json.loads(result.stdout) == table.to_pylist()
    result = runner.invoke(
        app, ["orc", "rewrap", str(encrypted), str(tmp_path / "missing.orc"), "-f", "json", *keyed]
    )
    assert result.exit_code == 1 and "missing.orc" in result.stderr
    assert [r["changed"] for r in json.loads(result.stdout)] == [False]
