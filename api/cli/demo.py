"""`watershed demo`: the furthest the pipeline reaches, on the embedded default."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterator
from importlib import resources

import typer
from rich.table import Table

from watershed.api.cli.lineage import print_lineage
from watershed.api.cli.output import console, fail
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage

SAMPLE_RUN_DATE = "2024-01-31"
#: ODS tables (and the DWD tables cleaned from them) whose files hold discovery content
DEMO_CONTENT_TABLES = 3
#: harvest errors the demo lists in words after its summary
DEMO_ERRORS_SHOWN = 10
#: the demo keystore's passphrase, under DATA_DIR/kms when no passphrase is configured
DEMO_PASSPHRASE_FILE = "demo.passphrase"
#: how the demo's KMS is named in a protection error
DEMO_KMS = "the demo's KMS"


def demo_command(
    tasks: int = typer.Option(500, "--tasks", min=10, help="Size of the generated warehouse."),
    lineage_only: bool = typer.Option(
        False,
        "--lineage-only",
        help="Only print the lineage of the bundled sample scripts (no services, no Spark).",
    ),
    details: bool = typer.Option(
        False, "--details", help="With --lineage-only, print every task's full lineage."
    ),
) -> None:
    """Start the services, generate a warehouse, harvest it with Spark into the graph WATERSHED_BACKEND
    names, show lineage, discover sensitive content, propagate tags, flag leaks and over-tagging."""
    if lineage_only:
        sample_lineage(details)
        return
    full_demo(tasks)


def full_demo(tasks: int) -> None:
    from watershed.api.cli.graph import lineage_tree
    from watershed.api.cli.services import bring_up
    from watershed.api.service import harvest_runs
    from watershed.graph.backends import UnreachableGraphError, open_answering
    from watershed.graph.background import ServiceStartError
    from watershed.graph.errors import WatershedError
    from watershed.graph.server import ServerError
    from watershed.graph.settings import GraphSettings
    from watershed.ingest.generator import generate_warehouse
    from watershed.ingest.settings import IngestSettings
    from watershed.orc_crypto.keys.base import KeyProviderError

    settings = GraphSettings()
    try:
        keystore_env = demo_keystore()
    except KeyProviderError as exc:
        # the demo goes on without protection: the KMS stays off, and the protection step says why
        console.print(f"no demo keystore: {exc}")
        keystore_env = {}
    try:
        # The services stay up after the demo: the web UI, the API and a worker for its runs (and the
        # KMS, which the API encrypts with).
        with environment(keystore_env):
            statuses, kms, background = bring_up(settings)
    except (ServerError, ServiceStartError) as exc:
        fail(str(exc))
    console.print(
        "services: "
        + ", ".join(f"{s.name} on port {s.port}" for s in statuses)
        + ", "
        + ", ".join(f"{b.name}" + (f" on port {b.port}" if b.port else "") for b in background)
        + (f", kms on port {kms.port}" if kms.pid() is not None else "")
    )
    warehouse = settings.data_dir / "demo" / f"warehouse-{tasks}"
    if not (warehouse / "catalog.json").exists() or not (warehouse / "data").exists():
        summary = generate_warehouse(warehouse, tasks=tasks, seed=7, content_tables=DEMO_CONTENT_TABLES)
        console.print(f"generated {summary.tasks} tasks over {summary.tables} tables in {warehouse}")
    catalog = Catalog.load(warehouse / "catalog.json")
    # the graph WATERSHED_BACKEND names (FalkorDB or Neo4j), harvested as `watershed harvest` does
    try:
        report = harvest_runs.run(
            harvest_runs.HarvestSource(tasks=warehouse / "tasks", catalog=warehouse / "catalog.json"),
            out=settings.data_dir / "harvest",
            settings=IngestSettings(),
            graph=settings,
            progress=console.print,
        )
        store = open_answering(settings)
    except UnreachableGraphError as exc:
        fail(f"{exc}; see `watershed services status`")
    except WatershedError as exc:
        fail(str(exc))
    stats = store.stats()
    summary_table = Table(title="lineage graph", title_justify="left")
    for header in (
        "tables",
        "columns",
        "tasks",
        "column edges",
        "weak edges",
        "table edges",
        "tasks with errors",
    ):
        summary_table.add_column(header, justify="right")
    summary_table.add_row(
        str(stats.tables),
        str(stats.columns),
        str(stats.tasks),
        str(stats.column_edges),
        str(stats.weak_edges),
        str(stats.table_edges),
        str(report.tasks_with_errors),
    )
    console.print(summary_table)
    console.print(f"harvest {report.run_id}: errors in {report.out_dir}/errors.jsonl")
    shown = harvest_runs.problems(store, settings.data_dir, report.run_id, limit=DEMO_ERRORS_SHOWN)
    for problem in shown.items:
        console.print(f"  {problem.text}")
    if shown.next_cursor:
        console.print("  ... (the Runs page and GET /api/v1/harvest/runs/RUN/errors list them all)")
    deepest = store.read(
        "MATCH (c:Column)<-[:FLOWS_TO]-(:Column)<-[:FLOWS_TO]-(:Column) WHERE c.table STARTS WITH 'ads.' "
        "RETURN c.id ORDER BY c.id LIMIT 1"
    )
    root = store.read(
        "MATCH (c:Column)-[:FLOWS_TO]->(:Column)-[:FLOWS_TO]->(:Column) WHERE c.table STARTS WITH 'ods.' "
        "RETURN c.id ORDER BY c.id LIMIT 1"
    )
    for found in (deepest and (deepest[0][0], "upstream"), root and (root[0][0], "downstream")):
        if found:
            console.print(lineage_tree(store.bounded_lineage(found[0], found[1], depth=10, limit=200)))
    discovery_demo(store)
    propagation_demo(store, catalog)
    flags_demo(store)
    protection_demo(store, kms)
    coverage_demo(store)
    api = background[0]
    token = demo_admin_token(store)
    console.print(f"web UI: http://{api.host}:{api.port}/  (API docs: http://{api.host}:{api.port}/docs)")
    console.print("log in with this demo-admin token (a new one each run; shown only now):")
    typer.echo(token)
    console.print(
        f"the nightly chain on this warehouse: `watershed nightly --tasks {warehouse / 'tasks'} "
        f"--catalog {warehouse / 'catalog.json'}`"
    )
    console.print("the services keep running; stop them with `watershed services down`")


def coverage_demo(store) -> None:
    """Today's coverage snapshot, as the nightly's coverage step computes it: the UI's home page
    (the dashboard) reads it, so the demo opens on numbers rather than "no snapshot yet"."""
    from watershed.api.service import coverage
    from watershed.propagation.policy import default_policy

    totals = coverage.refresh(store, default_policy()).totals
    console.print(
        f"coverage: {totals.sensitive} sensitive columns, {totals.protected} protected, "
        f"{totals.unprotected} not yet protected, {totals.uncovered} no rule protects, "
        f"{totals.downstream} below a protected column"
    )


def demo_admin_token(store) -> str:
    """A fresh token of the `demo-admin` user (created on the first run); its earlier tokens are revoked."""
    from watershed.api.service.accounts.store import AccountStore, UnknownUserError

    accounts = AccountStore(store)
    actor = "demo"
    try:
        user = accounts.get("demo-admin")
    except UnknownUserError:
        accounts.add("demo-admin", "admin", None, actor=actor)
    else:
        if user.role != "admin" or user.databases is not None:
            accounts.update("demo-admin", actor, role="admin", databases=None)
    for old in accounts.tokens("demo-admin", "", 500):
        accounts.revoke_token("demo-admin", old.id, actor)
    return accounts.create_token("demo-admin", actor).token


def demo_keystore() -> dict[str, str]:
    """The keystore `services up` serves through the embedded KMS, holding every master key the
    built-in policy's protection rules name (each created once: a re-run adds none). Returns the
    environment the KMS must start with: without a configured passphrase, the file of the demo's
    own, generated once (0600, beside the keystore: a demo's keys, not a production set-up).

    KeyProviderError when the keystore cannot be opened (one made earlier with another passphrase)."""
    from watershed.orc_crypto.keys.embedded import (
        EmbeddedKeystore,
        KeystoreError,
        KeystoreSettings,
        passphrase_from_environment,
    )
    from watershed.orc_crypto.keys.private_file import write_private
    from watershed.propagation.policy import default_policy

    settings = KeystoreSettings()
    env: dict[str, str] = {}
    if settings.keystore_passphrase or settings.keystore_passphrase_file is not None:
        passphrase = passphrase_from_environment(settings)
    else:
        path = settings.keystore_path.parent / DEMO_PASSPHRASE_FILE
        if not path.exists():
            if settings.keystore_path.exists():
                raise KeystoreError(
                    f"keystore {settings.keystore_path} exists and no passphrase is set: set "
                    "WATERSHED_KEYSTORE_PASSPHRASE or WATERSHED_KEYSTORE_PASSPHRASE_FILE"
                )
            # the KMS directory holds the KMS secret and token too: owner only
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            write_private(path, secrets.token_urlsafe(32).encode("ascii"))
        env["WATERSHED_KEYSTORE_PASSPHRASE_FILE"] = str(path)
        passphrase = path.read_text(encoding="ascii")
    keystore = EmbeddedKeystore.open_or_create(settings.keystore_path, passphrase)
    protection = default_policy().protection
    for key in sorted({rule.key for rule in protection.rules} if protection else ()):
        if key not in keystore.names():
            keystore.create_key(key, bits=256, description="watershed demo")
            console.print(f"demo keystore {keystore.path}: created master key {key}")
    return env


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """`values` in this process's environment while the services start (they inherit it), then
    the environment as it was: the demo's passphrase file is the KMS's, not the CLI's."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def demo_protected_table(store, policy) -> str | None:
    """The ODS table the demo protects: the first, by id, with files and a column the policy
    protects (whatever is already encrypted, so a re-run picks the same table)."""
    from watershed.graph.model import tag_values
    from watershed.orc_crypto.protect.plan import read_catalog

    ids = [r[0] for r in store.read(DEMO_TABLES)]
    for table in read_catalog(store, ids).values() if ids else ():
        if any(policy.rule_for(tag_values(column.tags)) for column in table.columns):
            return table.id
    return None


#: ODS tables with files (the generator's content tables)
DEMO_TABLES = (
    "MATCH (t:Table) WHERE t.id STARTS WITH 'ods.' AND t.location IS NOT NULL RETURN t.id ORDER BY t.id"
)


def protection_demo(store, kms):
    """Plan and apply protection on one ODS table through the demo's KMS, as `watershed protect
    apply --local --table T` does: its sensitive columns encrypted in its ORC files (readable by
    ORC Java with the key, masked without it), recorded in the graph. A re-run changes nothing.
    Returns the run (None when there is nothing to protect or no KMS)."""
    from watershed.api.cli.services import kms_provider_uri
    from watershed.api.service import protection_runs
    from watershed.graph.errors import WatershedError
    from watershed.orc_crypto.kms.settings import KmsSettings
    from watershed.propagation.policy import default_policy

    policy = protection_runs.protection_section(default_policy())
    if policy is None:
        return None
    if kms.pid() is None:
        console.print(f"protection: the KMS is not running ({kms.why_not_started() or 'see kms.log'})")
        return None
    table = demo_protected_table(store, policy)
    if table is None:
        console.print("protection: no ODS table with files has a column the policy protects")
        return None
    uri, token_file = kms_provider_uri(kms), KmsSettings().kms_token_file
    try:
        planned = protection_runs.plan(
            store, policy, kms=uri, given_as=DEMO_KMS, tables=[table], token_file=token_file
        )
        run = protection_runs.apply(store, planned, kms=uri, given_as=DEMO_KMS, token_file=str(token_file))
    except WatershedError as exc:
        fail(f"protection of {table}: {exc}")
    failed = [e for e in run.errors if not e.error.startswith("DDL ")]
    if failed:
        fail(f"protection run {run.id} of {table}: " + "; ".join(f"{e.path}: {e.error}" for e in failed))
    files = planned.tables[0].files if planned.tables else []
    keys = {name: key for f in files for name, key in f.columns.items()}
    if run.files_done:
        console.print(
            f"protection run {run.id} on {table}: "
            + ", ".join(f"{name} (key {key.key}, mask {key.mask})" for name, key in sorted(keys.items()))
            + f" encrypted in {run.files_done} ORC file{'s' if run.files_done > 1 else ''} "
            f"({run.bytes_rewritten} bytes) through the KMS at {uri}"
        )
    else:
        console.print(f"protection run {run.id} on {table}: its files already hold what the policy asks")
    console.print(
        "  its DDL for future writes waits for a Spark catalog holding the table "
        f"(`watershed protect apply --table {table}`); the web UI's table page shows what is encrypted, "
        "and an admin applies the other tables there"
    )
    return run


def wait_for_worker(settings, seconds: float = 60.0) -> None:
    """Until a worker serves the propagation queue (the one `services up` started may still be starting)."""
    import time

    from watershed.api.service.propagation_runs import workers_alive

    deadline = time.monotonic() + seconds
    while not workers_alive(settings, timeout=1.0):
        if time.monotonic() > deadline:
            fail(
                f"no worker serves the propagation queue after {seconds:.0f} s; see {settings.data_dir}/worker/worker.log"
            )


def propagation_demo(store, catalog: Catalog) -> None:
    """Seed app values on the ODS tables, propagate on the services' Celery worker, and explain one PII tag."""
    from watershed.api.cli.tag import why_tree
    from watershed.api.service.propagation_runs import PropagationRunError, run, run_state, runner_for
    from watershed.ingest.generator import seed_apps
    from watershed.propagation.coordinator import Progress
    from watershed.propagation.graph_store import GraphTagStore
    from watershed.propagation.policy import default_policy
    from watershed.propagation.settings import PropagationSettings

    settings = PropagationSettings()
    policy = default_policy()
    tags = GraphTagStore(store, policy)
    seeded = seed_apps(tags, catalog)
    console.print(
        f"stewards' app values set on {seeded} ODS tables; policy rules seed every *email*/*phone*/*ssn* column"
    )
    wait_for_worker(settings)

    def show(layer, record) -> None:
        console.print(
            f"  layer {layer.layer}: {layer.nodes} nodes in {layer.batches} batches, "
            f"{layer.changed} changed, {layer.seconds:.2f} s"
        )

    try:
        record = run(
            store,
            policy,
            run_state(settings),
            runner_for(settings, policy),
            settings,
            full=True,
            progress=Progress(on_layer=show, on_message=lambda m: console.print("  " + m)),
        ).record
    except PropagationRunError as exc:
        fail(str(exc))
    counts = store.read(
        "MATCH (n)-[g:TAGGED]->(t:Tag) WITH t.key AS key, g.origin AS origin, count(DISTINCT n) AS nodes "
        "RETURN key, origin, nodes ORDER BY key, origin"
    )
    table = Table(title=f"tags after {record.run_id} ({len(record.layers)} layers)", title_justify="left")
    for header in ("tag", "origin", "nodes"):
        table.add_column(header)
    for key, origin, nodes in counts:
        table.add_row(key, origin, str(nodes))
    console.print(table)
    deepest = store.read(
        "MATCH (n:Column)-[g:TAGGED {origin: 'propagated'}]->(:Tag {key: 'pii'}) "
        "RETURN n.id ORDER BY g.hops DESC, n.id LIMIT 1"
    )
    if deepest:
        tree, _ = why_tree(tags, deepest[0][0], "pii", max_paths=5)
        console.print(f"why is {deepest[0][0]} pii? (`watershed tag why {deepest[0][0]} pii`)")
        console.print(tree)


def discovery_demo(store) -> None:
    """Discovery of the root tables with files, once the policy's name rules have seeded what the
    columns' names say: what it proposes is what the names missed (decoys are not proposed)."""
    from watershed.api.service.discovery import discover
    from watershed.propagation.graph_store import GraphTagStore
    from watershed.propagation.policy import default_policy

    policy = default_policy()
    GraphTagStore(store, policy).sync_rule_seeds()
    run = discover(store, policy, force=True)
    sampled = [t for t in run.tables if t.status == "sampled"]
    table = Table(title=f"discovery {run.run}: content the name rules missed", title_justify="left")
    for header in ("column", "proposes", "confidence", "masked examples"):
        table.add_column(header)
    for report in sampled:
        for p in report.proposals:
            table.add_row(
                p.column,
                " ".join(f"{k}={v}" for k, v in sorted(p.tags.items())),
                f"{p.confidence:.2f} of {p.sampled}",
                ", ".join(p.evidence.examples),
            )
    console.print(table)
    console.print(
        f"{len(sampled)} root tables sampled, {run.values} values judged, {run.proposed} proposed "
        "(look-alikes failing their check digits, hashes and amounts are not); accept them on the web "
        "UI's Discovery page or with `watershed discover accept COLUMN`"
    )


def flags_demo(store) -> None:
    """Discovery of the derived tables with files, after propagation: where their content disagrees
    with the tags propagation gave them (a copy of an untagged root, a name rule's mistake)."""
    from watershed.api.service.discovery import discover
    from watershed.propagation.policy import default_policy

    run = discover(store, default_policy(), derived=True, force=True)
    flags = [f for report in run.tables for f in report.flags]
    table = Table(title=f"discovery {run.run}: leaks and over-tagging", title_justify="left")
    for header in ("column", "flag", "content says", "holds", "path back from"):
        table.add_column(header)
    for f in flags:
        table.add_row(
            f.column,
            f.kind,
            " ".join(f"{k}={v}" for k, v in sorted(f.tags.items())),
            " ".join(f"{k}={','.join(v)}" for k, v in sorted(f.held.items())) or "nothing",
            f"{f.root or '(no column lineage)'}{' (tagged)' if f.root_tagged else ''}",
        )
    console.print(table)
    console.print(f"{len(flags)} flagged: `watershed discover flags`, or the web UI's Discovery page")


def sample_lineage(details: bool) -> None:
    samples = resources.files("ingest") / "samples" / "warehouse"
    catalog = Catalog.from_dict(
        json.loads((samples / "catalog.json").read_text()), source="samples/catalog.json"
    )
    scripts = sorted(p for p in samples.iterdir() if p.name.endswith(".sql"))
    summary = Table(title=f"sample warehouse lineage (run date {SAMPLE_RUN_DATE})", title_justify="left")
    for header in ("task", "reads (window days)", "writes", "column edges", "weak refs", "errors"):
        summary.add_column(header)
    edges = Table(title="column lineage", title_justify="left")
    for header in ("source column", "kind", "functions", "target column"):
        edges.add_column(header)
    failed = 0
    for script in scripts:
        task = SqlTask(
            task_id=script.name.removesuffix(".sql"), sql=script.read_text(), vars={"date": SAMPLE_RUN_DATE}
        )
        result = extract_lineage(task, catalog)
        failed += len(result.errors)
        reads = ", ".join(
            f"{r.table} ({'∞' if r.partition_window_days is None else r.partition_window_days})"
            for r in result.reads
        )
        summary.add_row(
            task.task_id,
            reads,
            ", ".join(result.writes),
            str(sum(len(c.sources) for c in result.columns)),
            str(len(result.weak_references)),
            str(len(result.errors)),
        )
        for column in result.columns:
            for source in column.sources:
                edges.add_row(source.id, source.kind, ", ".join(source.functions), column.target)
        if details:
            print_lineage(result)
    console.print(summary)
    console.print(edges)
    if failed:
        raise typer.Exit(1)
