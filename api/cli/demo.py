"""`watershed demo`: the furthest the pipeline reaches, on the embedded default."""

from __future__ import annotations

import json
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

    settings = GraphSettings()
    try:
        # The services stay up after the demo: the web UI, the API and a worker for its runs.
        statuses, _, background = bring_up(settings)
    except (ServerError, ServiceStartError) as exc:
        fail(str(exc))
    console.print(
        "services: "
        + ", ".join(f"{s.name} on port {s.port}" for s in statuses)
        + ", "
        + ", ".join(f"{b.name}" + (f" on port {b.port}" if b.port else "") for b in background)
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
