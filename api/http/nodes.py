"""Node ids in paths: parsing, the database a node belongs to, and tags as the API shows them."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Path

from watershed.api.http.problems import ApiProblem
from watershed.graph import ids

# One part of an id (graph.ids): a name without dots or backticks, or one between backticks with
# any backtick inside doubled. Written without lookarounds: the same text is the schema's pattern
# and the server's check (pydantic's regex engine has none).
_PART = r"(?:[^.`]+|`(?:[^`]|``)+`)"
TABLE_ID = rf"^{_PART}\.{_PART}$"
COLUMN_ID = rf"^{_PART}\.{_PART}\.{_PART}$"
NODE_ID = rf"^{_PART}\.{_PART}(?:\.{_PART})?$"
_QUOTING = "a part holding a dot or a backtick is written between backticks, a backtick inside doubled"

#: path parameters naming a node: the schema states their form, and a text of another form is a 422
TableId = Annotated[
    str, Path(pattern=TABLE_ID, description=f"A table id, `db.table` ({_QUOTING}).", examples=["ods.users"])
]
ColumnId = Annotated[
    str,
    Path(
        pattern=COLUMN_ID,
        description=f"A column id, `db.table.column` ({_QUOTING}).",
        examples=["ods.users.phone"],
    ),
]
NodeId = Annotated[
    str,
    Path(
        pattern=NODE_ID,
        description=f"A table id `db.table` or a column id `db.table.column` ({_QUOTING}).",
        examples=["ods.users.phone"],
    ),
]


def parse(
    node_id: str, want: Literal["Table", "Column"] | None = None
) -> tuple[str, Literal["Table", "Column"], str]:
    """(canonical id, label, database) of a `db.table` or `db.table.column` id; 400 for anything else."""
    # not stripped: the id as the path's pattern admits it, so that every text the pattern takes parses
    text = node_id.lower()
    try:
        parts = ids.split(text)
    except ids.InvalidIdError as exc:
        raise ApiProblem(400, f"{node_id!r}: {exc}") from None
    if "" in parts:
        raise ApiProblem(400, f"{node_id!r}: a name between backticks is empty")
    if len(parts) not in (2, 3):
        raise ApiProblem(400, f"{node_id!r}: expected db.table or db.table.column")
    label: Literal["Table", "Column"] = "Table" if len(parts) == 2 else "Column"
    if want is not None and label != want:
        raise ApiProblem(400, f"{node_id!r}: expected a {want.lower()} id")
    return ids.join(*parts), label, parts[0]


def missing(label: str, node_id: str) -> ApiProblem:
    return ApiProblem(404, f"{label.lower()} {node_id} not found")


def node_tags(text: str | None):
    from watershed.propagation.graph_store import decode_tags
    from watershed.propagation.views import NodeTag

    return [NodeTag.of(tag) for _, tag in sorted(decode_tags(text).items())]
