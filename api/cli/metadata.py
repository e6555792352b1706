"""`watershed describe` and `watershed owner`: a node's description and owner, shown, set or cleared.

The checks, the write and its audit entry are the node-metadata use case
(api/service/node_metadata.py), as for /api/v1/nodes/{id}/description and /owner.
"""

from __future__ import annotations

import getpass

import typer

from watershed.api.cli.output import OutputFormat, console, fail, format_option, usage_error, write_model
from watershed.graph import ids

NODE_HELP = "A column (db.table.column) or a table (db.table)."
CLEAR_HELP = "Take back the steward's value (the catalog's shows again, or a propagated one)."


def _node(node: str) -> str:
    node = node.strip().lower()
    try:
        parts = ids.split(node)
    except ids.InvalidIdError:
        parts = []
    if len(parts) not in (2, 3) or "" in parts:
        usage_error(f"{node!r}: expected db.table or db.table.column")
    return ids.join(*parts)


def _print(shown, field: str) -> None:
    value = getattr(shown, field)
    if value.value is None:
        console.print(f"{shown.node}: no {field}")
        return
    where = value.source or "?"
    if value.source == "steward" and value.by:
        where = f"steward {value.by} at {value.at}"
    elif value.source == "propagated":
        where = f"propagated from {value.from_node} via {value.via_task} ({value.hops} hop(s))"
    console.print(f"{shown.node}: {field}: {value.value}")
    console.print(f"  from: {where}")
    for step in value.path[1:]:
        via = f" via {step.via_task}" if step.via_task else ""
        console.print(f"  <- {step.node} ({step.source}{via})")


def _change(field: str, node: str, value: str | None, clear: bool, output: OutputFormat) -> None:
    from watershed.api.cli.graph import open_store
    from watershed.api.service import node_metadata
    from watershed.api.service.node_metadata import InvalidMetadataError, NothingToClearError
    from watershed.propagation.graph_store import UnknownNodeError

    node = _node(node)
    if clear and value is not None:
        usage_error(f"--clear takes no {field}")
    graph = open_store()
    try:
        if clear:
            shown = node_metadata.clear_value(graph, node, field, actor=f"cli:{getpass.getuser()}")
        elif value is not None:
            shown = node_metadata.set_value(graph, node, field, value, actor=f"cli:{getpass.getuser()}")
        else:
            shown = node_metadata.node_metadata(graph, node)
    except (UnknownNodeError, InvalidMetadataError, NothingToClearError) as exc:
        fail(str(exc))
    if output == OutputFormat.json:
        write_model(shown)
        return
    _print(shown, field)
    if clear or value is not None:
        console.print("  columns copied from it follow at the next `watershed propagate`")


def describe_command(
    node: str = typer.Argument(..., help=NODE_HELP),
    text: str = typer.Argument(None, help="The description; none: show the node's description."),
    clear: bool = typer.Option(False, "--clear", help=CLEAR_HELP),
    output: OutputFormat = format_option("A line for people, or JSON (the API's NodeMetadata)."),
) -> None:
    """Show, set or clear a table's or column's description (a steward's wins over the catalog's)."""
    _change("description", node, text, clear, output)


def owner_command(
    node: str = typer.Argument(..., help=NODE_HELP),
    name: str = typer.Argument(None, help="An email address or a person's or team's name; none: show it."),
    clear: bool = typer.Option(False, "--clear", help=CLEAR_HELP),
    output: OutputFormat = format_option("A line for people, or JSON (the API's NodeMetadata)."),
) -> None:
    """Show, set or clear a table's or column's owner (a column without one is its table's)."""
    _change("owner", node, name, clear, output)
