"""Query-time authorization: data roles and grants, decisions on a query's cells, masked rewrites.

The public surface: `AuthzService` (points, check, rewrite; `.grants` is the `GrantStore` of
data roles, groups and grants), the condition and tag-scope parsers, and the errors.
"""

from watershed.api.authz.conditions import implies, parse_condition
from watershed.api.authz.decide import decide
from watershed.api.authz.errors import AuthzError, UnknownGrantError
from watershed.api.authz.grants import DataRole, GrantStore, parse_actions
from watershed.api.authz.service import AuthzService
from watershed.api.authz.tag_scope import parse_tag

__all__ = [
    "AuthzError",
    "AuthzService",
    "DataRole",
    "GrantStore",
    "UnknownGrantError",
    "decide",
    "implies",
    "parse_actions",
    "parse_condition",
    "parse_tag",
]
