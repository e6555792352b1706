"""Variable substitution for `${name}`, `${hivevar:name}` and `${hiveconf:name}`.

Scripts may define variables themselves with `SET [hivevar:|hiveconf:]name=value;`;
those definitions apply in script order on top of the task's variables, and a
value may refer to earlier variables.
"""

from __future__ import annotations

import re

_REFERENCE = re.compile(r"\$\{(?:(?:hivevar|hiveconf|env|system):)?([A-Za-z_][\w.]*)\}")
_SET = re.compile(
    r"^\s*set\s+(?:(?:hivevar|hiveconf):)?([A-Za-z_][\w.]*)\s*=\s*([^;\n]*?)\s*;?\s*$",
    re.IGNORECASE | re.MULTILINE,
)


def substitute(text: str, variables: dict[str, str]) -> str:
    """Replace every known variable reference; unknown references stay as written."""
    if "${" not in text:
        return text
    return _REFERENCE.sub(lambda m: variables.get(m.group(1), m.group(0)), text)


def script_variables(script: str, variables: dict[str, str]) -> dict[str, str]:
    """The task's variables plus those the script SETs, resolved in order."""
    resolved = dict(variables)
    if "set" not in script.lower():
        return resolved
    for match in _SET.finditer(script):
        resolved[match.group(1)] = substitute(match.group(2), resolved)
    return resolved


def unresolved_references(text: str) -> list[str]:
    return sorted({m.group(0) for m in _REFERENCE.finditer(text)})
