"""Models only the HTTP API has; the others are the packages' own (GraphStats, HarvestRun, NodeTags, WhyPaths, RunRecord, ...)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from watershed.api.accounts.names import RULE as NAME_RULE
from watershed.api.accounts.names import UserName
from watershed.api.http.nodes import TABLE_ID
from watershed.graph.model import TagMap
from watershed.graph.protection import (
    ColumnAction,
    ColumnKey,
    ProtectionPlan,
    ProtectionRun,
    TablePlan,
    TableProtection,
)
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


ColumnProtectionState = Literal["encrypted", "pending", "released"]


class ColumnProtection(BaseModel):
    """One column the tag policy's protection section asks for, or that is still encrypted."""

    name: str
    #: `encrypted`: recorded files hold it as the policy asks; `pending`: the policy asks for it and
    #: no recorded file holds it so (new, or to re-encrypt under another key or mask); `released`:
    #: encrypted, but no rule protects its tags any more
    state: ColumnProtectionState
    #: what the policy asks (null when released)
    want: ColumnKey | None = None
    #: what the recorded files hold: key, mask, and every master key version seen
    key: str | None = None
    mask: str | None = None
    versions: list[int] = Field(default_factory=list)
    #: recorded files holding it, and the run that first encrypted one of them
    files: int = 0
    since_run: str | None = None
    since: str | None = None
    #: whether the table's recorded options (its DDL) encrypt it in future writes
    options_set: bool = False
    #: the plan's action for it (null when nothing is to change) and the tag that decides it
    action: ColumnAction | None = None
    tag: str | None = None
    why: str = ""


class Protection(BaseModel):
    """A table's protection under the tag policy's `protection:` section, from the graph's records
    (no ORC file is read for it: see GET /tables/{t}/protection?files=true)."""

    #: `none` (nothing needs it), `protected` (all done), `pending` (a column or the table's options
    #: still to do), `no_policy` (the tag policy has no protection rules)
    status: Literal["none", "protected", "pending", "no_policy"]
    columns: list[ColumnProtection] = Field(default_factory=list)
    encrypted_columns: list[str] = Field(default_factory=list)
    pending_columns: list[str] = Field(default_factory=list)
    #: the statements the plan would run to set the table's options (empty once they are set)
    ddl: list[str] = Field(default_factory=list)
    #: files recorded as protected (by an apply); files written since are not known without a tail read
    files_recorded: int = 0
    problems: list[str] = Field(default_factory=list)
    policy_digest: str | None = None


class TableProtectionAnswer(BaseModel):
    """GET /tables/{t}/protection: the state, the table's record, and its plan."""

    table: str
    protection: Protection
    record: TableProtection | None = None
    #: the table's plan (null when nothing is to change); with `files=true` its files were read
    plan: TablePlan | None = None
    #: files the plan lists in all (`plan.files` holds at most `limit` of them)
    plan_files: int = 0
    files_truncated: bool = False


#: a table id in a body, of the form the schema states (api.http.nodes)
TableIdText = Annotated[str, Field(pattern=TABLE_ID)]


class ProtectPlanRequest(BaseModel):
    #: these tables only (at most 500, every one reported); default: every table, paged
    tables: list[TableIdText] | None = Field(default=None, min_length=1, max_length=500)
    #: read each file's ORC tail (the files to rewrite); without it only columns and DDL are planned
    files: bool = False
    #: tables of the catalog examined per page (when `tables` is not given)
    limit: int = Field(default=50, ge=1, le=500)
    cursor: str | None = Field(default=None, max_length=1000)
    #: files of each table's plan listed at most (with `files`)
    files_limit: int = Field(default=200, ge=1, le=1000)


class ProtectPlanPage(BaseModel):
    plan: ProtectionPlan
    #: tables of the catalog examined for this page (those with nothing to change are left out)
    examined: int
    next_cursor: str | None = None
    #: table -> files its plan lists in all, for the tables whose files were cut to `files_limit`
    files_truncated: dict[str, int] = Field(default_factory=dict)


class ProtectApplyRequest(BaseModel):
    #: these tables only (at most 500); default: every table of the catalog
    tables: list[TableIdText] | None = Field(default=None, min_length=1, max_length=500)


class ProtectRunView(ProtectionRun):
    """A protection run's record and, while this service runs it, its progress."""

    #: files the run's plan lists (null while it is still planning)
    files_planned: int | None = None
    #: files finished so far (done, unchanged, skipped or failed)
    files_finished: int = 0
    #: who started it (runs started through the API)
    actor: str | None = None


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
    #: the table's CREATE TABLE with the options the policy asks for (null: a column has no Spark type)
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


class HarvestProblem(BaseModel):
    """One line of a harvest run's errors.jsonl (a statement that could not be analysed, a bad
    task record, a duplicate task id): a record, not an exception."""

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
    name: UserName = Field(description=f"Stored in lower case; {NAME_RULE}.")
    role: Literal["viewer", "steward", "admin"]
    databases: list[str] | None = None


class UserPatch(BaseModel):
    role: Literal["viewer", "steward", "admin"] | None = None
    #: a list limits the user to those databases; null gives all; leave out to keep it
    databases: list[str] | None = Field(default=None)
