"""A table's or column's description and owner: read with where each came from, set or cleared by a
steward with the audit entry in the same write.

Where values come from and how they flow is propagation/metadata.py's: a steward's value wins over
the catalog's, the catalog's over one propagated along direct copies. A steward's change shows on
the node at once; columns downstream follow at the next propagation run, as for tags.

Called by `watershed describe|owner` (api/cli/metadata.py), the routes under
/api/v1/nodes/{id}/description and /owner (api/http/routers/metadata.py), and the table and column
pages.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime
from typing import Any, Literal

from email_validator import EmailNotValidError, validate_email
from pydantic import BaseModel, Field

from watershed.api.service.audit import statement
from watershed.graph import ids
from watershed.graph.errors import WatershedError
from watershed.graph.model import node_label
from watershed.graph.store import GraphStore
from watershed.propagation import metadata
from watershed.propagation.graph_store import UnknownNodeError

MetadataField = metadata.Field
FIELDS = metadata.FIELDS
MAX_DESCRIPTION = 2000
MAX_OWNER = 200
# a team or person's name: words, spaces and the punctuation team names use (data-platform, o'neil)
_NAME = re.compile(r"^\w[\w .'/&()+-]*$")


class InvalidMetadataError(WatershedError, ValueError):
    """A description or owner a steward gave is not acceptable; the message says why."""


class NothingToClearError(WatershedError, LookupError):
    """A steward cleared a value no steward had set on the node."""


class PathStep(BaseModel):
    """One node on a propagated value's way back to the column that holds it as its own."""

    node: str
    value: str | None = None
    source: str | None = None
    from_node: str | None = None
    via_task: str | None = None
    hops: int | None = None


class MetadataValue(BaseModel):
    """A description or an owner as shown, with where it came from."""

    value: str | None = None
    #: `steward`, `catalog`, `propagated`, or for a column's owner `table` (its table's); null: none
    source: Literal["steward", "catalog", "propagated", "table"] | None = None
    #: the catalog's and the steward's own values (a steward's wins)
    catalog: str | None = None
    steward: str | None = None
    #: who last set or cleared the steward's value, and when
    by: str | None = None
    at: str | None = None
    #: a propagated value: the column it was copied from, by which task, how many hops from its owner
    from_node: str | None = None
    via_task: str | None = None
    hops: int | None = None
    #: a propagated value's way back, this node first, the column holding it as its own last
    path: list[PathStep] = Field(default_factory=list)


class NodeMetadata(BaseModel):
    node: str
    description: MetadataValue
    owner: MetadataValue


def _text_problem(text: str, allowed: str) -> str | None:
    for char in text:
        if unicodedata.category(char) == "Cc" and char not in allowed:
            return f"contains the control character U+{ord(char):04X}"
    return None


def valid_description(text: str) -> str:
    """The description as stored (stripped): newlines and tabs are kept, any other control
    character refused (anywhere, before stripping); 1 to MAX_DESCRIPTION characters once stripped.
    api/http/models.py states the same rule as a pattern."""
    problem = _text_problem(text, "\n\t")
    if problem:
        raise InvalidMetadataError(f"the description {problem}")
    value = text.strip()
    if not value:
        raise InvalidMetadataError("a description must not be empty (clear it instead)")
    if len(value) > MAX_DESCRIPTION:
        raise InvalidMetadataError(f"a description is at most {MAX_DESCRIPTION} characters, not {len(value)}")
    return value


def valid_owner(text: str) -> str:
    """An owner as stored: an email address (normalised by email-validator) or a person's or team's name."""
    value = text.strip()
    if not value:
        raise InvalidMetadataError("an owner must not be empty (clear it instead)")
    if len(value) > MAX_OWNER:
        raise InvalidMetadataError(f"an owner is at most {MAX_OWNER} characters, not {len(value)}")
    problem = _text_problem(value, "")
    if problem:
        raise InvalidMetadataError(f"the owner {value!r} {problem}")
    if "@" in value:
        try:
            return validate_email(value, check_deliverability=False).normalized
        except EmailNotValidError as exc:
            raise InvalidMetadataError(f"the owner {value!r} is not a valid email address: {exc}") from None
    if not _NAME.match(value):
        raise InvalidMetadataError(
            f"the owner {value!r} is neither an email address nor a name (letters, digits, spaces, . ' / & ( ) + -)"
        )
    return value


_VALIDATE = {"description": valid_description, "owner": valid_owner}
_SUFFIXES = ("value", "source", "catalog", "steward", "by", "at", "from_node", "via_task", "hops")


def _read(graph: GraphStore, node: str) -> list[Any]:
    rows = graph.read(metadata.read_node(node_label(node)), {"id": node})
    if not rows:
        raise UnknownNodeError(f"{node}: no such {node_label(node).lower()} in the lineage graph")
    return rows[0]


def node_metadata(graph: GraphStore, node: str, *, with_path: bool = True) -> NodeMetadata:
    """A node's description and owner with their sources (and a propagated one's path back)."""
    row = _read(graph, node)
    per = len(_SUFFIXES)
    values: dict[str, MetadataValue] = {}
    for i, field in enumerate(FIELDS):
        value = MetadataValue(**dict(zip(_SUFFIXES, row[i * per : (i + 1) * per], strict=True)))
        if value.source == metadata.PROPAGATED and with_path:
            value.path = [
                PathStep(
                    node=s["node"],
                    value=s["value"],
                    source=s["source"],
                    from_node=s["from"],
                    via_task=s["via_task"],
                    hops=s["hops"],
                )
                for s in metadata.why_path(graph, node, field)
            ]
        values[field] = value
    table_owner, table_owner_source = row[-2], row[-1]
    owner = values["owner"]
    if owner.value is None and table_owner is not None:
        # a column without an owner of its own is its table's
        owner.value, owner.source = table_owner, "table"
        owner.path = [PathStep(node=ids.split_last(node)[0], value=table_owner, source=table_owner_source)]
    return NodeMetadata(node=node, description=values["description"], owner=owner)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _audit_value(value: MetadataValue) -> dict[str, Any]:
    return {"value": value.value, "source": value.source, "steward": value.steward}


def set_value(graph: GraphStore, node: str, field: MetadataField, text: str, *, actor: str) -> NodeMetadata:
    """A steward's description or owner on `node` (checked first: InvalidMetadataError, nothing written)."""
    value = _VALIDATE[field](text)
    before = node_metadata(graph, node, with_path=False)
    params = {"id": node, "value": value, "by": actor, "at": _now()}
    graph.write_all(
        [
            (metadata.set_own(node_label(node), field), params),
            statement(
                actor,
                f"{field}.set",
                f"{node}:{field}",
                _audit_value(getattr(before, field)),
                {"value": value, "source": metadata.STEWARD},
            ),
        ]
    )
    return node_metadata(graph, node)


def clear_value(graph: GraphStore, node: str, field: MetadataField, *, actor: str) -> NodeMetadata:
    """Take back the steward's value: the catalog's shows again, or one propagated from the next run."""
    before = node_metadata(graph, node, with_path=False)
    held = getattr(before, field)
    if held.steward is None:
        raise NothingToClearError(f"{node} has no {field} a steward set")
    params = {"id": node, "value": None, "by": actor, "at": _now()}
    after = {"value": held.catalog, "source": metadata.CATALOG if held.catalog is not None else None}
    graph.write_all(
        [
            (metadata.set_own(node_label(node), field), params),
            statement(actor, f"{field}.clear", f"{node}:{field}", _audit_value(held), after),
        ]
    )
    return node_metadata(graph, node)
