"""Data roles, their members and their grants, stored in the graph; every change audited.

Sentry's model, separate from the service roles (viewer/steward/admin): grants go to data
roles, data roles to users and groups, users into groups. Nodes:

- `DataRole {name, created_at}`
- `DataRoleMember {role, kind, name}`: role `role` is assigned to the user or group `name`
  (`kind` = `user` | `group`)
- `GroupMember {group, user}`: user `user` is in group `group` (a group exists while it has
  members)
- `DataGrant {id, role, actions, database, table, columns, condition, tag, created_by,
  created_at}`: `actions` and `columns` as JSON text (`columns` null = every column)

A grant's id is a digest of what it grants, so granting the same thing twice gives the same
id and no second node. Every change is one statement carrying its audit entry
(`api.service.audit.CREATE_ENTRY`), or, for a role's deletion, one `write_all`.

Who may change what (delegated administration, `api.service.accounts.rights`): a grant on a database,
table or columns needs the admin right on that database; a tag grant without a database needs
an admin of every database. Assigning a role (to a user or group), putting a user into a group
and deleting a role hand on or take away every grant behind them, so they need the admin
right on every database those grants reach; creating an empty role needs any admin.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from watershed.api.service.accounts.names import InvalidUserNameError, user_name
from watershed.api.service.accounts.rights import Me
from watershed.api.service.audit import CREATE_ENTRY, audit_params, queue
from watershed.api.service.authz.conditions import parse_condition
from watershed.api.service.authz.errors import AuthzError, UnknownGrantError
from watershed.api.service.authz.tag_scope import parse_tag
from watershed.graph import ids
from watershed.graph.authz import ACTIONS, Action, Grant
from watershed.graph.ids import InvalidIdError
from watershed.graph.store import GraphStore
from watershed.propagation.policy import Policy

MemberKind = Literal["user", "group"]

GRANT_FIELDS = (
    "g.id, g.role, g.actions, g.database, g.table, g.columns, g.condition, g.tag, g.created_by, g.created_at"
)
GET_ROLE = "MATCH (r:DataRole {name: $name}) RETURN r.name, r.created_at"
LIST_ROLES = "MATCH (r:DataRole) RETURN r.name, r.created_at ORDER BY r.name"
ADD_ROLE = (
    "OPTIONAL MATCH (old:DataRole {name: $name}) WITH count(old) AS existing WHERE existing = 0 "
    "CREATE (r:DataRole {name: $name, created_at: $at}) " + CREATE_ENTRY + " RETURN r.name"
)
DELETE_ROLE_GRANTS = "MATCH (g:DataGrant {role: $name}) DELETE g"
DELETE_ROLE_MEMBERS = "MATCH (m:DataRoleMember {role: $name}) DELETE m"
DELETE_ROLE = "MATCH (r:DataRole {name: $name}) " + CREATE_ENTRY + " DELETE r RETURN count(*)"
MEMBERS = "MATCH (m:DataRoleMember) RETURN m.role, m.kind, m.name ORDER BY m.role, m.kind, m.name"
ASSIGN = (
    "MATCH (r:DataRole {name: $role}) "
    "OPTIONAL MATCH (old:DataRoleMember {role: $role, kind: $kind, name: $name}) "
    "WITH r, count(old) AS existing WHERE existing = 0 "
    "CREATE (:DataRoleMember {role: $role, kind: $kind, name: $name}) " + CREATE_ENTRY + " RETURN r.name"
)
UNASSIGN = (
    "MATCH (m:DataRoleMember {role: $role, kind: $kind, name: $name}) "
    + CREATE_ENTRY
    + " DELETE m RETURN count(*)"
)
GROUP_MEMBERS = "MATCH (g:GroupMember) RETURN g.group, g.user ORDER BY g.group, g.user"
ADD_TO_GROUP = (
    "OPTIONAL MATCH (old:GroupMember {group: $group, user: $user}) WITH count(old) AS existing "
    "WHERE existing = 0 CREATE (:GroupMember {group: $group, user: $user}) " + CREATE_ENTRY + " RETURN 1"
)
REMOVE_FROM_GROUP = (
    "MATCH (g:GroupMember {group: $group, user: $user}) " + CREATE_ENTRY + " DELETE g RETURN count(*)"
)
ROLES_OF_GROUP = "MATCH (m:DataRoleMember {kind: 'group', name: $group}) RETURN m.role"


def user_grants(returning: str) -> str:
    """A read of a user's grants (`g`) returning `returning`: their groups, the roles of the user
    and of those groups, the grants (the check's batched read, `authz.reads`, returns them beside
    the rest)."""
    return (
        "OPTIONAL MATCH (gm:GroupMember {user: $user}) WITH collect(gm.group) AS groups "
        "MATCH (m:DataRoleMember) WHERE (m.kind = 'user' AND m.name = $user) "
        "OR (m.kind = 'group' AND m.name IN groups) WITH collect(DISTINCT m.role) AS roles "
        f"MATCH (g:DataGrant) WHERE g.role IN roles RETURN {returning}"
    )


def admins(returning: str) -> str:
    """A read of the admin accounts (`u`) returning `returning`."""
    return f"MATCH (u:User {{role: 'admin'}}) RETURN {returning}"


GRANTS_OF_USER = user_grants(f"{GRANT_FIELDS} ORDER BY g.id")
GRANTS_OF_ROLES = f"MATCH (g:DataGrant) WHERE g.role IN $roles RETURN {GRANT_FIELDS} ORDER BY g.id"
LIST_GRANTS = (
    f"MATCH (g:DataGrant) WHERE $role IS NULL OR g.role = $role RETURN {GRANT_FIELDS} ORDER BY g.role, g.id"
)
GET_GRANT = f"MATCH (g:DataGrant {{id: $id}}) RETURN {GRANT_FIELDS}"
ADD_GRANT = (
    "MATCH (r:DataRole {name: $role}) "
    "OPTIONAL MATCH (old:DataGrant {id: $id}) WITH r, count(old) AS existing WHERE existing = 0 "
    "CREATE (g:DataGrant {id: $id, role: $role, actions: $actions, database: $database, table: $table, "
    "columns: $columns, condition: $condition, tag: $tag, created_by: $by, created_at: $at}) "
    + CREATE_ENTRY
    + " RETURN g.id"
)
REVOKE_GRANT = "MATCH (g:DataGrant {id: $id}) " + CREATE_ENTRY + " DELETE g RETURN count(*)"
TABLE_OF_DATABASE = "MATCH (t:Table {db: $db}) RETURN t.id LIMIT 1"
ADMINS = admins("u.name, u.databases ORDER BY u.name")


class DataRole(BaseModel):
    """A data role with the users and groups it is assigned to."""

    name: str
    created_at: str | None = None
    users: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def check_name(name: str, what: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 100 or any(c in name for c in "/\\\n\r\t "):
        raise AuthzError(f"{what} name {name!r}: 1-100 characters, no spaces or slashes")
    return name


def member_name(kind: str, name: str) -> str:
    """A member's name as stored: a user's folded to lower case (api.service.accounts.names), a group's as given."""
    if kind != "user":
        return check_name(name, kind)
    try:
        return user_name(name)
    except InvalidUserNameError as exc:
        raise AuthzError(str(exc)) from None


def parse_actions(actions: list[str] | str) -> list[Action]:
    """Actions in their canonical order; AuthzError naming an unknown one."""
    items = actions.split(",") if isinstance(actions, str) else actions
    items = [i for i in items if i.strip()]
    found: set[str] = set()
    for item in items:
        action = item.strip().lower()
        if action not in ACTIONS:
            raise AuthzError(f"action {item!r}: expected one of {', '.join(ACTIONS)}")
        found.add(action)
    if not found:
        raise AuthzError(f"actions: give one or more of {', '.join(ACTIONS)}")
    return [a for a in ACTIONS if a in found]


def grant_id(grant: Grant) -> str:
    """The digest of what a grant grants (not who made it, nor when)."""
    what = grant.model_dump(include={"role", "actions", "database", "table", "columns", "condition", "tag"})
    return "g" + hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:15]


def grant_of_row(row: Sequence[Any]) -> Grant:
    """A grant from the fields `GRANT_FIELDS` names, in that order."""
    gid, role, actions, database, table, columns, condition, tag, by, at = row
    return Grant(
        id=gid,
        role=role,
        actions=json.loads(actions),
        database=database,
        table=table,
        columns=json.loads(columns) if columns else None,
        condition=condition,
        tag=tag,
        created_by=by,
        created_at=at,
    )


def grant_databases(grant: Grant) -> list[str] | None:
    """The databases a grant reaches; None = every database (a tag grant without one)."""
    if grant.table is not None:
        return [ids.split(grant.table)[0]]
    if grant.database is not None:
        return [grant.database]
    return None


def _require_all(me: Me, grants: list[Grant]) -> None:
    me.require("admin")
    for grant in grants:
        databases = grant_databases(grant)
        if databases is None:
            me.require_unrestricted("admin")
        for db in databases or []:
            me.require("admin", db)


class GrantStore:
    """Data roles, memberships and grants on a graph; `policy` checks tag expressions."""

    def __init__(self, graph: GraphStore, policy: Policy) -> None:
        self.graph = graph
        self.policy = policy

    # ------------------------------------------------------------ roles

    def roles(self) -> list[DataRole]:
        """Every data role with its users and groups, by name."""
        members: dict[str, dict[str, list[str]]] = {}
        for role, kind, name in self.graph.read(MEMBERS):
            members.setdefault(role, {"user": [], "group": []})[kind].append(name)
        return [
            DataRole(
                name=name,
                created_at=at,
                users=members.get(name, {}).get("user", []),
                groups=members.get(name, {}).get("group", []),
            )
            for name, at in self.graph.read(LIST_ROLES)
        ]

    def _require_role(self, name: str) -> None:
        if not self.graph.read(GET_ROLE, {"name": name}):
            raise UnknownGrantError(f"data role {name} not found")

    def add_role(self, me: Me, name: str) -> bool:
        """Create a data role; False when it already exists (nothing changes)."""
        me.require("admin")
        name = check_name(name, "role")
        at = _now()
        params = {
            "name": name,
            "at": at,
            **audit_params(me.name, "authz.role.add", f"role:{name}", None, {"name": name}),
        }
        return bool(self.graph.execute(ADD_ROLE, params))

    def delete_role(self, me: Me, name: str) -> list[Grant]:
        """Delete a data role with its grants and assignments; returns the grants it had."""
        self._require_role(name)
        grants = self.grants(role=name)
        _require_all(me, grants)
        before = {"name": name, "grants": [g.model_dump() for g in grants]}
        self.graph.write_all(
            [
                (DELETE_ROLE_GRANTS, {"name": name}),
                (DELETE_ROLE_MEMBERS, {"name": name}),
                (
                    DELETE_ROLE,
                    {"name": name, **audit_params(me.name, "authz.role.delete", f"role:{name}", before)},
                ),
            ]
        )
        return grants

    def assign(self, me: Me, role: str, kind: MemberKind, name: str) -> bool:
        """Assign a role to a user or group; False when it already was."""
        if kind not in ("user", "group"):
            raise AuthzError(f"member kind {kind!r}: expected user or group")
        name = member_name(kind, name)
        self._require_role(role)
        _require_all(me, self.grants(role=role))
        target = {"role": role, kind: name}
        params = {
            "role": role,
            "kind": kind,
            "name": name,
            **audit_params(me.name, "authz.role.assign", f"role:{role}", None, target),
        }
        return bool(self.graph.execute(ASSIGN, params))

    def unassign(self, me: Me, role: str, kind: MemberKind, name: str) -> None:
        name = member_name(kind, name)
        _require_all(me, self.grants(role=role))
        params = {
            "role": role,
            "kind": kind,
            "name": name,
            **audit_params(me.name, "authz.role.unassign", f"role:{role}", {"role": role, kind: name}),
        }
        rows = self.graph.execute(UNASSIGN, params)
        if not rows or not rows[0][0]:
            raise UnknownGrantError(f"data role {role} is not assigned to {kind} {name}")

    # ------------------------------------------------------------ groups

    def groups(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for group, user in self.graph.read(GROUP_MEMBERS):
            found.setdefault(group, []).append(user)
        return found

    def _group_grants(self, group: str) -> list[Grant]:
        roles = [r[0] for r in self.graph.read(ROLES_OF_GROUP, {"group": group})]
        return self._grants_of_roles(roles)

    def add_to_group(self, me: Me, group: str, user: str) -> bool:
        """Put a user into a group; False when they already were."""
        group, user = check_name(group, "group"), member_name("user", user)
        _require_all(me, self._group_grants(group))
        params = {
            "group": group,
            "user": user,
            **audit_params(me.name, "authz.group.add", f"group:{group}", None, {"user": user}),
        }
        return bool(self.graph.execute(ADD_TO_GROUP, params))

    def remove_from_group(self, me: Me, group: str, user: str) -> None:
        user = member_name("user", user)
        _require_all(me, self._group_grants(group))
        params = {
            "group": group,
            "user": user,
            **audit_params(me.name, "authz.group.remove", f"group:{group}", {"user": user}),
        }
        rows = self.graph.execute(REMOVE_FROM_GROUP, params)
        if not rows or not rows[0][0]:
            raise UnknownGrantError(f"user {user} is not in group {group}")

    # ------------------------------------------------------------ grants

    def _grants_of_roles(self, roles: list[str]) -> list[Grant]:
        if not roles:
            return []
        return [grant_of_row(row) for row in self.graph.read(GRANTS_OF_ROLES, {"roles": roles})]

    def grants(self, role: str | None = None) -> list[Grant]:
        return [grant_of_row(row) for row in self.graph.read(LIST_GRANTS, {"role": role})]

    def grants_of(self, user: str) -> list[Grant]:
        """Every grant a user holds, through their roles and their groups' roles (`user` as stored:
        the faces fold a name that enters, an authenticated caller's is the stored one)."""
        return [grant_of_row(row) for row in self.graph.read(GRANTS_OF_USER, {"user": user})]

    def listed(self, me: Me, role: str | None = None, user: str | None = None) -> list[Grant]:
        """The grants `me` may list (of one role, or that one user holds): a limited admin sees
        only grants on their own databases, as they may make only those; a tag grant without a
        database reaches every database, so only an admin of all databases sees it."""
        me.require("admin")
        found = self.grants_of(user) if user is not None else self.grants(role=role)
        return [g for g in found if me.within(grant_databases(g))]

    def get(self, grant_id_: str) -> Grant:
        rows = self.graph.read(GET_GRANT, {"id": grant_id_})
        if not rows:
            raise UnknownGrantError(f"grant {grant_id_} not found")
        return grant_of_row(rows[0])

    def validate(self, grant: Grant) -> Grant:
        """The grant with its scope checked against the graph and the policy, normalised, and its id."""
        scopes = [s for s in ("table", "tag") if getattr(grant, s) is not None]
        if len(scopes) > 1:
            raise AuthzError("a grant has one scope: a database, a table (+ columns, condition) or a tag")
        if grant.table is None and (grant.columns is not None or grant.condition is not None):
            raise AuthzError("columns and condition need a table")
        if grant.table is not None and grant.database is not None:
            raise AuthzError("give a table (db.table) or a database, not both")
        if not scopes and grant.database is None:
            raise AuthzError("a grant needs a scope: a database, a table or a tag")
        update: dict = {"actions": parse_actions(list(grant.actions)), "role": check_name(grant.role, "role")}
        if grant.database is not None:
            database = grant.database.strip().lower()
            if not database or "." in database or "`" in database:
                raise AuthzError(f"database {grant.database!r}: a database name has no dots or backticks")
            if not self.graph.read(TABLE_OF_DATABASE, {"db": database}):
                raise AuthzError(f"database {database}: no table of it in the graph")
            update["database"] = database
        if grant.table is not None:
            table = grant.table.strip().lower()
            try:
                valid = ids.depth(table) == 2
            except InvalidIdError:
                valid = False
            if not valid:
                raise AuthzError(f"table {grant.table!r}: expected db.table")
            entry = self.graph.catalog_entries([table]).get(table)
            if entry is None:
                raise AuthzError(f"table {table}: not in the graph")
            if entry.view_sql:
                # queries are checked on the base tables a view reads: grant on those
                raise AuthzError(f"table {table}: a view; grant on the tables it reads")
            update["table"] = table
            if grant.columns is not None:
                columns = sorted({c.strip().lower() for c in grant.columns if c.strip()})
                unknown = [c for c in columns if c not in entry.column_set]
                if unknown:
                    raise AuthzError(f"column {unknown[0]!r}: not a column of {table}")
                if not columns:
                    raise AuthzError("columns: give at least one, or none for every column")
                update["columns"] = columns
            if grant.condition is not None:
                parse_condition(grant.condition, entry.all_columns)
                update["condition"] = grant.condition.strip()
        if grant.tag is not None:
            update["tag"] = parse_tag(grant.tag, self.policy).text
        checked = grant.model_copy(update=update)
        return checked.model_copy(update={"id": grant_id(checked)})

    def grant(self, me: Me, grant: Grant) -> tuple[Grant, bool]:
        """Store a grant (its `id`, `created_by`, `created_at` are filled in here); returns it and
        whether it is new (granting the same thing again changes nothing and returns the stored one)."""
        checked = self.validate(grant)
        _require_all(me, [checked])
        self._require_role(checked.role)
        stored = checked.model_copy(update={"created_by": me.name, "created_at": _now()})
        params = {
            "id": stored.id,
            "role": stored.role,
            "actions": json.dumps(stored.actions),
            "database": stored.database,
            "table": stored.table,
            "columns": json.dumps(stored.columns) if stored.columns is not None else None,
            "condition": stored.condition,
            "tag": stored.tag,
            "by": stored.created_by,
            "at": stored.created_at,
            **audit_params(me.name, "authz.grant", f"role:{stored.role}", None, stored.model_dump()),
        }
        if self.graph.execute(ADD_GRANT, params):
            return stored, True
        return self.get(stored.id), False

    def revoke(self, me: Me, grant_id_: str) -> Grant:
        """Delete a grant; UnknownGrantError when there is none with that id."""
        before = self.get(grant_id_)
        _require_all(me, [before])
        params = {
            "id": grant_id_,
            **audit_params(me.name, "authz.revoke", f"role:{before.role}", before.model_dump()),
        }
        rows = self.graph.execute(REVOKE_GRANT, params)
        if not rows or not rows[0][0]:
            raise UnknownGrantError(f"grant {grant_id_} not found")
        return before

    # ------------------------------------------------------------ who to ask

    def admins_of(self, database: str, limit: int = 5) -> list[str]:
        """Admins who may grant on `database` (limited ones first: they own it), at most `limit`."""
        return admins_among(self.graph.read(ADMINS), database, limit)


def admins_among(rows: Iterable[Sequence[Any]], database: str, limit: int = 5) -> list[str]:
    """`GrantStore.admins_of` from the rows of `ADMINS` (name, databases as JSON text)."""
    limited, everywhere = [], []
    for name, databases in rows:
        scope = json.loads(databases) if databases else None
        if scope is None:
            everywhere.append(name)
        elif database in scope:
            limited.append(name)
    return (limited + everywhere)[:limit]


def record_decision(graph: GraphStore, actor: str, payload: dict, *, stamp: str | None = None) -> str | None:
    """The audit entry of a decision (no SQL text: its constants may be sensitive); with `stamp`,
    only while the data stamp is still `stamp`: None when recorded, else the stamp now."""
    return queue(graph, actor, "authz.decision", f"user:{payload['user']}", payload, stamp=stamp)
