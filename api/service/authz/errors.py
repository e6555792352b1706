"""The errors of query-time authorization; each message names the bad input."""

from __future__ import annotations

from watershed.graph.errors import WatershedError


class AuthzError(WatershedError, ValueError):
    """A bad request: an unknown action, table, column or role, a bad condition or tag expression."""


class UnknownGrantError(WatershedError, LookupError):
    """A grant, role or membership that does not exist (revoke of an absent grant, ...)."""
