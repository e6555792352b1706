"""Query-time authorization: a query's permission points, a user's decision and masked rewrite,
and the data roles, groups and grants behind them (docs/authz.md).

Anyone authenticated may analyse a query and check or rewrite their own; checking for another
user needs an admin (a query gateway runs with an admin token). Roles, groups and grants are
managed by admins, a database-limited admin inside their databases only. Every decision and
every change is audited; a decision's entry never holds the SQL text. A bad request (an
unparseable query, an unknown action or column) answers 400 and a missing role, grant or
membership 404, through the exception handlers of `api.http.problems`.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Path, Query, Response
from pydantic import BaseModel, Field, ValidationInfo, field_validator

from watershed.api.http.deps import Service, admin, caller, service
from watershed.api.http.models import GRANT_ID_PATTERN, DatabaseName, GroupName, RoleName
from watershed.api.http.problems import ApiProblem
from watershed.api.service.accounts.names import (
    RULE,
    InvalidUserNameError,
    UserName,
    user_name,
    validated_user_name,
)
from watershed.api.service.accounts.rights import Me
from watershed.api.service.authz import DataRole
from watershed.graph.authz import Action, Decision, Grant, QueryPoints, Rewrite
from watershed.ingest.limits import analysis_limits

router = APIRouter(prefix="/authz", tags=["authz"])

#: what a list of grants answers at most (a role with more is an operator's mistake to see)
MAX_GRANTS = 1000


class QueryRequest(BaseModel):
    sql: str = Field(min_length=1, description="One statement: a query, or a statement that reads.")
    dialect: str = Field("spark", description="The SQL dialect (sqlglot's name); the gateway's engine.")
    user: UserName | None = Field(
        None,
        description="Whose query (default: the caller); another user's needs admin (a database-limited "
        f"admin: of every database that user's rights reach). User names: {RULE}.",
    )


class RoleCreate(BaseModel):
    name: RoleName


class MemberRequest(BaseModel):
    kind: Literal["user", "group"]
    name: str = Field(description=f"A group, or a user (user names: {RULE}).")

    @field_validator("name")
    @classmethod
    def _user_name(cls, name: str, info: ValidationInfo) -> str:
        return validated_user_name(name) if info.data.get("kind") == "user" else name


class GroupMember(BaseModel):
    user: UserName


class GrantRequest(BaseModel):
    """One scope: `database`, or `table` (+ `columns`, `condition`), or `tag` (+ optional `database`)."""

    role: RoleName
    actions: list[Action] = Field(min_length=1)
    database: DatabaseName | None = None
    table: str | None = None
    columns: list[str] | None = None
    condition: str | None = Field(None, description="A row condition on the table, e.g. app = 'douyin'.")
    tag: str | None = Field(None, description="A tag expression, e.g. pii<=L2, pii_type=email, app=douyin.")


class GrantList(BaseModel):
    items: list[Grant]
    truncated: bool = False


class Changed(BaseModel):
    changed: bool


# ------------------------------------------------------------------ queries


@router.post("/points", response_model=QueryPoints)
def points(body: QueryRequest, _: Me = Depends(caller), svc: Service = Depends(service)) -> QueryPoints:
    """The query's tables, output columns traced to base columns, join columns, row conditions and cells."""
    with analysis_limits(deadline="analysis_seconds"):
        return svc.authz.points(body.sql, body.dialect)


def _user_param(name: str, value: str) -> str:
    """A path parameter that is a user name only for some routes' `kind`: 422 naming it, as a field's."""
    try:
        return user_name(value)
    except InvalidUserNameError as exc:
        raise ApiProblem(422, f"path.{name}: {exc}") from None


def _engine_dialect(svc: Service, dialect: str) -> str:
    allowed = svc.settings.authz_dialects
    if dialect.strip().lower() not in allowed:
        raise ApiProblem(
            400,
            f"dialect {dialect!r}: queries are checked in the dialect their engine runs: "
            f"{', '.join(allowed)} (WATERSHED_AUTHZ_DIALECTS)",
        )
    return dialect.strip().lower()


@router.post("/check", response_model=Decision)
def check(body: QueryRequest, me: Me = Depends(caller), svc: Service = Depends(service)) -> Decision:
    """Allowed, or denied with the parse error / unknown table / missing cells and the grant to ask for."""
    dialect = _engine_dialect(svc, body.dialect)
    with analysis_limits(deadline="analysis_seconds"):
        return svc.authz.check(body.user or me.name, body.sql, dialect, caller=me)


@router.post("/rewrite", response_model=Rewrite)
def rewrite(body: QueryRequest, me: Me = Depends(caller), svc: Service = Depends(service)) -> Rewrite:
    """The SQL to run (masks on the outermost projection only), or none when denied; why per output."""
    dialect = _engine_dialect(svc, body.dialect)
    with analysis_limits(deadline="analysis_seconds"):
        return svc.authz.rewrite(body.user or me.name, body.sql, dialect, caller=me)


# ------------------------------------------------------------------ roles and groups


@router.get("/roles", response_model=list[DataRole])
def roles(_: Me = Depends(admin), svc: Service = Depends(service)) -> list[DataRole]:
    return svc.authz.grants.roles()


@router.post(
    "/roles",
    response_model=Changed,
    status_code=201,
    responses={200: {"model": Changed, "description": "The role exists already: nothing changed."}},
)
def add_role(
    body: RoleCreate, response: Response, me: Me = Depends(admin), svc: Service = Depends(service)
) -> Changed:
    """Create a data role (200 and `changed: false` when it exists)."""
    created = svc.authz.grants.add_role(me, body.name)
    if not created:
        response.status_code = 200
    return Changed(changed=created)


@router.delete("/roles/{name}", response_model=list[Grant])
def delete_role(name: RoleName, me: Me = Depends(admin), svc: Service = Depends(service)) -> list[Grant]:
    """Delete a data role with its grants and assignments; answers the grants it had."""
    return svc.authz.grants.delete_role(me, name)


@router.post("/roles/{name}/members", response_model=Changed)
def assign(
    name: RoleName, body: MemberRequest, me: Me = Depends(admin), svc: Service = Depends(service)
) -> Changed:
    return Changed(changed=svc.authz.grants.assign(me, name, body.kind, body.name))


@router.delete("/roles/{name}/members/{kind}/{member}", status_code=204)
def unassign(
    name: RoleName,
    kind: Literal["user", "group"],
    member: str,
    me: Me = Depends(admin),
    svc: Service = Depends(service),
) -> Response:
    if kind == "user":
        member = _user_param("member", member)
    svc.authz.grants.unassign(me, name, kind, member)
    return Response(status_code=204)


@router.get("/groups", response_model=dict[str, list[str]])
def groups(_: Me = Depends(admin), svc: Service = Depends(service)) -> dict[str, list[str]]:
    return svc.authz.grants.groups()


@router.post("/groups/{group}/users", response_model=Changed)
def add_to_group(
    group: GroupName, body: GroupMember, me: Me = Depends(admin), svc: Service = Depends(service)
) -> Changed:
    return Changed(changed=svc.authz.grants.add_to_group(me, group, body.user))


@router.delete("/groups/{group}/users/{user}", status_code=204)
def remove_from_group(
    group: GroupName, user: UserName, me: Me = Depends(admin), svc: Service = Depends(service)
) -> Response:
    svc.authz.grants.remove_from_group(me, group, user)
    return Response(status_code=204)


# ------------------------------------------------------------------ grants


@router.get("/grants", response_model=GrantList)
def grants(
    role: RoleName | None = Query(None, description="Only this data role's grants."),
    user: UserName | None = Query(None, description="Every grant this user holds, through roles and groups."),
    me: Me = Depends(admin),
    svc: Service = Depends(service),
) -> GrantList:
    """The grants (a database-limited admin: those on their databases only)."""
    if role is not None and user is not None:
        raise ApiProblem(400, "give role or user, not both")
    found = svc.authz.grants.listed(me, role=role, user=user)
    return GrantList(items=found[:MAX_GRANTS], truncated=len(found) > MAX_GRANTS)


@router.post(
    "/grants",
    response_model=Grant,
    status_code=201,
    responses={200: {"model": Grant, "description": "The same grant exists already: the stored one."}},
)
def add_grant(
    body: GrantRequest, response: Response, me: Me = Depends(admin), svc: Service = Depends(service)
) -> Grant:
    """Grant actions on a scope to a data role (200 with the stored grant when it exists already)."""
    stored, created = svc.authz.grants.grant(me, Grant(id="", **body.model_dump()))
    if not created:
        response.status_code = 200
    return stored


@router.delete("/grants/{grant_id}", response_model=Grant)
def revoke(
    grant_id: str = Path(
        pattern=GRANT_ID_PATTERN,
        description="A grant's id: `g` and 15 hex digits, the digest of what it grants.",
        examples=["g0123456789abcde"],
    ),
    me: Me = Depends(admin),
    svc: Service = Depends(service),
) -> Grant:
    """Revoke a grant; answers what it granted."""
    return svc.authz.grants.revoke(me, grant_id)
