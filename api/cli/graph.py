"""`watershed graph`: counts, lineage trees and search on the lineage graph."""

from __future__ import annotations

import typer
from rich.tree import Tree

from watershed.api.cli.output import OutputFormat, console, fail, format_option, styled, write_model
from watershed.graph.model import LineageEdge, LineageView, SearchHit, SearchResult

app = typer.Typer(help="Query the lineage graph (FalkorDB by default).", no_args_is_help=True)


def open_store():
    """The configured graph, checked to answer; an unreachable one is an error saying how to start it."""
    from watershed.graph.backends import UnknownBackendError
    from watershed.graph.backends import open_store as open_backend
    from watershed.graph.settings import GraphSettings

    settings = GraphSettings()
    try:
        store = open_backend(settings)
        store.ping()
    except UnknownBackendError as exc:
        fail(str(exc))
    except Exception as exc:
        where = (
            settings.neo4j_uri
            if settings.backend == "neo4j"
            else f"FalkorDB on {settings.falkordb_host}:{settings.falkordb_port}"
        )
        fail(f"cannot reach {where} ({exc}); run `watershed services up`")
    return store


def lineage_tree(view: LineageView) -> Tree:
    """The lineage as a tree from its root (a node reached twice is shown once, then marked)."""
    children: dict[str, list[tuple[str, LineageEdge]]] = {}
    for edge in view.edges:
        parent, child = (
            (edge.target, edge.source) if view.direction == "upstream" else (edge.source, edge.target)
        )
        children.setdefault(parent, []).append((child, edge))
    tree = Tree(styled((view.root, "bold"), f" ({view.direction})"))
    seen: set[str] = set()

    def grow(branch: Tree, node: str) -> None:
        for child, edge in sorted(children.get(node, []), key=lambda item: item[0]):
            detail = f"  {edge.kind or ''} {','.join(edge.functions)} task={edge.task}"
            if child in seen:
                branch.add(styled(child, (detail + " (see above)", "dim")))
                continue
            seen.add(child)
            grow(branch.add(styled(child, (detail, "dim"))), child)

    grow(tree, view.root)
    return tree


@app.command("stats")
def stats_command(output: OutputFormat = format_option()) -> None:
    """Count tables, columns, tasks and edges."""
    stats = open_store().stats()
    if output is OutputFormat.json:
        write_model(stats)
        return
    for name, value in stats.model_dump().items():
        console.print(f"{name:13} {value:>12}")


@app.command("lineage")
def lineage_command(
    node: str = typer.Argument(..., help="db.table.column (or db.table with --table-level)."),
    upstream: bool = typer.Option(True, "--upstream/--downstream", help="Direction of the walk."),
    depth: int = typer.Option(10, "--depth", min=1, max=100, help="Maximum hops."),
    limit: int = typer.Option(
        500,
        "--limit",
        min=1,
        max=100_000,
        help="Most nodes to show (breadth first); the answer says when it cut.",
    ),
    table_level: bool = typer.Option(False, "--table-level", help="Walk table-level edges."),
    output: OutputFormat = format_option(
        "Output format: a tree, or JSON (the LineageView model the API returns)."
    ),
) -> None:
    """Print a node's upstream or downstream lineage as a tree, cut at --depth hops and --limit nodes."""
    found = open_store().bounded_lineage(
        node.lower(),
        "upstream" if upstream else "downstream",
        depth=depth,
        limit=limit,
        level="table" if table_level else "column",
    )
    if found is None:
        fail(f"{node}: no such node in the graph")
    view = LineageView.of(found)
    if output is OutputFormat.json:
        write_model(view)
        return
    console.print(lineage_tree(view))
    if view.truncated:
        console.print(
            styled((f"truncated at {limit} nodes: more lineage than shown (raise --limit)", "yellow"))
        )


@app.command("search")
def search_command(
    prefix: str = typer.Argument(..., help="Start of a table or column id."),
    limit: int = typer.Option(50, "--limit", min=1, help="Maximum results."),
    output: OutputFormat = format_option(),
) -> None:
    """Find tables and columns whose id starts with a prefix."""
    hits = [SearchHit(id=node_id, label=label) for node_id, label in open_store().search(prefix, limit)]
    if output is OutputFormat.json:
        write_model(SearchResult(prefix=prefix, limit=limit, hits=hits))
        return
    for hit in hits:
        console.print(f"{hit.label:7} {hit.id}")
