"""`watershed tag`: stewards' tags and blocks, and what a node's tags are and why."""

from __future__ import annotations

import getpass

import typer
from rich.table import Table
from rich.text import Text
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
from watershed.api.cli.policy_option import POLICY_HELP, command_policy
from watershed.api.cli.tag_preview import limit_option, preview_option, print_preview
from watershed.graph import ids

app = typer.Typer(help="Set, block and explain tags on columns and tables.", no_args_is_help=True)

NODE_HELP = "A column (db.table.column) or a table (db.table)."
PREVIEW_FORMAT_HELP = "With --preview: a table, or JSON (the TagPreview model)."
BY_HELP = "Who sets it (default: the OS user)."


def _store(policy_file=None):
    from watershed.api.cli.graph import open_store
    from watershed.propagation.graph_store import GraphTagStore

    return GraphTagStore(open_store(), command_policy(policy_file))


def _actor() -> str:
    """Who the audit names for a change made here: the OS user (`cli:NAME`), as for `watershed users`."""
    return f"cli:{getpass.getuser()}"


def _node(node: str) -> str:
    node = node.strip().lower()
    try:
        parts = ids.split(node)
    except ids.InvalidIdError:
        parts = []
    if len(parts) not in (2, 3):
        usage_error(f"{node!r}: expected db.table or db.table.column")
    return ids.join(*parts)


@app.command("set")
def set_command(
    node: str = typer.Argument(..., help=NODE_HELP),
    tags: list[str] = typer.Argument(
        ..., help="KEY=VALUE[,VALUE...], e.g. pii=L3 pii_type=ssn app=douyin,toutiao."
    ),
    by: str = typer.Option(None, "--by", help=BY_HELP),
    policy_file=typer.Option(None, "--policy", help=POLICY_HELP),
    preview: bool = preview_option(),
    limit: int = limit_option(),
    output: OutputFormat = format_option(PREVIEW_FORMAT_HELP),
) -> None:
    """Set a steward's tag on a node (it wins over propagated tags there and propagates downstream)."""
    from watershed.api.service import tag_changes
    from watershed.propagation.graph_store import UnknownNodeError
    from watershed.propagation.policy import UnknownTagError

    node = _node(node)
    parsed: dict[str, list[str]] = {}
    for item in tags:
        key, sep, raw = item.partition("=")
        values = sorted({v.strip() for v in raw.split(",") if v.strip()})
        if not sep or not key.strip() or not values:
            usage_error(f"{item!r}: expected KEY=VALUE[,VALUE...]")
        parsed[key.strip()] = values
    if preview:
        if len(parsed) != 1:
            usage_error(f"--preview: one KEY=VALUE[,VALUE...] at a time (got {len(parsed)})")
        [(key, values)] = parsed.items()
        return print_preview(_store(policy_file), node, "set", key, values, limit, output)
    try:
        tag_changes.set_tags(_store(policy_file), node, parsed, by=by or getpass.getuser(), actor=_actor())
    except (UnknownNodeError, UnknownTagError) as exc:
        fail(str(exc))
    summary = ", ".join(f"{key}={','.join(values)}" for key, values in parsed.items())
    console.print(f"{node}: set {summary}; run `watershed propagate`")


@app.command("unset")
def unset_command(
    node: str = typer.Argument(..., help=NODE_HELP),
    keys: list[str] = typer.Argument(..., help="Tag keys to remove, e.g. pii pii_type."),
    preview: bool = preview_option(),
    limit: int = limit_option(),
    output: OutputFormat = format_option(PREVIEW_FORMAT_HELP),
) -> None:
    """Remove a steward's tags from a node (propagated tags that depended on them are retracted by the next run)."""
    from watershed.api.service import tag_changes
    from watershed.propagation.graph_store import UnknownNodeError

    node = _node(node)
    if preview:
        if len(keys) != 1:
            usage_error(f"--preview: one key at a time (got {len(keys)})")
        return print_preview(_store(), node, "unset", keys[0], [], limit, output)
    try:
        removed = tag_changes.unset_tags(_store(), node, keys, actor=_actor())
    except UnknownNodeError as exc:
        fail(str(exc))
    missing = sorted(set(keys) - set(removed))
    if missing:
        fail(
            f"{node}: no steward's tag {', '.join(missing)} to remove"
            + (f" (removed {', '.join(removed)})" if removed else "")
        )
    console.print(f"{node}: removed {', '.join(removed)}; run `watershed propagate`")


@app.command("block")
def block_command(
    node: str = typer.Argument(..., help=NODE_HELP),
    key: str = typer.Argument(..., help="The tag key to block, e.g. pii."),
    by: str = typer.Option(None, "--by", help=BY_HELP),
    policy_file=typer.Option(None, "--policy", help=POLICY_HELP),
    preview: bool = preview_option(),
    limit: int = limit_option(),
    output: OutputFormat = format_option(PREVIEW_FORMAT_HELP),
) -> None:
    """Block a tag key on a node: it neither holds nor passes on that key."""
    from watershed.api.service import tag_changes
    from watershed.propagation.graph_store import UnknownNodeError
    from watershed.propagation.policy import UnknownTagError

    node = _node(node)
    if preview:
        return print_preview(_store(policy_file), node, "block", key, [], limit, output)
    try:
        tag_changes.block(_store(policy_file), node, key, by=by or getpass.getuser(), actor=_actor())
    except (UnknownNodeError, UnknownTagError) as exc:
        fail(str(exc))
    console.print(f"{node}: {key} blocked; run `watershed propagate`")


@app.command("unblock")
def unblock_command(
    node: str = typer.Argument(..., help=NODE_HELP),
    key: str = typer.Argument(..., help="The blocked tag key."),
    preview: bool = preview_option(),
    limit: int = limit_option(),
    output: OutputFormat = format_option(PREVIEW_FORMAT_HELP),
) -> None:
    """Lift a block."""
    from watershed.api.service import tag_changes
    from watershed.propagation.graph_store import UnknownNodeError

    node = _node(node)
    if preview:
        return print_preview(_store(), node, "unblock", key, [], limit, output)
    try:
        lifted = tag_changes.unblock(_store(), node, key, actor=_actor())
    except UnknownNodeError as exc:
        fail(str(exc))
    if not lifted:
        fail(f"{node}: {key} is not blocked")
    console.print(f"{node}: {key} unblocked; run `watershed propagate`")


@app.command("show")
def show_command(
    node: str = typer.Argument(..., help=NODE_HELP),
    output: OutputFormat = format_option("Output format: a table, or JSON (the NodeTags model)."),
) -> None:
    """A node's tags with their origin, and what stewards and rules set on it."""
    from watershed.api.service.tag_changes import node_tags
    from watershed.propagation.graph_store import UnknownNodeError

    node = _node(node)
    try:
        view = node_tags(_store(), node)
    except UnknownNodeError as exc:
        fail(str(exc))
    if output is OutputFormat.json:
        write_model(view)
        return
    table = Table(title=node)
    for column in ("tag", "values", "origin", "hops", "from"):
        table.add_column(column)
    for tag in view.tags:
        sources = sorted({f"{p.source} ({p.task}, {p.rule})" for p in tag.provenance if p.source != node})
        table.add_row(tag.key, ", ".join(tag.values), tag.origin, str(tag.hops), "\n".join(sources))
    if view.tags:
        console.print(table)
    else:
        console.print(f"{node}: no tags (run `watershed propagate` after changes)")
    for entry in view.set_here:
        what = (
            f"blocks {entry.key}" if entry.type == "BLOCKS" else f"{entry.key}={entry.value} ({entry.origin})"
        )
        rule = f", rule {entry.rule}" if entry.rule else ""
        console.print(f"  set here: {what} by {entry.by} at {entry.at}{rule}")


@app.command("why")
def why_command(
    node: str = typer.Argument(..., help=NODE_HELP),
    key: str = typer.Argument(..., help="The tag key to explain, e.g. pii."),
    max_paths: int = typer.Option(200, "--max-paths", min=1, help="Stop after this many paths."),
    output: OutputFormat = format_option("Output format: a tree, or JSON (the WhyPaths model)."),
) -> None:
    """Every path from the seed(s) to the node's tag, with the task, edge kind and rule at each hop."""
    from watershed.api.service.provenance import NoTagError, why_paths

    node = _node(node)
    try:
        why = why_paths(_store(), node, key, max_paths)
    except NoTagError as exc:
        fail(str(exc))
    if output is OutputFormat.json:
        write_model(why)
        return
    console.print(render_why(why))
    console.print(
        f"{why.paths} path(s) to a seed" + (" (stopped at --max-paths)" if why.stopped_at_max_paths else "")
    )


def render_why(why) -> Tree:
    def label(here) -> Text:
        values = ", ".join(here.values) if here.values is not None else "?"
        return styled((here.node, "bold"), f" {why.key}={values} ({here.origin})")

    def grow(branch: Tree, here) -> None:
        for child in here.sources:
            hop = f"  via {child.via.task} [{child.via.kind}] rule {child.via.rule}"
            grow(branch.add(label(child) + hop), child)

    tree = Tree(label(why.tree))
    grow(tree, why.tree)
    return tree


def why_tree(store, node: str, key: str, max_paths: int = 200) -> tuple[Tree, int]:
    """The paths back from a node's tag to its seeds, as a tree, and how many there are."""
    from watershed.api.service.provenance import why_paths

    why = why_paths(store, node, key, max_paths)
    return render_why(why), why.paths
