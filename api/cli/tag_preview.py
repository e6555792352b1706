"""`watershed tag set|unset|block|unblock --preview`: what the next run would change, printed instead
of making the change (api/service/tag_preview.py)."""

from __future__ import annotations

import typer

from watershed.api.cli.output import OutputFormat, console, fail, styled, write_model
from watershed.graph import ids

PREVIEW_HELP = "Show which tags the next propagation run would change, and change nothing."
LIMIT_HELP = "With --preview: list at most this many changes (the totals count them all)."


def preview_option() -> bool:
    return typer.Option(False, "--preview", help=PREVIEW_HELP)


def limit_option() -> int:
    from watershed.api.service.tag_preview import DEFAULT_LIMIT, MAX_LIMIT

    return typer.Option(DEFAULT_LIMIT, "--limit", min=1, max=MAX_LIMIT, help=LIMIT_HELP)


def print_preview(store, node: str, action: str, key: str, values: list[str], limit: int, output) -> None:
    """Preview the change on `store` and print it (a table and the totals, or the TagPreview JSON)."""
    from watershed.api.service.tag_preview import (
        NothingToTakeBackError,
        PreviewError,
        TagChange,
        preview_change,
    )
    from watershed.propagation.graph_store import UnknownNodeError
    from watershed.propagation.policy import UnknownTagError

    change = TagChange(node=node, action=action, key=key, values=values)
    try:
        found = preview_change(store, change, limit=limit)
    except (UnknownNodeError, UnknownTagError, NothingToTakeBackError, PreviewError) as exc:
        fail(str(exc))
    if output is OutputFormat.json:
        write_model(found)
        return
    what = f"{action} {key}" + (f"={','.join(values)}" if values else "")
    if not found.total:
        console.print(f"{node}: {what} would change no tags ({found.cone} nodes recomputed); nothing changed")
        return
    # plain lines, not a rich table: ids are long, and a table squeezed to the terminal breaks them
    console.print(styled((f"{node}: {what} (preview)", "bold")))
    rows = [
        (group, "(table)" if item.node == group.table else ids.name(item.node), item)
        for group in found.groups
        for item in group.items
    ]
    name_width = max(len(name) for _, name, _ in rows)
    key_width = max(len(item.key) for _, _, item in rows)
    current = None
    for group, name, item in rows:
        if group is not current:
            current = group
            console.print(styled((group.table, "bold"), f" ({group.changes} changes)"))
        before, after = ",".join(item.before) or "(none)", ",".join(item.after) or "(none)"
        console.print(f"  {name:<{name_width}}  {item.key:<{key_width}}  {before} -> {after}")
    shown = sum(len(group.items) for group in found.groups)
    console.print(
        f"{found.columns} columns in {found.tables} tables would change ({found.total} tags"
        + (f", {shown} listed: --limit" if found.truncated else "")
        + (f"; {found.hidden} in databases you may not see" if found.hidden else "")
        + "); nothing changed: run without --preview to make the change"
    )


__all__ = ["limit_option", "preview_option", "print_preview"]
