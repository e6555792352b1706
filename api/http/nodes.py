"""Node ids in paths: parsing, the database a node belongs to, and tags as the API shows them."""

from __future__ import annotations

from typing import Literal

from watershed.api.http.problems import ApiProblem
from watershed.graph import ids


def parse(
    node_id: str, want: Literal["Table", "Column"] | None = None
) -> tuple[str, Literal["Table", "Column"], str]:
    """(canonical id, label, database) of a `db.table` or `db.table.column` id; 400 for anything else."""
    text = node_id.strip().lower()
    try:
        parts = ids.split(text)
    except ids.InvalidIdError as exc:
        raise ApiProblem(400, f"{node_id!r}: {exc}") from None
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
