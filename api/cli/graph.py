"""`watershed graph`: counts, lineage trees and search on the lineage graph."""

from __future__ import annotations

import typer
from rich.tree import Tree

from watershed.api.cli.output import (
    OutputFormat,
    console,
    fail,
    format_option,
    styled,
    usage_error,
    write_model,
)
from watershed.graph.model import LineageEdge, LineageView

app = typer.Typer(help="Query the lineage graph (FalkorDB by default).", no_args_is_help=True)


def open_store():
    """The configured graph, checked to answer; an unreachable one is an error saying how to start it."""
    from watershed.graph.backends import UnreachableGraphError, open_answering
    from watershed.graph.errors import WatershedError

    try:
        return open_answering()
    except UnreachableGraphError as exc:
        fail(f"{exc}; run `watershed services up`")
    except WatershedError as exc:
        fail(str(exc))


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
    view = open_store().bounded_lineage(
        node.lower(),
        "upstream" if upstream else "downstream",
        depth=depth,
        limit=limit,
        level="table" if table_level else "column",
    )
    if view is None:
        fail(f"{node}: no such node in the graph")
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
    q: str = typer.Argument("", help="An id prefix (ods.users.em) or a substring (email)."),
    kind: str = typer.Option(None, "--kind", help="table or column (default both)."),
    db: str = typer.Option(None, "--db", help="Only this database."),
    tag: list[str] = typer.Option(
        None, "--tag", help="key, key=value or key>=value (levels by the policy); repeat for several."
    ),
    limit: int = typer.Option(50, "--limit", min=1, max=500, help="Results per page."),
    cursor: str = typer.Option(None, "--cursor", help="The next_cursor a previous page printed."),
    output: OutputFormat = format_option(
        "Output format: a table, or JSON (the Page[SearchHit] the API returns)."
    ),
) -> None:
    """Find tables and columns by id prefix, then substring, filtered by tags (GET /api/v1/search)."""
    from watershed.api.cli.policy_option import command_policy
    from watershed.api.service.pages import CursorError
    from watershed.api.service.search import SearchError, search_nodes

    if kind not in (None, "table", "column"):
        usage_error(f"--kind {kind}: expected table or column")
    try:
        page = search_nodes(open_store(), command_policy(), q, kind, db, tag or [], limit, cursor)
    except (SearchError, CursorError) as exc:
        fail(str(exc))
    if output is OutputFormat.json:
        write_model(page)
        return
    for hit in page.items:
        tags = " ".join(f"{key}={','.join(values)}" for key, values in sorted(hit.tags.items()))
        console.print(f"{hit.label:7} {hit.id}" + (f"  {tags}" if tags else ""))
    if page.next_cursor:
        console.print(styled((f"more: --cursor {page.next_cursor}", "dim")))
