"""Query-time authorization, the shared model: a query's permission points and cells, grants,
decisions and masked rewrites.

`ingest.points` fills `QueryPoints` from a query's SQL (the lineage resolver), `api.service.authz`
checks them against the grants and rewrites the query; the CLI and the HTTP API return
these models as they are.

A cell is what a user actually reads of one base table: a set of its columns under a
conjunction of row conditions (no condition = every row). A table read twice under
different conditions gives one cell per condition.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from watershed.graph.lineage import Kind

#: `all` is every other action
Action = Literal["select", "insert", "unmask", "all"]
ACTIONS: tuple[Action, ...] = ("select", "insert", "unmask", "all")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RowCondition(_Strict):
    """A column compared with constants, on one base table: `dt = '2024-01-01'`, `app IN ('a')`.

    `op` is one of `=`, `<>`, `<`, `<=`, `>`, `>=`, `in`, `not in`, `between`, `like`,
    `not like`, `ilike`, `not ilike`, `rlike`, `not rlike`, `is null`, `is not null`;
    `values` are the constants as text (dates evaluated when the run date is known).
    """

    column: str
    op: str
    values: list[str] = Field(default_factory=list)
    text: str


class TableScope(_Strict):
    """One read of a base table and the row conditions every row read from it satisfies."""

    table: str
    conditions: list[RowCondition] = Field(default_factory=list)


class OutputSource(_Strict):
    """A base column an output value is computed from, and how (the lineage kind and functions,
    from the base column outward)."""

    column: str
    kind: Kind
    functions: list[str] = Field(default_factory=list)


class OutputColumn(_Strict):
    """One column of the outermost projection: its position, name and base columns."""

    position: int
    name: str
    sources: list[OutputSource] = Field(default_factory=list)


class Cell(_Strict):
    """Base columns of one table read under one conjunction of row conditions ([] = every row).

    `columns` holds column ids; it is empty when the query reads the table's rows but none
    of its values (`SELECT count(*) FROM t WHERE ...`).
    """

    table: str
    columns: list[str] = Field(default_factory=list)
    conditions: list[RowCondition] = Field(default_factory=list)


class QueryPoints(_Strict):
    """A query's permission points: tables, columns, rows, and the cells they combine into."""

    query_hash: str
    dialect: str
    kind: str
    #: every base table read (views and CTEs resolved to their base tables), sorted
    tables: list[str] = Field(default_factory=list)
    #: tables the statement writes (INSERT ... SELECT, CREATE TABLE AS ...)
    writes: list[str] = Field(default_factory=list)
    #: the outermost projection, in order
    columns: list[OutputColumn] = Field(default_factory=list)
    #: base columns of `a = b` predicates between two columns (values can pass across them)
    join_columns: list[str] = Field(default_factory=list)
    #: one entry per read of a base table, with its row conditions
    rows: list[TableScope] = Field(default_factory=list)
    cells: list[Cell] = Field(default_factory=list)
    #: tables named by the query that the catalog does not know
    unknown_tables: list[str] = Field(default_factory=list)
    #: what the resolver could not resolve (an unknown column, a star over an unknown table)
    problems: list[str] = Field(default_factory=list)


class Grant(_Strict):
    """A privilege of a data role. Exactly one scope: a database, a table (optionally some of its
    columns and a row condition), or a tag expression (optionally inside one database)."""

    id: str
    role: str
    actions: list[Action]
    database: str | None = None
    table: str | None = None
    #: column names of `table`; None = every column
    columns: list[str] | None = None
    #: a row-scoped grant: a condition on `table`'s columns, e.g. `app = 'douyin'`
    condition: str | None = None
    #: a tag-scoped grant: `pii<=L2`, `pii_type=email`, `app=douyin`
    tag: str | None = None
    created_by: str | None = None
    created_at: str | None = None


class SuggestedGrant(_Strict):
    """The grant that would cover a missing cell: what to ask an admin for."""

    action: Action
    table: str
    columns: list[str] = Field(default_factory=list)
    condition: str | None = None
    #: admins who may grant it (bounded)
    request_from: list[str] = Field(default_factory=list)


class MissingCell(_Strict):
    """A cell (or the write of a table) no grant of the user covers, and why."""

    table: str
    action: Action = "select"
    columns: list[str] = Field(default_factory=list)
    conditions: list[RowCondition] = Field(default_factory=list)
    reason: str
    suggestion: SuggestedGrant


class Decision(_Strict):
    """Whether a user may run a query; when denied, the parse error or the missing cells."""

    user: str
    query_hash: str
    allowed: bool
    #: a query that cannot be analysed (parse error, unknown table) is denied with this
    error: str | None = None
    missing: list[MissingCell] = Field(default_factory=list)
    #: at most this many missing cells are listed; `more_missing` counts the rest
    more_missing: int = 0
    points: QueryPoints | None = None


class OutputMask(_Strict):
    """One output column of a rewrite: whether it is masked, with which mask, and why."""

    position: int
    name: str
    masked: bool
    mask: str | None = None
    #: the sensitivity tags its value carries after the functions on its path
    tags: dict[str, list[str]] = Field(default_factory=dict)
    why: str


class Rewrite(_Strict):
    """The SQL to run for a user (None when denied), and per output column why it is masked."""

    decision: Decision
    sql: str | None = None
    outputs: list[OutputMask] = Field(default_factory=list)
