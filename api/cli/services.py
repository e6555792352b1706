"""`watershed services`: start, stop, inspect, back up and restore the embedded FalkorDB and Redis."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from watershed.api.cli.output import OutputFormat, console, fail, format_option, write_model
from watershed.graph.model import ServicesStatus, ServiceState
from watershed.graph.server import ServerError
from watershed.graph.services import down, status, up
from watershed.graph.settings import GraphSettings

app = typer.Typer(
    help="Start, stop and inspect the embedded services (FalkorDB graph, Redis for Celery, the KMS).",
    no_args_is_help=True,
)


def _kms(settings: GraphSettings):
    from watershed.orc_crypto.kms.service import KmsService

    return KmsService.from_settings(settings.data_dir)


def _states(settings: GraphSettings, statuses, kms=None) -> ServicesStatus:
    states = [
        ServiceState(
            name=item.name, port=item.port, running=item.running, answering=item.answering, note=item.note
        )
        for item in statuses
    ]
    if kms is not None:
        running = kms.pid() is not None
        states.append(
            ServiceState(
                name="kms",
                port=kms.port,
                running=running,
                answering=running and kms.answers(),
                note=kms.stale_note(),
            )
        )
    return ServicesStatus(data_dir=str(settings.data_dir), services=states)


def _print(view: ServicesStatus) -> None:
    table = Table(title_justify="left")
    for header in ("service", "port", "running", "answering"):
        table.add_column(header)
    for item in view.services:
        table.add_row(
            item.name, str(item.port), "yes" if item.running else "no", "yes" if item.answering else "no"
        )
    console.print(table)
    for item in view.services:
        if item.note:
            console.print(f"{item.name}: the recorded process is gone: {item.note}")


@app.command("up")
def up_command() -> None:
    """Start FalkorDB, Redis and (when a keystore is set up) the KMS on loopback; harmless when running."""
    from watershed.orc_crypto.kms.service import KmsServiceError

    settings = GraphSettings()
    kms = _kms(settings)
    try:
        # If the KMS (or a later server) fails, `up` stops the servers this call started.
        statuses = up(settings, progress=console.print, then=kms.start)
    except (ServerError, KmsServiceError) as exc:
        fail(str(exc))
    console.print(f"data directory: {settings.data_dir}")
    _print(_states(settings, statuses, kms))
    reason = kms.why_not_started()
    if reason is not None and kms.pid() is None:
        console.print(f"kms not started: {reason}")
    else:
        console.print(f"kms: hadoop.security.key.provider.path = kms://http@{kms.host}:{kms.port}/kms")


@app.command("down")
def down_command() -> None:
    """Stop the services that `up` started from this data directory."""
    settings = GraphSettings()
    stopped = down(settings) + (["kms"] if _kms(settings).stop() else [])
    console.print(f"stopped: {', '.join(stopped) if stopped else 'nothing was running'}")


@app.command("status")
def status_command(
    output: OutputFormat = format_option("Output format: a table, or JSON (the ServicesStatus model)."),
) -> None:
    """Show whether each service runs and answers, and the data directory they run from."""
    settings = GraphSettings()
    view = _states(settings, status(settings), _kms(settings))
    if output is OutputFormat.json:
        write_model(view)
        return
    console.print(f"data directory: {view.data_dir}")
    _print(view)


#: the keystore's file name in a backup directory
KEYSTORE_BACKUP = "keystore.json"


def _graph_spec(settings: GraphSettings):
    from watershed.graph.services import specs

    return next(spec for spec in specs(settings) if spec.name == "falkordb")


@app.command("backup")
def backup_command(
    directory: Path = typer.Argument(..., help="Where to write the backup (created if missing)."),
) -> None:
    """Write a consistent backup of the running graph (a FalkorDB snapshot) and of the keystore into DIRECTORY.

    The keystore copy stays encrypted under its passphrase: back the passphrase up elsewhere.
    """
    from watershed.graph.backup import backup
    from watershed.orc_crypto.keys.base import KeyProviderError
    from watershed.orc_crypto.keys.embedded import KeystoreSettings, backup_keystore

    try:
        manifest = backup(_graph_spec(GraphSettings()), directory)
    except (ServerError, OSError) as exc:
        fail(f"backup to {directory}: {exc}")
    console.print(
        f"backed up graphs {', '.join(manifest.graphs) or '(none)'} to {directory} ({manifest.bytes} bytes)"
    )
    keystore = KeystoreSettings().keystore_path
    if not keystore.exists():
        console.print(f"no keystore at {keystore}: nothing else to back up")
        return
    try:
        backup_keystore(keystore, directory / KEYSTORE_BACKUP)
    except (KeyProviderError, OSError) as exc:
        fail(f"backup of keystore {keystore} to {directory}: {exc}")
    console.print(f"backed up keystore {keystore} to {directory / KEYSTORE_BACKUP}")


@app.command("restore")
def restore_command(
    directory: Path = typer.Argument(..., help="A directory written by `watershed services backup`."),
) -> None:
    """Replace the graph (and the keystore, when the backup has one) with the backup in DIRECTORY.

    FalkorDB is stopped and restarted (its old files kept aside). A keystore in the backup must open
    with the configured passphrase before it replaces the current one; a running KMS picks it up.
    """
    from watershed.graph.backup import restore
    from watershed.orc_crypto.keys.base import KeyProviderError
    from watershed.orc_crypto.keys.embedded import (
        EmbeddedKeystore,
        KeystoreSettings,
        backup_keystore,
        passphrase_from_environment,
    )

    saved_keystore = directory / KEYSTORE_BACKUP
    keystore = KeystoreSettings().keystore_path
    if saved_keystore.exists():
        # Checked before anything is replaced: a restore that cannot finish changes nothing.
        try:
            EmbeddedKeystore.open(saved_keystore, passphrase_from_environment())
        except KeyProviderError as exc:
            fail(f"restore from {directory}: the keystore in the backup does not open: {exc}")
    try:
        manifest = restore(_graph_spec(GraphSettings()), directory)
    except (ServerError, OSError) as exc:
        fail(f"restore from {directory}: {exc}")
    console.print(f"restored graphs {', '.join(manifest.graphs) or '(none)'} from {directory}")
    if saved_keystore.exists():
        try:
            backup_keystore(saved_keystore, keystore)
        except (KeyProviderError, OSError) as exc:
            fail(f"restore of keystore {keystore} from {directory}: {exc}")
        console.print(f"restored keystore {keystore} from {saved_keystore}")
