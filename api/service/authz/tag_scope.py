"""Tag expressions of tag-scoped grants: `pii<=L2`, `pii<L3`, `pii=L1`, `pii_type=email,phone`,
`app=douyin`, checked against the tag policy, and whether a column's effective tags match one.

- A sensitivity family (`pii`) takes `<=`, `<` or `=` and one of its levels. An untagged column
  counts as below every level: `pii<=L2` covers it, `pii=L1` does not.
- A family's type key (`pii_type`) and a business dimension (`app`) take `=` and one or more
  values (comma-separated): the column's values must all be among them, and it must have some
  (an untagged column is not `app=douyin` data).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from watershed.api.service.authz.errors import AuthzError
from watershed.propagation.policy import Policy, UnknownTagError

_EXPRESSION = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|<|=)\s*([^<>=]+?)\s*$")


@dataclass(frozen=True)
class TagScope:
    key: str
    op: str
    values: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.key}{self.op}{','.join(self.values)}"


def parse_tag(text: str, policy: Policy) -> TagScope:
    """A tag expression checked against the policy; AuthzError naming the text otherwise."""
    match = _EXPRESSION.match(text or "")
    if match is None:
        raise AuthzError(f"tag {text!r}: expected KEY<=LEVEL, KEY<LEVEL or KEY=VALUE[,VALUE...]")
    key, op, raw = match.group(1).lower(), match.group(2), match.group(3)
    values = tuple(dict.fromkeys(v.strip() for v in raw.split(",") if v.strip()))
    family = policy.sensitivity.get(key)
    if family is not None:
        if len(values) != 1 or values[0] not in family.levels:
            raise AuthzError(f"tag {text!r}: {key} takes one level of {', '.join(family.levels)}")
        return TagScope(key, op, values)
    if op != "=":
        raise AuthzError(f"tag {text!r}: {key} is not a sensitivity family; use {key}=VALUE[,VALUE...]")
    try:
        policy.check_tag(key, list(values))
    except UnknownTagError as exc:
        raise AuthzError(f"tag {text!r}: {exc}") from None
    if not values:
        raise AuthzError(f"tag {text!r}: no value")
    return TagScope(key, op, values)


def matches(scope: TagScope, tags: Mapping[str, Sequence[str]], policy: Policy) -> bool:
    """Whether a column (or table) with these effective tags ({key: [values]}) is in the scope."""
    have = [v for v in tags.get(scope.key, ()) if v]
    family = policy.sensitivity.get(scope.key)
    if family is not None:
        limit = family.rank(scope.values[0])
        if not have:
            return scope.op != "="  # untagged: below every level
        level = (
            max(family.rank(v) for v in have if v in family.levels)
            if any(v in family.levels for v in have)
            else None
        )
        if level is None:
            return False
        if scope.op == "<=":
            return level <= limit
        if scope.op == "<":
            return level < limit
        return level == limit
    return bool(have) and set(have) <= set(scope.values)
