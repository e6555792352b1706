"""The preview of a steward's tag change: which columns and tables the next propagation run would
change, and how, before the change is made (nothing is written, nothing audited).

The change is checked as `tag_changes` checks it (the node exists, the tag is one of the policy's,
an unset or unblock has something to take back); the answer is the propagation engine's own run of
the change on an in-memory overlay (propagation/preview.py), grouped by table and bounded: the
first `limit` changes are listed, the totals count them all.

Called by `watershed tag set|unset|block|unblock --preview` (api/cli/tag.py), POST /api/v1/preview
(api/http/routers/tags.py) and the column page's Confirm step (api/web/static/preview.js).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from watershed.api.service.tag_changes import node_tags
from watershed.graph import ids
from watershed.graph.errors import WatershedError
from watershed.graph.model import node_label
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.preview import Action, OwnChange, preview

DEFAULT_LIMIT = 200
MAX_LIMIT = 5_000


class PreviewError(WatershedError, ValueError):
    """A change that cannot be previewed as asked (the message names the input)."""


class NothingToTakeBackError(WatershedError, LookupError):
    """An unset of a tag the steward never set, or an unblock of a key not blocked on the node."""


class TagChange(BaseModel):
    """One steward change, as `tag set|unset|block|unblock` makes it."""

    node: str
    action: Action
    key: str
    #: the values of a `set`
    values: list[str] = Field(default_factory=list)


class PreviewItem(BaseModel):
    node: str
    key: str
    #: the values now (empty: the node has no such tag) and after the next run (empty: removed)
    before: list[str]
    after: list[str]


class PreviewTable(BaseModel):
    table: str
    #: changes of this table (and its columns) in the whole preview, listed or not
    changes: int
    items: list[PreviewItem]


class TagPreview(BaseModel):
    change: TagChange
    #: distinct columns and tables whose tags would change (tables: the changed nodes' tables)
    columns: int
    tables: int
    #: (node, key) pairs that would change
    total: int
    limit: int
    truncated: bool
    #: changes left out because they lie in databases the caller may not see
    hidden: int = 0
    #: nodes the run would recompute, and its layers
    cone: int
    layers: int
    groups: list[PreviewTable]


def _checked(store: GraphTagStore, change: TagChange) -> OwnChange:
    view = node_tags(store, change.node)  # UnknownNodeError for a node the graph lacks
    values = sorted({v.strip() for v in change.values if v.strip()})
    if change.action == "set":
        store.policy.check_tag(change.key, values)
    elif change.action == "block":
        store.policy.check_key(change.key)
    elif values:
        raise PreviewError(f"{change.action} {change.key}: takes no values (got {', '.join(values)})")
    mine = {
        (entry.type, entry.key)
        for entry in view.set_here
        if entry.type == "BLOCKS" or entry.origin == "manual"
    }
    if change.action == "unset" and ("TAGGED", change.key) not in mine:
        raise NothingToTakeBackError(f"{change.node} has no steward's {change.key} tag")
    if change.action == "unblock" and ("BLOCKS", change.key) not in mine:
        raise NothingToTakeBackError(f"{change.key} is not blocked on {change.node}")
    return OwnChange(change.node, change.action, change.key, frozenset(values))


def _table(node: str) -> str:
    return node if node_label(node) == "Table" else ids.parent(node)


def preview_change(
    store: GraphTagStore, change: TagChange, *, limit: int = DEFAULT_LIMIT, databases: list[str] | None = None
) -> TagPreview:
    """What the next run would change if `change` were made; `databases` (None = all) limits what is
    listed, and `hidden` counts the changes left out."""
    if not 1 <= limit <= MAX_LIMIT:
        raise PreviewError(f"limit {limit}: expected 1 to {MAX_LIMIT}")
    found = preview(store, store.policy, _checked(store, change), batch_size=store.batch_size)
    visible = [d for d in found.deltas if databases is None or ids.split(d.node)[0] in databases]
    per_table: dict[str, int] = {}
    for delta in visible:
        per_table[_table(delta.node)] = per_table.get(_table(delta.node), 0) + 1
    groups: dict[str, list[PreviewItem]] = {}
    for delta in visible[:limit]:
        groups.setdefault(_table(delta.node), []).append(
            PreviewItem(
                node=delta.node, key=delta.key, before=sorted(delta.before), after=sorted(delta.after)
            )
        )
    return TagPreview(
        change=change,
        columns=len({d.node for d in visible if node_label(d.node) == "Column"}),
        tables=len(per_table),
        total=len(visible),
        limit=limit,
        truncated=len(visible) > limit,
        hidden=len(found.deltas) - len(visible),
        cone=found.cone,
        layers=found.layers,
        groups=[
            PreviewTable(table=table, changes=per_table[table], items=items)
            for table, items in sorted(groups.items())
        ],
    )


__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "NothingToTakeBackError",
    "PreviewError",
    "PreviewItem",
    "PreviewTable",
    "TagChange",
    "TagPreview",
    "preview_change",
]
