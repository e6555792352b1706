"""Pydantic models at the boundary of the lineage extractor.

Identifiers are lower case and fully qualified: a table is `db.table`, a
column `db.table.column`, a name holding a dot written between backticks
(``ods.x.`y.z` ``; built and split only by `graph.ids`); a nested key of a column
(JSON path, struct field, map key) is kept apart in `key` and written
`db.table.column#$.a.b` by `id`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from watershed.graph import ids

Kind = Literal["direct", "expression", "aggregate", "window", "conditional-value", "script"]
#: `window`: a window's PARTITION BY / ORDER BY column as OpenLineage reports it (INDIRECT/WINDOW)
Role = Literal["filter", "join", "group", "order", "condition", "window"]

#: the function an OpenLineage hop marked `masking: true` carries (a producer that saw a hash or a
#: mask, without saying which): propagation's policy counts it among the hash functions
OPENLINEAGE_MASKING = "openlineage.masking"

#: Strength order used when several transformations lie on one path: the
#: strongest wins (an aggregate over a CASE value is an aggregate).
KIND_STRENGTH: dict[str, int] = {
    "direct": 0,
    "expression": 1,
    "conditional-value": 2,
    "aggregate": 3,
    "window": 4,
    #: TRANSFORM ... USING 'script': an opaque program, so nothing is known of what it did
    "script": 5,
}


class SqlTask(BaseModel):
    """One SQL task: a script of one or more statements."""

    task_id: str
    sql: str
    dialect: str = "hive"
    version: str | None = None
    owner: str | None = None
    schedule: str | None = None
    vars: dict[str, str] = Field(default_factory=dict)
    #: where the task came from (a harvest corpus, an OpenLineage producer's namespace): a
    #: harvest prunes only its own source's tasks; None for tasks loaded before sources existed
    source: str | None = None

    @field_validator("task_id")
    @classmethod
    def _task_id_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("task_id must not be blank")
        return value.strip()

    @property
    def sql_hash(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()[:16]

    @property
    def effective_version(self) -> str:
        """The declared version, or the SQL hash: a changed script is a new version."""
        return self.version or self.sql_hash


# The records below are slotted dataclasses rather than pydantic models: an
# extraction creates tens of them per statement, and a dataclass costs a sixth
# of a model to build. Pydantic still validates them whenever a `TaskLineage`
# is loaded from JSON, and serialises them with it.


@dataclass(slots=True, kw_only=True)
class SourceColumn:
    """One value source of a written column."""

    column: str
    key: str | None = None
    kind: Kind
    functions: list[str] = field(default_factory=list)
    #: what a producer said the hop does (an OpenLineage transformation's description), kept on the edge
    description: str | None = None

    @property
    def id(self) -> str:
        return f"{self.column}#{self.key}" if self.key else self.column

    @property
    def table(self) -> str:
        return ids.parent(self.column)


@dataclass(slots=True, kw_only=True)
class ColumnLineage:
    """A written column and the columns its value is computed from."""

    target: str
    sources: list[SourceColumn] = field(default_factory=list)

    @property
    def table(self) -> str:
        return ids.parent(self.target)


@dataclass(slots=True, kw_only=True)
class WeakReference:
    """A column that decides which rows flow into `target_table`, not their values."""

    column: str
    role: Role
    target_table: str

    @property
    def table(self) -> str:
        return ids.parent(self.column)


@dataclass(slots=True, kw_only=True)
class Predicate:
    """A column-versus-literal filter on one source table, after variable substitution.

    `text` is the normalised predicate with the column unqualified and on the
    left, dates evaluated when known: `dt >= '2024-01-11'`, `app IN ('a', 'b')`.
    `values` holds the raw values (`2024-01-11`, `a`, `b`).
    """

    column: str
    op: str
    values: list[str] = field(default_factory=list)
    text: str


@dataclass(slots=True, kw_only=True)
class TableRead:
    """A source table with the filters it is read under and its partition window."""

    table: str
    predicates: list[Predicate] = field(default_factory=list)
    partition_window_days: int | None = None
    partition_columns: list[str] = field(default_factory=list)
    #: partition filters that could not be turned into day bounds (they make the window unbounded)
    unparsed_partition_predicates: list[str] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class TableEdge:
    source: str
    target: str


StatementKind = Literal[
    "insert",
    "multi-insert",
    "create-table-as",
    "create-view",
    "temporary-view",
    "merge",
    "update",
    "delete",
    "clone",
    "alter",
    "load",
    "unload",
    "select",
    "use",
    "set",
    "command",
    "ddl",
]


class StatementLineage(BaseModel):
    index: int
    line: int
    kind: StatementKind
    reads: list[TableRead] = Field(default_factory=list)
    writes: list[str] = Field(default_factory=list)
    columns: list[ColumnLineage] = Field(default_factory=list)
    weak_references: list[WeakReference] = Field(default_factory=list)
    table_edges: list[TableEdge] = Field(default_factory=list)
    unresolved: list[str] = Field(default_factory=list)
    #: `create-view`: the view's query as SQL of the task's dialect, kept on the view's Table node
    #: so query-time checks read through the view to its base tables
    view_sql: str | None = None


class StatementProblem(BaseModel):
    """A statement of a task that could not be analysed: recorded in `TaskLineage.errors` (and a
    harvest's errors.jsonl) while the task's other statements still yield their lineage."""

    task_id: str
    statement_index: int
    line: int | None = None
    column: int | None = None
    message: str
    #: the parser's own description when it differs from `message` (a sentence in words)
    detail: str | None = None


class TaskLineage(BaseModel):
    """Everything one SQL task contributes to the lineage graph.

    The task-level lists merge the statements: `reads` holds one entry per
    table (predicates united, the widest window), `columns` one entry per
    written column, and temporary views never appear as tables.
    """

    task_id: str
    dialect: str
    version: str | None = None
    statements: list[StatementLineage] = Field(default_factory=list)
    reads: list[TableRead] = Field(default_factory=list)
    writes: list[str] = Field(default_factory=list)
    columns: list[ColumnLineage] = Field(default_factory=list)
    weak_references: list[WeakReference] = Field(default_factory=list)
    table_edges: list[TableEdge] = Field(default_factory=list)
    unresolved: list[str] = Field(default_factory=list)
    errors: list[StatementProblem] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors
