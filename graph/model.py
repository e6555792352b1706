"""The graph's domain model (see the architecture's "The graph").

Nodes: Table {id: db.table}, Column {id: db.table.column}, Task {id, version}.
Edges: Column-[FLOWS_TO {task, kind, functions, key}]->Column,
Column-[INFLUENCES {task, role}]->Table, Table-[FLOWS_TO {task}]->Table,
Task-[READS {predicates, partition_window}]->Table, Task-[WRITES]->Table,
Table-[HAS_COLUMN]->Column.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

from watershed.graph import ids

NodeLabel = Literal["Table", "Column", "Task", "HarvestRun"]
Direction = Literal["upstream", "downstream"]
Level = Literal["column", "table"]


def node_label(node_id: str) -> Literal["Table", "Column"]:
    """Table ids are `db.table`, column ids `db.table.column`: the label follows from the id."""
    try:
        depth = ids.depth(node_id)
    except ids.InvalidIdError:
        depth = node_id.count(".") + 1  # not a well-formed id: read as before ids were quoted
    return "Table" if depth == 2 else "Column"


class GraphNode(BaseModel):
    id: str
    label: NodeLabel
    properties: dict[str, Any] = Field(default_factory=dict)


class GraphEdge(BaseModel):
    source: str
    target: str
    type: str
    properties: dict[str, Any] = Field(default_factory=dict)


class LineageSubgraph(BaseModel):
    """A node's upstream or downstream lineage: every node and edge within the depth."""

    root: str
    direction: Direction
    level: Level
    depth: int
    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[GraphEdge] = Field(default_factory=list)


class GraphStats(BaseModel):
    tables: int = 0
    columns: int = 0
    tasks: int = 0
    column_edges: int = 0
    weak_edges: int = 0
    table_edges: int = 0


class ServiceState(BaseModel):
    """One embedded service of `watershed services` (falkordb, redis, kms)."""

    name: str
    port: int
    running: bool
    answering: bool
    #: why a recorded process is not trusted (a stale pid file), when it is not
    note: str | None = None


class ServicesStatus(BaseModel):
    """`services status`: the absolute data directory the services run from, and each service."""

    data_dir: str
    services: list[ServiceState] = Field(default_factory=list)


class LoadResult(BaseModel):
    """What one bulk upsert did."""

    loaded: int = 0
    unchanged: int = 0
    column_edges: int = 0
    weak_edges: int = 0
    table_edges: int = 0
    seconds: float = 0.0
    #: ids of tasks another source had loaded, now this load's (its source names one)
    taken_over: list[str] = Field(default_factory=list)


class HarvestRun(BaseModel):
    id: str
    started_at: str
    inputs: list[str] = Field(default_factory=list)
    tasks: int = 0
    errors: int = 0
    loaded: int = 0
    unchanged: int = 0
    seconds: float = 0.0


LineageDirection = Literal["upstream", "downstream", "both"]


TagMap = dict[str, list[str]]


def tag_values(text: str | None) -> TagMap:
    """{key: [values]} of a node's stored tags: the JSON text propagation writes on `n.tags`
    (`{key: {"v": [values], ...provenance}}`, propagation/graph_store.py encode_tags)."""
    if not text:
        return {}
    return {key: list(item["v"]) for key, item in json.loads(text).items()}


class LineageNode(BaseModel):
    id: str
    label: Literal["Table", "Column"]
    table: str | None = None
    tags: TagMap = Field(default_factory=dict)

    @classmethod
    def at(cls, node_id: str, label: Literal["Table", "Column"], stored_tags: str | None) -> LineageNode:
        """The node as a lineage answer shows it, from its id and its stored tags text."""
        table = ids.parent(node_id) if label == "Column" else node_id
        return cls(id=node_id, label=label, table=table, tags=tag_values(stored_tags))


class LineageEdge(BaseModel):
    source: str
    target: str
    type: str = "FLOWS_TO"
    kind: str | None = None
    task: str | None = None
    functions: list[str] = Field(default_factory=list)


class LineageView(BaseModel):
    """A node's bounded lineage as the API and `watershed graph lineage --format json` give it."""

    root: str
    direction: LineageDirection
    level: Level
    depth: int
    nodes: list[LineageNode] = Field(default_factory=list)
    edges: list[LineageEdge] = Field(default_factory=list)
    #: the node limit cut the walk: there is more lineage than shown
    truncated: bool = False


ProposalStatus = Literal["open", "accepted", "rejected"]


class ProposalEvidence(BaseModel):
    """What a discovery proposal rests on, revealing no value: counts and masked examples."""

    #: detector name -> how many sampled values it validated (only detectors that validated one)
    detectors: dict[str, int] = Field(default_factory=dict)
    #: at most two values of the winning detector, masked (`138****5678`), never a raw value
    examples: list[str] = Field(default_factory=list)
    #: the pii_type the policy's column-name rules give the column, if any (one more signal)
    name_rule: str | None = None


class ColumnProposal(BaseModel):
    """A tag discovery proposes for a column (`DiscoveryProposal` node, id = the column id)."""

    column: str
    table: str
    #: the tags accepting it sets, e.g. {"pii": "L3", "pii_type": "phone"}
    tags: dict[str, str]
    #: the share of non-null sampled values the winning detector validated
    confidence: float
    #: how many non-null values were sampled
    sampled: int
    evidence: ProposalEvidence = Field(default_factory=ProposalEvidence)
    #: the detectors' verdict (which kinds of value the column holds), hashed: a rejected proposal
    #: comes back only when this changes
    content: str
    status: ProposalStatus = "open"
    #: when it was proposed or last decided, and by whom (decisions only)
    at: str
    by: str | None = None
    run: str | None = None


FlagKind = Literal["leak", "over_tag"]


class FlagStep(BaseModel):
    """One lineage edge on a flag's path (source -> target), with what the policy's function-effect
    table does to the flagged family on it."""

    source: str
    target: str
    task: str | None = None
    kind: str | None = None
    functions: list[str] = Field(default_factory=list)
    #: function -> its effect (`keep`, `drop`, `downgrade:L1`, `retype:x`); `opaque:<effect>` for a
    #: function the effect table does not name (a UDF: the policy's unknown_function applies)
    effects: dict[str, str] = Field(default_factory=dict)


class DiscoveryFlag(BaseModel):
    """A derived column whose sampled content disagrees with the tags propagation gave it
    (`DiscoveryFlag` node, id = the column id), stored with its table's scan.

    `leak`: the content validates as sensitive while the column holds no tag of the family, or a
    lower level; `over_tag`: a propagated tag whose type no sampled value validates as."""

    column: str
    table: str
    kind: FlagKind
    #: the family's tags the content supports (leak) or the propagated tags it does not (over_tag)
    tags: dict[str, str]
    #: the family's tags the column holds when sampled (key -> values)
    held: dict[str, list[str]] = Field(default_factory=dict)
    #: the share of the non-null sampled values that validate as the type (leak: the best type's)
    confidence: float
    sampled: int
    evidence: ProposalEvidence = Field(default_factory=ProposalEvidence)
    #: where the path back ends: the nearest column holding the family's tag, else a root
    root: str | None = None
    root_tagged: bool = False
    #: the lineage path from `root` to the column
    path: list[FlagStep] = Field(default_factory=list)
    #: why, in one sentence (no value)
    reason: str = ""
    at: str
    run: str | None = None
