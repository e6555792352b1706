"""`watershed services`: start, stop, inspect, back up and restore the embedded graph (FalkorDB, or a
local Neo4j when WATERSHED_BACKEND=neo4j) and Redis."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer
from rich.table import Table

from watershed.api.cli.output import OutputFormat, console, fail, format_option, write_model
from watershed.api.service.settings import ApiSettings
from watershed.graph.background import BackgroundProcess
from watershed.graph.model import ServicesStatus, ServiceState
from watershed.graph.server import ServerError
from watershed.graph.services import down, status, up
from watershed.graph.settings import GraphSettings

app = typer.Typer(
    help="Start, stop and inspect the embedded services (the graph: FalkorDB or a local Neo4j; Redis for "
    "Celery; the KMS).",
    no_args_is_help=True,
)


def _kms(settings: GraphSettings):
    from watershed.orc_crypto.kms.service import KmsService

    return KmsService.from_settings(settings.data_dir)


def api_service(settings: ApiSettings, env: dict[str, str] | None = None) -> BackgroundProcess:
    """`watershed serve` on the configured host and port, under DATA_DIR/api (`env`: its whole
    environment, default this process's)."""
    return BackgroundProcess(
        "api",
        [
            sys.executable,
            "-m",
            "watershed.api.cli",
            "serve",
            "--host",
            settings.api_host,
            "--port",
            str(settings.api_port),
        ],
        settings.data_dir / "api",
        settings.api_host,
        settings.api_port,
        env=env,
    )


def kms_provider_uri(kms) -> str:
    """The embedded KMS's `hadoop.security.key.provider.path`."""
    return f"kms://http@{kms.host}:{kms.port}/kms"


def api_environment(settings: ApiSettings, kms) -> dict[str, str] | None:
    """The API's environment when `up` serves the keystore through the embedded KMS `kms`: the
    API encrypts with it (WATERSHED_PROTECT_KMS and its owner's token file), unless the settings
    name a KMS already; None (this process's environment) otherwise."""
    if kms is None or settings.protect_kms is not None or kms.why_not_started() is not None:
        return None
    from watershed.orc_crypto.kms.settings import KmsSettings

    return {
        **os.environ,
        "WATERSHED_PROTECT_KMS": kms_provider_uri(kms),
        "WATERSHED_PROTECT_TOKEN_FILE": str(KmsSettings().kms_token_file),
    }


def worker_service(settings: ApiSettings, concurrency: int = 2) -> BackgroundProcess:
    """One Celery worker for propagation batches, under DATA_DIR/worker."""
    # the Celery app reads the settings when it is imported: imported here, a bad setting is the
    # command's one-line error, not a traceback while the CLI loads
    from watershed.api.service.celery_app import worker_argv

    return BackgroundProcess(
        "worker",
        worker_argv(concurrency, name=f"watershed-{settings.api_port}@%h"),
        settings.data_dir / "worker",
    )


def _background(settings: GraphSettings, kms=None) -> list[BackgroundProcess]:
    """The API server and a propagation worker (`up` starts them after the servers and the KMS), as
    recorded processes (graph/background.py: a reused pid is never signalled); with `kms`, the API
    encrypts with that KMS when it serves a keystore (`api_environment`)."""
    api_settings = ApiSettings()
    return [api_service(api_settings, api_environment(api_settings, kms)), worker_service(api_settings)]


def _states(settings: GraphSettings, statuses, kms=None, background=()) -> ServicesStatus:
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
    for item in background:
        running = item.pid() is not None
        states.append(
            ServiceState(
                name=item.name,
                port=item.port or 0,
                running=running,
                answering=running and item.answers(),
                note=item.stale_note(),
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


def bring_up(settings: GraphSettings, progress=None):
    """Start every service not running (servers, KMS, API, worker); on a failure stop what this call started.

    Returns the servers' statuses, the KMS and the background services (API, worker).
    """
    kms = _kms(settings)
    background = _background(settings, kms)

    def later() -> None:
        started = []
        try:
            was_running = kms.pid() is not None
            if kms.start() and not was_running:
                started.append(kms)
            for item in background:
                if item.start():
                    started.append(item)
        except BaseException:
            for item in reversed(started):
                item.stop()
            raise

    return up(settings, progress=progress, then=later), kms, background


@app.command("up")
def up_command() -> None:
    """Start the graph (FalkorDB, or Neo4j when WATERSHED_BACKEND=neo4j names a local bolt:// URI), Redis,
    the KMS (when a keystore is set up), the API server and a worker; harmless when running."""
    from watershed.graph.background import ServiceStartError

    settings = GraphSettings()
    try:
        statuses, kms, background = bring_up(settings, progress=console.print)
    except (ServerError, ServiceStartError) as exc:
        fail(str(exc))
    console.print(f"data directory: {settings.data_dir}")
    _print(_states(settings, statuses, kms, background))
    reason = kms.why_not_started()
    if reason is not None and kms.pid() is None:
        console.print(f"kms not started: {reason}")
    else:
        console.print(f"kms: hadoop.security.key.provider.path = {kms_provider_uri(kms)}")
    api = background[0]
    console.print(f"web UI and API: http://{api.host}:{api.port}/ (API docs at /docs)")


@app.command("down")
def down_command() -> None:
    """Stop the services that `up` started from this data directory."""
    settings = GraphSettings()
    # The API and the worker first: they use the servers stopped after them.
    stopped = [item.name for item in reversed(_background(settings)) if item.stop()]
    stopped += down(settings) + (["kms"] if _kms(settings).stop() else [])
    console.print(f"stopped: {', '.join(stopped) if stopped else 'nothing was running'}")


@app.command("status")
def status_command(
    output: OutputFormat = format_option("Output format: a table, or JSON (the ServicesStatus model)."),
) -> None:
    """Show whether each service runs and answers, and the data directory they run from."""
    settings = GraphSettings()
    view = _states(settings, status(settings), _kms(settings), _background(settings))
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


def _graph_backup(settings: GraphSettings, directory: Path, restoring: bool):
    """The graph's backup written to (or restored from) `directory`: FalkorDB's snapshot, or a
    Neo4j's export through the driver (graph/neo4j_backup.py); its manifest."""
    if settings.backend != "neo4j":
        from watershed.graph.backup import backup, restore

        return (restore if restoring else backup)(_graph_spec(settings), directory)
    from watershed.graph.backends import UnreachableGraphError, open_answering
    from watershed.graph.neo4j_backup import backup, restore

    try:
        store = open_answering(settings)
    except UnreachableGraphError as exc:
        raise ServerError(f"{exc}; run `watershed services up`") from None
    try:
        return (restore if restoring else backup)(store, directory)
    finally:
        store.close()


@app.command("backup")
def backup_command(
    directory: Path = typer.Argument(..., help="Where to write the backup (created if missing)."),
) -> None:
    """Write a consistent backup of the running graph (a FalkorDB snapshot, or a Neo4j's export) and of
    the keystore into DIRECTORY.

    The keystore copy stays encrypted under its passphrase: back the passphrase up elsewhere.
    """
    from watershed.graph.errors import WatershedError
    from watershed.orc_crypto.keys.base import KeyProviderError
    from watershed.orc_crypto.keys.embedded import KeystoreSettings, backup_keystore

    try:
        manifest = _graph_backup(GraphSettings(), directory, restoring=False)
    except (ServerError, WatershedError, OSError) as exc:
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

    FalkorDB is stopped and restarted (its old files kept aside); a Neo4j database must be empty. A keystore in the backup must open
    with the configured passphrase before it replaces the current one; a running KMS picks it up.
    """
    from watershed.graph.errors import WatershedError
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
        manifest = _graph_backup(GraphSettings(), directory, restoring=True)
    except (ServerError, WatershedError, OSError) as exc:
        fail(f"restore from {directory}: {exc}")
    console.print(f"restored graphs {', '.join(manifest.graphs) or '(none)'} from {directory}")
    if saved_keystore.exists():
        try:
            backup_keystore(saved_keystore, keystore)
        except (KeyProviderError, OSError) as exc:
            fail(f"restore of keystore {keystore} from {directory}: {exc}")
        console.print(f"restored keystore {keystore} from {saved_keystore}")
