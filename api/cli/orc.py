"""`watershed orc`: encrypt, decrypt and inspect ORC files with column encryption.

Keys come from a Hadoop-compatible KMS (`--kms kms://http@HOST:PORT/kms`) or from an embedded
keystore file (`--keystore PATH`, passphrase from WATERSHED_KEYSTORE_PASSPHRASE[_FILE]).
"""

from __future__ import annotations

from pathlib import Path

import typer

from watershed.api.cli.output import (
    OutputFormat,
    console,
    err_console,
    fail,
    format_option,
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
