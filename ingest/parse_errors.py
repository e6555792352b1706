"""sqlglot's parse errors as a sentence a steward can act on: what was expected, near which token.

sqlglot describes a failed parse in its own terms ("Required keyword: 'this' missing for
<class 'sqlglot.expressions.query.Where'>", token reprs). The harvest's error records carry this
sentence as their message and keep sqlglot's words beside it as `detail`, for a bug report.
"""

from __future__ import annotations

import re
from typing import Any

_MISSING = re.compile(r"Required keyword: '(\w+)' missing for <class '(?:[\w.]+\.)?(\w+)'>")
_EXPECTED_GOT = re.compile(r"Expected (.+?) but got (.+)", re.DOTALL)
_EXPECTING = re.compile(r"Expecting (.+)")
_TOKEN = re.compile(r"<Token token_type: [^,]*, text: (.*?), line: \d+.*?>")
_CLASS = re.compile(r"<class '(?:[\w.]+\.)?(\w+)'>")

#: clauses whose missing part has a name of its own: (class, sqlglot's argument) -> the sentence
_CLAUSE_MISSING = {
    ("Where", "this"): "the WHERE clause has no condition",
    ("Having", "this"): "the HAVING clause has no condition",
    ("Qualify", "this"): "the QUALIFY clause has no condition",
    ("Limit", "expression"): "LIMIT has no row count",
    ("Order", "expressions"): "ORDER BY names nothing to sort by",
    ("Group", "expressions"): "GROUP BY names nothing to group by",
    ("Between", "high"): "BETWEEN has no upper bound (… AND high)",
    ("Between", "low"): "BETWEEN has no lower bound",
}
#: operators, as written in SQL
_OPERATORS = {
    "EQ": "=",
    "NEQ": "<>",
    "GT": ">",
    "GTE": ">=",
    "LT": "<",
    "LTE": "<=",
    "Add": "+",
    "Sub": "-",
    "Mul": "*",
    "Div": "/",
    "Mod": "%",
    "And": "AND",
    "Or": "OR",
    "Like": "LIKE",
    "ILike": "ILIKE",
    "Is": "IS",
    "In": "IN",
    "DPipe": "||",
}


def _words(name: str) -> str:
    """A class name as words: `JoinHint` -> `join hint`."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower()


def _what(description: str) -> str:
    missing = _MISSING.fullmatch(description)
    if missing:
        part, name = missing.groups()
        if (name, part) in _CLAUSE_MISSING:
            return _CLAUSE_MISSING[name, part]
        if name in _OPERATORS:
            side = "left" if part == "this" else "right"
            return f"'{_OPERATORS[name]}' has nothing on its {side}-hand side"
        return f"an incomplete {_words(name)} expression (its {part} is missing)"
    got = _EXPECTED_GOT.fullmatch(description)
    if got:
        wanted, found = got.groups()
        token = _TOKEN.search(found)
        text = token.group(1) if token else found.strip("'")
        if text == "SENTINEL":  # sqlglot's end-of-input marker
            return f"expected {wanted}, but the statement ended"
        return f"expected {wanted}, found '{text}'"
    expecting = _EXPECTING.fullmatch(description)
    if expecting:
        return f"expected '{expecting.group(1)}'"
    if description.startswith("Invalid expression / Unexpected token"):
        return "unexpected token"
    if description.startswith("Expected "):
        return "expected " + description.removeprefix("Expected ")
    # anything else: sqlglot's words, without its class and token reprs
    return _CLASS.sub(lambda m: _words(m.group(1)), _TOKEN.sub(r"'\1'", description))


def explain(error: dict[str, Any]) -> str:
    """One of sqlglot's `ParseError.errors` entries (description, highlight, end_context) as a
    sentence: what was expected, at which token, and whether the statement ended there."""
    description = str(error.get("description") or "").split("\n")[0]
    what = _what(description) if description else "cannot parse the statement"
    near = str(error.get("highlight") or "").strip()
    ended = not str(error.get("end_context") or "").strip()
    if near and ended:
        return f"{what} (at '{near}', the end of the statement)"
    if near:
        return f"{what} (at '{near}')"
    return what + (" (at the end of the statement)" if ended else "")


__all__ = ["explain"]
