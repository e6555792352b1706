"""`watershed kms`: the embedded Hadoop-KMS-compatible key server and its keystore.

The keystore passphrase is read from WATERSHED_KEYSTORE_PASSPHRASE or from the file named by
WATERSHED_KEYSTORE_PASSPHRASE_FILE, never from the command line (it would show in `ps`).
"""

from __future__ import annotations

import getpass
import ipaddress
from datetime import UTC, datetime
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
    help=(
        "The embedded KMS: serve master keys over the Hadoop KMS REST API and manage the keystore. "
        "The keystore passphrase comes from WATERSHED_KEYSTORE_PASSPHRASE or the file named by "
        "WATERSHED_KEYSTORE_PASSPHRASE_FILE."
    ),
    no_args_is_help=True,
)

KEYSTORE_HELP = "Embedded keystore file (default: WATERSHED_KEYSTORE_PATH or DATA_DIR/kms/keystore.json)."


def _keystore_path(path: Path | None) -> Path:
    from watershed.orc_crypto.keys.embedded import KeystoreSettings

    return path or KeystoreSettings().keystore_path


def _open_keystore(path: Path | None, *, create: bool = False):
    from watershed.orc_crypto.keys.base import KeyProviderError
    from watershed.orc_crypto.keys.embedded import EmbeddedKeystore, passphrase_from_environment

    path = _keystore_path(path)
    try:
        passphrase = passphrase_from_environment()
        if not path.exists():
            if not create:
                fail(f"keystore {path} does not exist; create a key first with `watershed kms create-key`")
            err_console.print(f"creating keystore {path}")
        if create:
            # Under the keystore lock: two commands creating the keystore at once make one file.
            return EmbeddedKeystore.open_or_create(path, passphrase)
        return EmbeddedKeystore.open(path, passphrase)
    except KeyProviderError as exc:
        fail(str(exc))


def _describe_lines(record) -> list[str]:
    created = datetime.fromtimestamp(record.created_ms / 1000, tz=UTC).isoformat(timespec="seconds")
    lines = [
        f"name:        {record.name}",
        f"cipher:      {record.cipher}",
        f"bits:        {record.bit_length}",
        f"versions:    {len(record.versions)} (current {record.name}@{record.current_version})",
        f"created:     {created}",
        f"description: {record.description or ''}",
    ]
    lines += [f"attribute:   {k}={v}" for k, v in sorted(record.attributes.items())]
    return lines


@app.command("serve")
def serve_command(
    host: str = typer.Option(
        None, "--host", help="Address to listen on (default 127.0.0.1; WATERSHED_KMS_HOST)."
    ),
    port: int = typer.Option(None, "--port", help="Port to listen on (default 9600; WATERSHED_KMS_PORT)."),
    keystore: Path = typer.Option(None, "--keystore", help=KEYSTORE_HELP),
    jceks: Path = typer.Option(
        None,
        "--jceks",
        help="Serve a Hadoop JCEKS keystore instead (read-only; password from HADOOP_KEYSTORE_PASSWORD, else 'none').",
    ),
    acl: Path = typer.Option(
        None,
        "--acl",
        help=(
            "ACL file (YAML): `admins: [users]`, `list: [users]`, `keys: {KEY: {metadata, decrypt_eek, "
            "generate_eek, read, management: [users]}}`; '*' is any user; unlisted keys are denied. "
            "Default: only the user running the server, with every right."
        ),
    ),
    audit_log: Path = typer.Option(
        None, "--audit-log", help="Audit log file, one JSON line per key operation."
    ),
    auth: str = typer.Option(
        None,
        "--auth",
        help=(
            "token (default; WATERSHED_KMS_AUTH): only delegation tokens signed with the server secret. "
            "pseudo: trust the user.name a client claims; only for tests of Spark's own KMS client."
        ),
    ),
    secret_file: Path = typer.Option(
        None,
        "--secret-file",
        help="Server secret, generated on first start, mode 0600 (default DATA_DIR/kms/kms.secret, DATA_DIR being WATERSHED_DATA_DIR or var; WATERSHED_KMS_SECRET_FILE).",
    ),
    token_file: Path = typer.Option(
        None,
        "--token-file",
        help=(
            "Where the owner's delegation token is written, mode 0600 (default DATA_DIR/kms/kms.token; "
            "WATERSHED_KMS_TOKEN_FILE). Give it to Spark as HADOOP_TOKEN_FILE_LOCATION."
        ),
    ),
    allow_key_material_read: bool = typer.Option(
        None,
        "--allow-key-material-read/--no-key-material-read",
        help="Serve key material over REST (_currentversion, keyversion, _versions); off by default.",
        show_default=False,
    ),
) -> None:
    """Serve the keystore over the Hadoop KMS REST API at http://HOST:PORT/kms (provider kms://http@HOST:PORT/kms)."""
    from watershed.graph.extras import require_extra
    from watershed.orc_crypto.keys.base import KeyProviderError
    from watershed.orc_crypto.kms.acl import AclError, KeyAcls

    require_extra("kms", "fastapi", "uvicorn", purpose="watershed kms serve")
    if jceks is not None:
        require_extra("jceks", "jks", purpose="watershed kms serve --jceks")
    from watershed.orc_crypto.kms.server import KmsSettings, prepare_auth, provider_uri, serve_forever

    settings = KmsSettings()
    host = host or settings.kms_host
    port = port or settings.kms_port
    if keystore is not None and jceks is not None:
        usage_error("--keystore and --jceks are exclusive: serve one keystore")
    if not 0 < port < 65536:
        usage_error(f"--port {port}: not a TCP port")
    if auth is not None and auth not in ("token", "pseudo"):
        usage_error(f"--auth {auth}: expected token or pseudo")
    overrides = {
        "kms_auth": auth,
        "kms_secret_file": secret_file,
        "kms_token_file": token_file,
        "kms_allow_material_read": allow_key_material_read,
    }
    settings = settings.model_copy(update={k: v for k, v in overrides.items() if v is not None})
    try:
        if jceks is not None:
            from watershed.orc_crypto.keys.jceks import JceksKeystore

            backend = JceksKeystore(jceks)
        else:
            backend = _open_keystore(keystore)
        acl_file = acl or settings.kms_acl_file
        acls = KeyAcls.load(acl_file) if acl_file else KeyAcls.owner_only(getpass.getuser())
    except (KeyProviderError, AclError) as exc:
        fail(str(exc))
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        err_console.print(
            styled(("warning:", "yellow"), f" listening on {host} without TLS: tokens travel in clear")
        )
    if settings.kms_auth == "pseudo":
        err_console.print(
            styled(
                ("warning:", "yellow"),
                " --auth pseudo trusts any claimed user.name: for tests of Spark's own KMS client only",
            )
        )
    try:
        kms_auth = prepare_auth(settings, host, port)
    except (KeyProviderError, OSError) as exc:
        fail(str(exc))
    audit_path = audit_log or settings.kms_audit_log
    if audit_path is not None:
        audit_path.parent.mkdir(parents=True, exist_ok=True)
    console.print(
        f"KMS on {provider_uri(host, port)} serving {len(backend.names())} keys; audit log {audit_path}; "
        f"token file {settings.kms_token_file} (HADOOP_TOKEN_FILE_LOCATION)"
    )
    try:
        serve_forever(backend, acls, host=host, port=port, audit_path=audit_path, auth=kms_auth)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


@app.command("create-key")
def create_key_command(
    name: str = typer.Argument(..., help="Key name (lowercase letters, digits, '_', '.', '-')."),
    bits: int = typer.Option(256, "--bits", help="Key length: 128 (AES_CTR_128) or 256 (AES_CTR_256)."),
    description: str = typer.Option(None, "--description", help="Free text stored with the key."),
    keystore: Path = typer.Option(None, "--keystore", help=KEYSTORE_HELP + " Created if missing."),
) -> None:
    """Create a master key (version NAME@0) in the embedded keystore."""
    from watershed.orc_crypto.keys.base import KeyProviderError

    store = _open_keystore(keystore, create=True)
    try:
        record = store.create_key(name, bits=bits, description=description)
    except KeyProviderError as exc:
        fail(str(exc))
    console.print(f"created {record.name}@0 ({record.bit_length} bits) in {store.path}")


@app.command("roll")
def roll_command(
    name: str = typer.Argument(..., help="Key to roll over."),
    keystore: Path = typer.Option(None, "--keystore", help=KEYSTORE_HELP),
) -> None:
    """Add a new version of a key; new files use it, existing files keep decrypting with theirs."""
    from watershed.orc_crypto.keys.base import KeyProviderError

    store = _open_keystore(keystore)
    try:
        record = store.roll_key(name)
    except KeyProviderError as exc:
        fail(str(exc))
    console.print(f"rolled {name}: current version {name}@{record.current_version}")


@app.command("list")
def list_command(
    keystore: Path = typer.Option(None, "--keystore", help=KEYSTORE_HELP),
    output: OutputFormat = format_option("Output format: tab-separated lines, or JSON (the KeyList model)."),
) -> None:
    """List the keys of the embedded keystore with their bit length and version count (never material)."""
    from watershed.orc_crypto.views import KeyList, KeyMetadata

    store = _open_keystore(keystore)
    keys = [KeyMetadata.of(store.get(name)) for name in store.names()]
    if output is OutputFormat.json:
        write_model(KeyList(keystore=str(store.path), keys=keys))
        return
    for key in keys:
        # Plain tab-separated lines, so scripts can cut/awk them.
        typer.echo(f"{key.name}\t{key.bit_length} bits\t{key.versions} versions")


@app.command("describe")
def describe_command(
    name: str = typer.Argument(..., help="Key to describe."),
    keystore: Path = typer.Option(None, "--keystore", help=KEYSTORE_HELP),
    output: OutputFormat = format_option("Output format: lines, or JSON (the KeyMetadata model)."),
) -> None:
    """Show a key's metadata (never its material)."""
    from watershed.orc_crypto.keys.base import KeyProviderError
    from watershed.orc_crypto.views import KeyMetadata

    store = _open_keystore(keystore)
    try:
        record = store.get(name)
    except KeyProviderError as exc:
        fail(str(exc))
    if output is OutputFormat.json:
        write_model(KeyMetadata.of(record))
        return
    for line in _describe_lines(record):
        console.print(line, highlight=False)
