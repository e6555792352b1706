"""Query-time authorization: data roles and grants, decisions on a query's cells, masked rewrites.

The public surface: `AuthzService` (points, check, rewrite; `.grants` is the `GrantStore` of
data roles, groups and grants), the condition and tag-scope parsers, and the errors.
"""

from watershed.api.service.authz.conditions import implies, parse_condition
from watershed.api.service.authz.decide import decide
from watershed.api.service.authz.errors import AuthzError, UnknownGrantError
from watershed.api.service.authz.grants import DataRole, GrantStore, parse_actions
from watershed.api.service.authz.service import AuthzService
from watershed.api.service.authz.tag_scope import parse_tag

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
