"""Models only the HTTP API has; the others are the packages' own (GraphStats, HarvestRun, NodeTags, WhyPaths, RunRecord, ...)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from watershed.graph.model import TagMap
from watershed.propagation.views import NodeTag


class Health(BaseModel):
    status: Literal["ok"] = "ok"


class Login(BaseModel):
    token: str = Field(max_length=512)


class TableColumn(BaseModel):
    id: str
    name: str
    type: str | None = None
    tags: TagMap = Field(default_factory=dict)
    ttl_days_recommended: int | None = None


class Protection(BaseModel):
    """What the encryption policy makes of the table's tagged columns (a plan: applying it is `watershed ddl`)."""

    encrypted_columns: list[str] = Field(default_factory=list)
    masked_columns: list[str] = Field(default_factory=list)
    #: `none` (nothing tagged needs it), `planned` (columns to encrypt), `no_policy` (no encryption policy set)
    status: Literal["none", "planned", "no_policy"]


class TableView(BaseModel):
    id: str
    db: str
    name: str
    layer: str | None = None
    owner: str | None = None
    format: str | None = None
    location: str | None = None
    ttl_days: int | None = None
    columns: list[TableColumn] = Field(default_factory=list)
    tags: list[NodeTag] = Field(default_factory=list)
    protection: Protection
    ddl: str | None = None


class TtlView(BaseModel):
    status: str
    days_recommended: int | None = None
    evidence: list[dict[str, Any]] = Field(default_factory=list)


class ColumnView(BaseModel):
    id: str
    table: str
    name: str
    type: str | None = None
    tags: list[NodeTag] = Field(default_factory=list)
    blocks: list[str] = Field(default_factory=list)
    ttl: TtlView | None = None


class TaskInfo(BaseModel):
    id: str
    #: the task's SQL text (null for tasks loaded before the graph kept it)
    sql: str | None = None
    dialect: str | None = None
    owner: str | None = None


class EdgeDetail(BaseModel):
    source: str
    target: str
    type: str
    kind: str | None = None
    functions: list[str] = Field(default_factory=list)
    task: TaskInfo | None = None


class TagValues(BaseModel):
    values: list[str] = Field(min_length=1, max_length=100)


class RunStart(BaseModel):
    full: bool = False


class HarvestError(BaseModel):
    """One line of a harvest run's errors.jsonl."""

    model_config = {"extra": "allow"}


class TtlAdvice(BaseModel):
    """A column's stored TTL advice (written by `watershed ttl advise`)."""

    column: str
    table: str
    status: str
    ttl_days_recommended: int | None = None
    #: bytes the recommended TTL would free (sampled ORC files); None when the table's size is unknown
    savings_bytes: int | None = None
    evidence: list[dict[str, Any]] = Field(default_factory=list)


class Ddl(BaseModel):
    ddl: str


class SqlLineageRequest(BaseModel):
    sql: str
    dialect: str = "hive"
    #: ${name} substitutions, e.g. {"date": "2024-01-31"}
    vars: dict[str, str] = Field(default_factory=dict)


class UserCreate(BaseModel):
    name: str
    role: Literal["viewer", "steward", "admin"]
    databases: list[str] | None = None


class UserPatch(BaseModel):
    role: Literal["viewer", "steward", "admin"] | None = None
    #: a list limits the user to those databases; null gives all; leave out to keep it
    databases: list[str] | None = Field(default=None)
