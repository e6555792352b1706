"""Where `watershed orc encrypt|decrypt` write: never over their input unless asked, checked up
front, read back and verified before the rename, crash-safe, with the umask's mode."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as orc
import pytest
from typer.testing import CliRunner

from tests.orc_crypto.conftest import CLI_PASSPHRASE_ENV, flat
from watershed.api.cli import app
from watershed.orc_crypto.codec import kinds
from watershed.orc_crypto.codec.stripes import read_stripe_footer, stream_places
from watershed.orc_crypto.codec.tail import read_tail

REPO = Path(__file__).resolve().parents[2]
TABLE = pa.table(
    {
        "id": list(range(5000)),
        "name": [f"name-{i}" for i in range(5000)],
        "ssn": [f"{i * 7919:09d}" for i in range(5000)],
    }
)


def _write(path: Path, compression: str = "snappy", table: pa.Table = TABLE) -> bytes:
    orc.write_table(table, str(path), compression=compression, stripe_size=64 * 1024)
    return path.read_bytes()


def _encrypt(cli_keystore, source, *rest):
    return CliRunner().invoke(
        app,
        [
            "orc",
            "encrypt",
            str(source),
            *map(str, rest),
            "--encrypt",
            "pii:ssn",
            "--keystore",
            str(cli_keystore),
        ],
    )


def _decrypt(cli_keystore, source, *rest):
    return CliRunner().invoke(
        app, ["orc", "decrypt", str(source), *map(str, rest), "--keystore", str(cli_keystore)]
    )


def _refused(result, source: Path, before: bytes) -> None:
    assert result.exit_code == 1, result.output
    assert "is the input file" in flat(result) and "--in-place" in flat(result)
    assert "Traceback" not in result.output
    assert source.read_bytes() == before


# --- item 5: the output equal to the input ---------------------------------------------------------


@pytest.mark.parametrize("spelling", ["same", "dot", "absolute", "hardlink", "symlink"])
def test_output_equal_to_input_is_refused(cli_keystore, tmp_path, monkeypatch, spelling):
    source = tmp_path / "plain.orc"
    before = _write(source)
    monkeypatch.chdir(tmp_path)
    target = {
        "same": Path("plain.orc"),
        "dot": Path("./plain.orc"),
        "absolute": source.resolve(),
        "hardlink": tmp_path / "link.orc",
        "symlink": tmp_path / "sym.orc",
    }[spelling]
    if spelling == "hardlink":
        os.link(source, target)
    if spelling == "symlink":
        target.symlink_to(source)
    _refused(_encrypt(cli_keystore, "plain.orc", target), source, before)
    # decrypt the same way: an encrypted input, its output spelled as the input
    encrypted = tmp_path / "enc.orc"
    assert _encrypt(cli_keystore, source, encrypted).exit_code == 0
    encrypted_before = encrypted.read_bytes()
    alias = {"same": "enc.orc", "dot": "./enc.orc", "absolute": str(encrypted.resolve())}.get(spelling)
    if alias is None:
        alias = tmp_path / f"{spelling}-enc.orc"
        if spelling == "hardlink":
            os.link(encrypted, alias)
        else:
            alias.symlink_to(encrypted)
    _refused(_decrypt(cli_keystore, "enc.orc", alias), encrypted, encrypted_before)


def test_in_place_replaces_the_input_keeping_its_mode(cli_keystore, tmp_path):
    source = tmp_path / "plain.orc"
    _write(source)
    link = tmp_path / "sym.orc"
    link.symlink_to(source)
    source.chmod(0o640)
    result = _encrypt(cli_keystore, link, "--in-place")  # the output may be left out with --in-place
    assert result.exit_code == 0, result.output
    assert link.is_symlink(), "the file the link points to is replaced, not the link"
    assert read_tail(str(source)).is_encrypted
    assert orc.ORCFile(str(source)).read().column("ssn").null_count == TABLE.num_rows
    assert source.stat().st_mode & 0o777 == 0o640
    result = _decrypt(cli_keystore, source, source, "--in-place")
    assert result.exit_code == 0, result.output
    assert orc.ORCFile(str(source)).read().equals(TABLE)
    assert source.stat().st_mode & 0o777 == 0o640
    other = _encrypt(cli_keystore, source, tmp_path / "other.orc", "--in-place")
    assert other.exit_code == 2 and "--in-place replaces the input" in flat(other)
    assert not (tmp_path / "other.orc").exists()
    assert _encrypt(cli_keystore, source).exit_code == 2  # no output and no --in-place


def _temps(directory: Path, name: str) -> list[Path]:
    return sorted(
        p for p in directory.iterdir() if p.name.startswith(f".{name}.") and p.name.endswith(".tmp")
    )


def test_killed_in_place_encrypt_keeps_the_original_and_its_temp_file_is_cleaned(cli_keystore, tmp_path):
    """SIGKILL a real `orc encrypt --in-place` while it writes: the input is unchanged; the next
    run removes the dead writer's temp file but not one whose writer lives."""
    rows = 400_000
    big = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "ssn": [f"{i * 7919:09d}-{i}" for i in range(rows)],
            "note": [f"note {i} " * 4 for i in range(rows)],
        }
    )
    source = tmp_path / "big.orc"
    orc.write_table(big, str(source), compression="zlib", stripe_size=256 * 1024)
    before = source.read_bytes()
    assert len(read_tail(str(source)).footer.stripes) > 10
    env = {**os.environ, **CLI_PASSPHRASE_ENV}
    command = [str(Path(sys.executable).with_name("watershed")), "orc", "encrypt", str(source), "--in-place"]
    command += [
        "--encrypt",
        "pii:ssn",
        "--mask",
        "sha256:ssn",
        "--keystore",
        str(cli_keystore),
        "--workers",
        "1",
    ]
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            temps = _temps(tmp_path, "big.orc")
            if temps and temps[0].stat().st_size > 100_000:
                break
            time.sleep(0.005)
        process.send_signal(signal.SIGSTOP)  # freeze it mid-write, then look, then kill
        temps = _temps(tmp_path, "big.orc")
        assert process.poll() is None and temps, process.stdout.read().decode() if process.poll() else ""
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
    assert source.read_bytes() == before
    assert re.fullmatch(rf"\.big\.orc\.{process.pid}\.[0-9a-f]{{16}}\.tmp", temps[0].name)
    assert _temps(tmp_path, "big.orc") == temps  # left behind by the killed writer

    # a temp file whose writer is alive (this test's process) must survive the cleaning
    live = tmp_path / f".big.orc.{os.getpid()}.0123456789abcdef.tmp"
    live.write_bytes(b"in progress")
    unrelated = tmp_path / ".big.orc.notours.tmp"
    unrelated.write_bytes(b"someone else's")
    small = tmp_path / "small.orc"
    _write(small)
    result = _encrypt(cli_keystore, small, source.with_name("big.orc.enc"))
    assert result.exit_code == 0
    assert _temps(tmp_path, "big.orc") == sorted([temps[0], live, unrelated]), "another target's run"
    # the next run for the same target removes the dead writer's temp file
    result = _decrypt(cli_keystore, small, source)
    assert result.exit_code == 0, result.output
    assert _temps(tmp_path, "big.orc") == sorted([live, unrelated])
    assert not temps[0].exists()


# --- item 20: the output checked up front -----------------------------------------------------------


@pytest.mark.parametrize("command", ["encrypt", "decrypt"])
def test_output_into_a_missing_directory_or_onto_a_directory_fails_up_front(cli_keystore, tmp_path, command):
    source = tmp_path / "plain.orc"
    _write(source)
    if command == "decrypt":
        assert _encrypt(cli_keystore, source, tmp_path / "enc.orc").exit_code == 0
        source = tmp_path / "enc.orc"
    run = _encrypt if command == "encrypt" else _decrypt
    before = sorted(tmp_path.iterdir())
    missing = tmp_path / "no" / "such" / "out.orc"
    result = run(cli_keystore, source, missing)
    assert result.exit_code == 1 and not isinstance(result.exception, OSError)
    assert f"{missing}: cannot write the output: directory {missing.parent} does not exist" in flat(result)
    assert "stripe" not in result.output and "Traceback" not in result.output  # before any work
    directory = tmp_path / "outdir"
    directory.mkdir()
    result = run(cli_keystore, source, directory)
    assert result.exit_code == 1 and not isinstance(result.exception, OSError)
    assert f"{directory}: is a directory" in flat(result)
    assert "stripe" not in result.output
    assert list(directory.iterdir()) == []
    assert sorted(tmp_path.iterdir()) == sorted([*before, directory])


# --- item 21: the mode of an output follows the umask ---------------------------------------------------


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_output_mode_follows_the_umask(cli_keystore, tmp_path, umask):
    source = tmp_path / "plain.orc"
    _write(source)
    previous = os.umask(umask)
    try:
        assert _encrypt(cli_keystore, source, tmp_path / "enc.orc").exit_code == 0
        assert _decrypt(cli_keystore, tmp_path / "enc.orc", tmp_path / "dec.orc").exit_code == 0
    finally:
        os.umask(previous)
    for name in ("enc.orc", "dec.orc"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o666 & ~umask


# --- item 17: what is written is verified -----------------------------------------------------------


def _damage(path: Path, column: int, kind: int, compressed: bool) -> int:
    """Flip bytes of the last stripe's `column`/`kind` stream (an unencrypted one) so pyarrow
    cannot read it; returns that stripe's number."""
    data = bytearray(path.read_bytes())
    tail = read_tail(str(path), bytes(data))
    last = len(tail.footer.stripes) - 1
    place = next(
        p
        for p in stream_places(tail, last, read_stripe_footer(tail, bytes(data), last))
        if p.column == column and p.kind == kind and p.variant is None
    )
    if compressed:
        data[place.offset + 3] ^= 0xFF  # the first byte of the first chunk's body
        data[place.offset + 4] ^= 0xFF
    else:
        data[place.offset : place.offset + 4] = b"\xff\xff\xff\xff"  # an RLE header past the data
    path.write_bytes(bytes(data))
    with pytest.raises(Exception):  # noqa: B017 - pyarrow's error types vary by codec
        orc.ORCFile(io.BytesIO(bytes(data))).read()
    return last


@pytest.mark.parametrize(
    ("compression", "column", "kind"),
    [("zlib", 1, kinds.DATA), ("snappy", 2, kinds.LENGTH), ("uncompressed", 1, kinds.DATA)],
)
@pytest.mark.parametrize("command", ["encrypt", "decrypt"])
def test_damaged_stream_data_fails_verification_and_leaves_the_target(
    cli_keystore, tmp_path, command, compression, column, kind
):
    source = tmp_path / "plain.orc"
    _write(source, compression)
    target = tmp_path / "out.orc"
    target.write_bytes(b"what the target held")
    if command == "decrypt":
        assert _encrypt(cli_keystore, source, tmp_path / "enc.orc").exit_code == 0
        source = tmp_path / "enc.orc"
    stripe = _damage(source, column, kind, compression != "uncompressed")
    run = _encrypt if command == "encrypt" else _decrypt
    result = run(cli_keystore, source, target)
    assert result.exit_code == 1, result.output
    message = flat(result)
    assert f"{target}: verification failed" in message and f"stripe {stripe}" in message, message
    # decompression names the column's number and stream; decoding names the top-level column
    assert f"column {column} " in message or f"column {TABLE.column_names[column - 1]}:" in message
    assert "Traceback" not in result.output
    assert target.read_bytes() == b"what the target held"
    assert _temps(tmp_path, "out.orc") == []


def test_full_verification_decodes_the_encrypted_columns_of_the_input(cli_keystore, tmp_path):
    """Damage in an encrypted column of an uncompressed input: the output holds it only as
    ciphertext, so the full check decodes it from the input."""
    source = tmp_path / "plain.orc"
    _write(source, "uncompressed")
    _damage(source, 3, kinds.LENGTH, compressed=False)
    target = tmp_path / "out.orc"
    result = _encrypt(cli_keystore, source, target)
    assert result.exit_code == 1, result.output
    assert "verification failed" in flat(result) and "column ssn:" in flat(result)
    assert not target.exists()
    # the fast check alone cannot see it (nothing to decompress), and says nothing
    assert _encrypt(cli_keystore, source, target, "--verify", "fast").exit_code == 0
    bad = _encrypt(cli_keystore, source, tmp_path / "x.orc", "--verify", "quick")
    assert bad.exit_code == 2 and "--verify" in flat(bad)
