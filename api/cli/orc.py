"""`watershed orc`: encrypt, decrypt and inspect ORC files with column encryption.

Keys come from a Hadoop-compatible KMS (`--kms kms://http@HOST:PORT/kms`) or from an embedded
keystore file (`--keystore PATH`, passphrase from WATERSHED_KEYSTORE_PASSPHRASE[_FILE]).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer

from watershed.api.cli.output import (
    OutputFormat,
    console,
    err_console,
    fail,
    format_option,
    styled,
    usage_error,
    write_model,
)

app = typer.Typer(
    help="Encrypt, decrypt and inspect ORC files with ORC column encryption.", no_args_is_help=True
)

KMS_HELP = "Hadoop KMS provider URI, e.g. kms://http@127.0.0.1:9600/kms."
KEYSTORE_HELP = "Embedded keystore file (passphrase from WATERSHED_KEYSTORE_PASSPHRASE or ..._FILE)."
TARGET_HELP = (
    "ORC file to write: a temp file beside it, read back and verified, then renamed over it. "
    "It may be the input only with --in-place (then it can be left out)."
)
IN_PLACE_HELP = "Replace the input file; it stays as it was until the new file is written and verified."
VERIFY_HELP = (
    "How the written file is checked before it replaces the target: fast (row counts, every stream "
    "decompresses), full (also decodes every stripe with the ORC library, about 2x the time), or "
    "auto: full for an uncompressed file, fast otherwise."
)


def _target(source: Path, target: Path | None, in_place: bool) -> Path:
    import os

    if target is None:
        if not in_place:
            usage_error("give the output file, or --in-place to replace the input")
        return source
    if in_place:
        try:
            same = os.path.samefile(source, target)
        except OSError:
            same = False
        if not same:
            usage_error(f"--in-place replaces the input: {target} is not {source} (leave the output out)")
    return target


def _verify_level(verify: str) -> str:
    from watershed.orc_crypto.verify import VERIFY_LEVELS

    if verify not in VERIFY_LEVELS:
        usage_error(f"--verify {verify!r}: expected one of {', '.join(VERIFY_LEVELS)}")
    return verify


def _provider(kms: str | None, keystore: Path | None):
    from watershed.orc_crypto.keys.base import KeyProviderError

    if bool(kms) == bool(keystore):
        usage_error("give exactly one of --kms or --keystore")
    try:
        if kms:
            from watershed.orc_crypto.keys.kms_client import KmsClient

            return KmsClient(kms)
        from watershed.orc_crypto.keys.embedded import EmbeddedKeystore, passphrase_from_environment

        return EmbeddedKeystore.open(keystore, passphrase_from_environment())
    except (KeyProviderError, ValueError) as exc:
        fail(f"{kms or keystore}: {exc}")


def _check_output(source: Path, target: Path, in_place: bool) -> None:
    """The output is checked before the keys are opened or any work is done."""
    from watershed.orc_crypto.errors import OrcCryptoError
    from watershed.orc_crypto.files import check_output

    try:
        check_output(source, target, in_place=in_place)
    except OrcCryptoError as exc:
        fail(str(exc))


@app.command("encrypt")
def encrypt_command(
    source: Path = typer.Argument(..., help="Plaintext ORC file to read (modified only with --in-place)."),
    target: Path | None = typer.Argument(None, help=TARGET_HELP),
    encrypt: str = typer.Option(
        ..., "--encrypt", help='Columns per master key, e.g. "pii:ssn,email;fin:salary".'
    ),
    mask: str = typer.Option(
        "",
        "--mask",
        help='Masks per column in orc.mask syntax, e.g. "sha256:email;redact,`Xx9`:name" '
        "(nullify | sha256 | redact[,params]; an encrypted column without one is nullified).",
    ),
    kms: str | None = typer.Option(None, "--kms", help=KMS_HELP),
    keystore: Path | None = typer.Option(None, "--keystore", help=KEYSTORE_HELP),
    workers: int = typer.Option(
        0, "--workers", min=0, help="Threads rewriting stripes (0: one per core, up to 4)."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines."),
    in_place: bool = typer.Option(False, "--in-place", help=IN_PLACE_HELP),
    verify: str = typer.Option("auto", "--verify", help=VERIFY_HELP),
) -> None:
    """Encrypt columns of a plaintext ORC file as ORC Java would write them.

    Columns are named as ORC's options name them: top-level names, dotted struct paths,
    `_elem`/`_key`/`_value`, column numbers; back-quote names with other characters.
    """
    import time

    from watershed.orc_crypto.encrypt import encrypt_file, parse_encrypt_option, parse_mask_option
    from watershed.orc_crypto.errors import OrcCryptoError

    target = _target(source, target, in_place)
    verify = _verify_level(verify)
    try:
        columns, masks = parse_encrypt_option(encrypt), parse_mask_option(mask)
    except ValueError as exc:
        usage_error(str(exc))
    _check_output(source, target, in_place)
    provider = _provider(kms, keystore)
    try:
        size = source.stat().st_size  # before the run: --in-place replaces it
    except OSError as exc:
        fail(f"{source}: cannot read: {exc.strerror or exc}")
    started = time.monotonic()
    last_report = [started]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if not quiet and (done == total or now - last_report[0] >= 2):
            last_report[0] = now
            err_console.print(f"stripe {done}/{total} ({now - started:.1f} s)", highlight=False)

    try:
        encrypt_file(
            source,
            target,
            provider,
            columns,
            masks,
            workers=workers or None,
            progress=progress,
            in_place=in_place,
            verify=verify,
        )
    except OrcCryptoError as exc:
        fail(str(exc))
    seconds = time.monotonic() - started
    console.print(
        f"wrote {target} ({size / 1e6:.1f} MB read in {seconds:.1f} s, {size / 1e6 / max(seconds, 1e-9):.0f} MB/s)"
    )


@app.command("decrypt")
def decrypt_command(
    source: Path = typer.Argument(..., help="Encrypted ORC file to read (modified only with --in-place)."),
    target: Path | None = typer.Argument(None, help=TARGET_HELP),
    kms: str | None = typer.Option(None, "--kms", help=KMS_HELP),
    keystore: Path | None = typer.Option(None, "--keystore", help=KEYSTORE_HELP),
    in_place: bool = typer.Option(False, "--in-place", help=IN_PLACE_HELP),
    verify: str = typer.Option("auto", "--verify", help=VERIFY_HELP),
) -> None:
    """Decrypt every encrypted column of an ORC file into a plaintext ORC file."""
    from watershed.orc_crypto.decrypt import decrypt_file
    from watershed.orc_crypto.errors import OrcCryptoError

    target = _target(source, target, in_place)
    verify = _verify_level(verify)
    _check_output(source, target, in_place)
    provider = _provider(kms, keystore)
    try:
        decrypt_file(source, target, provider, in_place=in_place, verify=verify)
    except OrcCryptoError as exc:
        fail(str(exc))
    console.print(f"wrote {target}")


@app.command("inspect")
def inspect_command(
    file: Path = typer.Argument(..., help="ORC file to describe."),
    output: OutputFormat = format_option("Output format: lines, or JSON (the OrcFileDescription model)."),
) -> None:
    """Show the tail and the encryption layout of an ORC file (no keys needed)."""
    from watershed.orc_crypto.errors import OrcCryptoError
    from watershed.orc_crypto.views import describe_orc

    try:
        d = describe_orc(file)
    except OrcCryptoError as exc:
        fail(str(exc))
    if output is OutputFormat.json:
        write_model(d)
        return

    def streams(items) -> str:
        return str([(x.kind, x.column, x.length) for x in items])

    console.print(
        f"{file}: {d.file_length} bytes, version {d.version}, "
        f"compression {d.compression} (block {d.compression_block_size}), "
        f"writer version {d.writer_version}, {d.rows} rows, {len(d.stripes)} stripes"
    )
    console.print(
        f"content {d.content_length}, encrypted stripe statistics {d.stripe_statistics_length} "
        f"at {d.stripe_statistics_offset}, metadata {d.metadata_length}, footer {d.footer_length}"
    )
    if not d.encrypted:
        console.print("not encrypted")
    for key in d.keys:
        console.print(f"key {key.name}@{key.version} algorithm {key.algorithm}")
    for mask in d.masks:
        console.print(f"mask {','.join([mask.name, *mask.parameters])} columns {mask.columns}")
    for v, variant in enumerate(d.variants):
        console.print(
            f"variant {v}: root {variant.root}, key {variant.key}, "
            f"stripe statistics {[(s.column, s.length) for s in variant.stripe_statistics]}, "
            f"file statistics {variant.file_statistics_bytes} bytes"
        )
    for s, stripe in enumerate(d.stripes):
        console.print(
            f"stripe {s}: offset {stripe.offset}, rows {stripe.rows}, index {stripe.index_length}, "
            f"data {stripe.data_length}, footer {stripe.footer_length}"
            + (
                f", encrypt stripe id {stripe.encrypt_stripe_id}"
                if stripe.encrypt_stripe_id is not None
                else ""
            )
        )
        console.print(f"  streams {streams(stripe.streams)}")
        for v, variant_streams in enumerate(stripe.variant_streams):
            console.print(f"  variant {v} streams {streams(variant_streams)}")


class ReadFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def _cell(value) -> str | int | float | bool | None:
    """A value as JSON or CSV carry it: nested values as JSON text, others as they print."""
    import json

    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str, ensure_ascii=False)
    return str(value)


def _render(table, output: ReadFormat) -> str:
    import csv
    import io
    import json

    rows = table.to_pylist()
    if output is ReadFormat.json:
        return json.dumps(rows, default=str, ensure_ascii=False, indent=2) + "\n"
    buffer = io.StringIO()
    if output is ReadFormat.csv:
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(table.column_names)
        writer.writerows([_cell(row[name]) for name in table.column_names] for row in rows)
        return buffer.getvalue()
    cells = [
        [("null" if v is None else str(_cell(v))) for v in (row[n] for n in table.column_names)]
        for row in rows
    ]
    widths = [max([len(name), *(len(r[i]) for r in cells)]) for i, name in enumerate(table.column_names)]
    lines = ["  ".join(name.ljust(w) for name, w in zip(table.column_names, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines) + "\n"


@app.command("read")
def read_command(
    file: Path = typer.Argument(..., help="ORC file to read (encrypted or not)."),
    columns: str | None = typer.Option(
        None, "--columns", "-c", help="Top-level columns, comma-separated (default: all)."
    ),
    stripes: str | None = typer.Option(
        None, "--stripes", help='Stripes by index from 0, e.g. "0,2-3" (default: all).'
    ),
    kms: str | None = typer.Option(None, "--kms", help=KMS_HELP),
    keystore: Path | None = typer.Option(None, "--keystore", help=KEYSTORE_HELP),
    output: ReadFormat = typer.Option(
        ReadFormat.table,
        "--format",
        "-f",
        case_sensitive=False,
        help="table, json (an array of rows) or csv.",
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write the rows to this file (atomically)."),
    limit: int | None = typer.Option(None, "--limit", min=0, help="At most this many rows."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary line on standard error."),
) -> None:
    """Print the rows of chosen columns and stripes, decrypting only the byte ranges they need.

    With a key (--kms or --keystore) encrypted columns are plaintext; without one, or where the
    key is refused, they are the masked copy the file stores (as ORC Java readers see them).
    """
    from watershed.orc_crypto.errors import OrcCryptoError
    from watershed.orc_crypto.files import write_atomically
    from watershed.orc_crypto.read import ReadStats, parse_stripes, read_orc

    names = None
    if columns is not None:
        names = [c.strip() for c in columns.split(",") if c.strip()]
        if not names:
            usage_error(f"--columns {columns!r}: no column names")
    chosen = None
    if stripes is not None:
        try:
            chosen = parse_stripes(stripes)
        except ValueError as exc:
            usage_error(str(exc))
    provider = _provider(kms, keystore) if (kms or keystore) else None
    stats = ReadStats()
    try:
        table = read_orc(file, names, chosen, provider, stats)
        if limit is not None:
            table = table.slice(0, limit)
        text = _render(table, output)
        if out is not None:
            write_atomically(out, text.encode())
    except OrcCryptoError as exc:
        fail(str(exc))
    if out is None:
        import sys

        sys.stdout.write(text)
        sys.stdout.flush()
    if not quiet:
        masked = f", masked variants {stats.masked_variants}" if stats.masked_variants else ""
        err_console.print(
            f"{table.num_rows} rows; read {stats.bytes_read} bytes, decrypted {stats.bytes_decrypted}{masked}"
        )


@app.command("rewrap")
def rewrap_command(
    files: list[Path] = typer.Argument(
        ..., help="Encrypted ORC files to move to the keys' current versions."
    ),
    kms: str | None = typer.Option(None, "--kms", help=KMS_HELP),
    keystore: Path | None = typer.Option(None, "--keystore", help=KEYSTORE_HELP),
    key_version: list[str] = typer.Option(
        [],
        "--key-version",
        help="NAME=N: move key NAME to version N instead of its current one (repeatable).",
    ),
    output: OutputFormat = format_option("Output format: lines, or JSON (a list of RewrapResult)."),
) -> None:
    """After `watershed kms roll KEY`: give each file's encrypted columns a new local key under the
    key's current version, re-keying only the encrypted streams and statistics in place (every
    other byte of the stripes is copied). A file already at the current versions is left alone.
    Each file is replaced atomically; a failure leaves that file as it was and the others done."""
    import json

    from watershed.api.cli.output import parse_assignments
    from watershed.orc_crypto.errors import OrcCryptoError
    from watershed.orc_crypto.rewrap import rewrap_file

    versions = None
    if key_version:
        versions = {}
        for name, raw in parse_assignments(key_version, "--key-version").items():
            if not raw.strip().isdigit():
                usage_error(f"--key-version {name}={raw}: the version must be a number")
            versions[name] = int(raw)
    provider = _provider(kms, keystore)
    results, failures = [], 0
    for file in files:
        try:
            result = rewrap_file(file, provider, key_versions=versions)
        except OrcCryptoError as exc:
            failures += 1
            err_console.print(styled(("error:", "bold red"), " ", str(exc)))
            continue
        results.append(result)
        if output is OutputFormat.table:
            moves = ", ".join(
                f"{n}@{result.versions_before[n]}->{result.versions_after[n]}"
                for n in sorted(result.versions_after)
            )
            state = (
                f"rewrapped ({moves}; {result.bytes_rekeyed} bytes re-keyed of {result.file_bytes}, {result.seconds:.2f} s)"
                if result.changed
                else f"unchanged ({moves or 'not encrypted'})"
            )
            console.print(f"{file}: {state}")
    if output is OutputFormat.json:
        import sys

        sys.stdout.write(json.dumps([r.model_dump() for r in results], indent=2) + "\n")
    if failures:
        raise typer.Exit(1)
