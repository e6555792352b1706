"""Models only the HTTP API has; the others are the packages' own (GraphStats, HarvestRun, NodeTags, WhyPaths, RunRecord, ...) and the use cases' (HarvestProblem, TtlAdvice, ...)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from watershed.api.http.nodes import NODE_ID, TABLE_ID
from watershed.api.service.accounts.names import RULE as NAME_RULE
from watershed.api.service.accounts.names import UserName
from watershed.api.service.authz.errors import AuthzError
from watershed.api.service.authz.grants import check_name
from watershed.api.service.node_metadata import InvalidMetadataError, NodeMetadata, valid_description
from watershed.api.service.tag_preview import TagChange
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

# ------------------------------------------------------------------ names the schema states
# Each rule below is checked by its own validator (the use case's, where it has one) and stated
# as a schema pattern that takes exactly the texts the validator takes, so a client (or a
# schema-driven test) knows in advance what is refused; tests/api/test_name_patterns.py
# compares the two on generated names. The patterns have no lookaround (ECMA-262, Python's and
# Rust's engines read them alike) and name their characters, as `\s` differs between engines.

#: the characters `str.strip()` takes away (Python's whitespace), as the body of a regex class
_SPACE = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
#: a data role's or a group's name (api.service.authz.grants.check_name): trimmed, 1-100 characters
#: without a slash, a backslash, a tab, a line break or a space
ROLE_PATTERN = (
    rf"^[{_SPACE}]*(?:[^{_SPACE}/\\]|[^{_SPACE}/\\][^/\\\t\n\r ]{{0,98}}[^{_SPACE}/\\])[{_SPACE}]*$"
)
ROLE_RULE = "1-100 characters once trimmed, no spaces, tabs, line breaks or slashes"
#: a database name in a user's scope or a grant: trimmed, not empty, no dots or backticks (any case)
DATABASE_PATTERN = rf"^[{_SPACE}]*[^{_SPACE}.`][^.`]*$"
DATABASE_RULE = "a database name: not blank, no dots or backticks"


def _role_name(what: str):
    def check(text: str) -> str:
        try:
            return check_name(text, what)
        except AuthzError:
            # a custom error type: pydantic would prefix a ValueError's message with "Value error, "
            raise PydanticCustomError(
                "name", "{what} name {name}: {rule}", {"what": what, "name": ascii(text), "rule": ROLE_RULE}
            ) from None

    return check


def _database_name(text: str) -> str:
    name = text.strip()
    if not name or "." in name or "`" in name:
        raise PydanticCustomError(
            "database", "database {name}: {rule}", {"name": ascii(text), "rule": DATABASE_RULE}
        )
    return text


def _stated(pattern: str, description: str, **extra) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "pattern": pattern, "description": description, **extra})


#: a data role's name (a body field, a path or a query parameter); 422 naming it when it breaks the rule
RoleName = Annotated[
    str, AfterValidator(_role_name("role")), _stated(ROLE_PATTERN, f"A data role: {ROLE_RULE}.")
]
#: a group's name
GroupName = Annotated[
    str, AfterValidator(_role_name("group")), _stated(ROLE_PATTERN, f"A group: {ROLE_RULE}.")
]
#: a database name (stored in lower case, trimmed)
DatabaseName = Annotated[str, AfterValidator(_database_name), _stated(DATABASE_PATTERN, f"{DATABASE_RULE}.")]
#: a grant's id: `g` and 15 hex digits, the digest of what it grants (api.service.authz.grants.grant_id)
GRANT_ID_PATTERN = r"^g[0-9a-f]{15}$"
#: an API token's id: 16 hex digits, the `<id>` of `wst_<id>_<secret>` (api.service.accounts.tokens)
TOKEN_ID_PATTERN = r"^[0-9a-f]{16}$"


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
    #: the column's description as shown (its own, the catalog's or propagated)
    description: str | None = None


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
    #: the table's description and owner with where each came from (api/service/node_metadata.py)
    metadata: NodeMetadata | None = None


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
    #: the column's description and owner with where each came from, and a propagated one's path back
    metadata: NodeMetadata | None = None


class TaskInfo(BaseModel):
    id: str
    #: the task's SQL text (null for tasks loaded before the graph kept it)
    sql: str | None = None
    dialect: str | None = None
    owner: str | None = None


class TextSpan(BaseModel):
    """Characters `start` (included) to `end` (excluded) of a text."""

    start: int
    end: int


class EdgeDetail(BaseModel):
    source: str
    target: str
    type: str
    kind: str | None = None
    functions: list[str] = Field(default_factory=list)
    task: TaskInfo | None = None
    #: where the task's SQL writes the target column: its select item (one per UNION side), empty
    #: when that cannot be told, e.g. a `*` (ingest/expression_spans.py)
    expressions: list[TextSpan] = Field(default_factory=list)


class TagValues(BaseModel):
    values: list[str] = Field(min_length=1, max_length=100)


#: the spaces a description may begin or end with (`_SPACE` less its control characters but tab
#: and line feed), and the control characters it may hold nowhere (all but tab and line feed)
_DESCRIPTION_SPACE = r"\t\n\x20\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_CONTROL = r"\x00-\x08\x0b-\x1f\x7f-\x9f"
#: a description (api.service.node_metadata.valid_description): no control character but tab and
#: line feed, 1-2,000 characters once stripped
DESCRIPTION_PATTERN = (
    rf"^[{_DESCRIPTION_SPACE}]*(?:[^{_SPACE}{_CONTROL}]|[^{_SPACE}{_CONTROL}][^{_CONTROL}]{{0,1998}}"
    rf"[^{_SPACE}{_CONTROL}])[{_DESCRIPTION_SPACE}]*$"
)
DESCRIPTION_RULE = "1-2,000 characters once trimmed, no control characters but tabs and line feeds"


def _description(text: str) -> str:
    try:
        return valid_description(text)
    except InvalidMetadataError as exc:
        raise PydanticCustomError("description", "{problem}", {"problem": str(exc)}) from None


class DescriptionText(BaseModel):
    """A steward's description of a table or column."""

    value: Annotated[str, AfterValidator(_description), _stated(DESCRIPTION_PATTERN, f"{DESCRIPTION_RULE}.")]


class OwnerText(BaseModel):
    """A steward's owner of a table or column: an email address (email-validator checks it) or a
    person's or team's name (api/service/node_metadata.py `valid_owner`)."""

    value: str = Field(min_length=1, max_length=400)


class RunStart(BaseModel):
    full: bool = False


class Ddl(BaseModel):
    ddl: str


class SqlLineageRequest(BaseModel):
    sql: str
    dialect: str = "hive"
    #: ${name} substitutions, e.g. {"date": "2024-01-31"}
    vars: dict[str, str] = Field(default_factory=dict)


class UserCreate(BaseModel):
    name: UserName = Field(description=f"Stored in lower case; {NAME_RULE}.")
    role: Literal["producer", "viewer", "steward", "admin"]
    #: a list limits the user to those databases (any case, stored in lower case); null gives all
    databases: list[DatabaseName] | None = Field(default=None, min_length=1)


class UserPatch(BaseModel):
    role: Literal["producer", "viewer", "steward", "admin"] | None = None
    #: a list limits the user to those databases; null gives all; leave out to keep it
    databases: list[DatabaseName] | None = Field(default=None, min_length=1)


class PreviewRequest(TagChange):
    """POST /preview: the change to preview, as the change's own route would take it."""

    node: str = Field(pattern=NODE_ID, description="A table id `db.table` or a column id `db.table.column`.")
    values: list[str] = Field(default_factory=list, max_length=100)
