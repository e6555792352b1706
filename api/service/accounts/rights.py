"""Roles, the rights they carry, and the database scope a steward or delegated admin is limited to.

producer  posts OpenLineage events (POST /api/v1/lineage) and nothing else: it reads nothing,
          not even /me (an OpenLineage producer's token, kept in a Spark or Airflow config);
viewer  reads everything (every database);
steward + changes tags and blocks, starts and cancels propagation runs, posts SQL for lineage;
admin   + users, other users' tokens, grants, the audit trail.

A steward or admin may be limited to databases (`databases`, None = all): a change to a
node of another database is refused, and a limited admin manages only users whose scope
lies inside their own ("an admin of ods cannot touch ads").
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from watershed.graph.errors import WatershedError

Role = Literal["producer", "viewer", "steward", "admin"]
Right = Literal["viewer", "steward", "admin"]
#: ranked: a role holds the rights of those before it, except a producer's one (`may_post_lineage`),
#: which only stewards and admins share
ROLES: tuple[Role, ...] = ("producer", "viewer", "steward", "admin")
_RANK = {role: i for i, role in enumerate(ROLES)}


class ForbiddenError(WatershedError, PermissionError):
    """The caller lacks a right; the message names the right (and database) needed."""


class Me(BaseModel):
    """The authenticated caller."""

    name: str
    role: Role
    #: databases a steward or admin may change; None = all (viewers read everything regardless)
    databases: list[str] | None = None

    def has(self, right: Right) -> bool:
        return _RANK[self.role] >= _RANK[right]

    def may_post_lineage(self) -> bool:
        """Whether the caller may load OpenLineage events: a producer, a steward or an admin."""
        return self.role == "producer" or self.has("steward")

    def covers(self, db: str) -> bool:
        return self.databases is None or db in self.databases

    def require(self, right: Right, db: str | None = None) -> None:
        """Raise ForbiddenError unless the caller holds `right` (on database `db` when given)."""
        if not self.has(right):
            where = f" on database {db}" if db is not None else ""
            raise ForbiddenError(f"{right} right{where} needed")
        if db is not None and right != "viewer" and not self.covers(db):
            raise ForbiddenError(f"{right} right on database {db} needed")

    def require_unrestricted(self, right: Right) -> None:
        self.require(right)
        if self.databases is not None:
            raise ForbiddenError(f"{right} right on all databases needed")

    def require_scope(self, databases: list[str] | None) -> None:
        """A limited admin may only grant (or manage users with) databases inside their own scope."""
        if self.databases is None:
            return
        if databases is None:
            raise ForbiddenError("admin right on all databases needed")
        outside = sorted(set(fold_databases(databases)) - set(self.databases))
        if outside:
            raise ForbiddenError(f"admin right on database {outside[0]} needed")

    def within(self, databases: list[str] | None) -> bool:
        """Whether rights on `databases` (None = all) lie inside this caller's scope."""
        return self.databases is None or (
            databases is not None and set(fold_databases(databases)) <= set(self.databases)
        )


def fold_databases(databases: list[str]) -> list[str]:
    """Database names as they are stored (lower case, trimmed, each once, sorted): a scope is
    compared in this form, so `ODS` given by a caller is the stored `ods`."""
    return sorted({d.strip().lower() for d in databases if d.strip()})


def check_role(role: str) -> Role:
    if role not in _RANK:
        raise ValueError(f"role {role!r}: expected one of {', '.join(ROLES)}")
    return role  # type: ignore[return-value]
