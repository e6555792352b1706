"""Narrow rewrites of statements a dialect's sqlglot parser refuses, into the same statement in a
form it parses. Each is tried only after the statement failed to parse (`StatementExtractor.reparse`),
works on the statement's tokens (never inside a string or comment), and changes nothing the lineage
reads:

- T-SQL compound assignments `SET c += v` (also `-=`, `*=`, `/=`, `%=`, `&=`, `|=`, `^=`), which
  sqlglot 30.30 does not parse in `UPDATE`: written `SET c = c + (v)`, which is what they mean.
- Athena back-quoted identifiers in a query (`` SELECT * FROM `tab1` ``): Athena takes Hive's back
  quotes there, sqlglot's Athena dialect only in DDL: written as Trino's double-quoted identifiers.
- Teradata's `(TITLE 'heading')` after a select item, a report heading that leaves the column and
  its name as they are: dropped; `(NAMED n)`, which names the item: written `AS n`.
"""

from __future__ import annotations

from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from watershed.ingest.dialects import dialect_tools

#: the operator of a T-SQL compound assignment (`+=` is PLUS then EQ, written together)
_COMPOUND = {
    TokenType.PLUS: "+",
    TokenType.DASH: "-",
    TokenType.STAR: "*",
    TokenType.SLASH: "/",
    TokenType.MOD: "%",
    TokenType.AMP: "&",
    TokenType.PIPE: "|",
    TokenType.CARET: "^",
}
#: words that end an assigned value in T-SQL's `UPDATE … SET a = v, … [FROM|WHERE|OUTPUT|OPTION]`
_AFTER_VALUE = frozenset({"FROM", "WHERE", "OUTPUT", "OPTION"})


def rewrite_for_parse(text: str, dialect: str) -> str | None:
    """`text` (one statement) rewritten into a form `dialect`'s parser takes, or None when no
    rewrite applies."""
    rewrite = _REWRITES.get(dialect)
    if rewrite is None:
        return None
    try:
        return rewrite(text)
    except TokenError:
        return None


def _tsql_compound_assignments(text: str) -> str | None:
    tokens = dialect_tools("tsql")[1].tokenize(text)
    edits: list[tuple[int, int, str]] = []
    for i in range(1, len(tokens) - 1):
        operator, equals = tokens[i], tokens[i + 1]
        if (
            operator.token_type not in _COMPOUND
            or equals.token_type is not TokenType.EQ
            or equals.start != operator.end + 1
        ):
            continue
        start = _assignment_start(tokens, i)
        end = _value_end(tokens, i + 2)
        if start is None or end is None:
            continue
        target = text[tokens[start].start : tokens[i - 1].end + 1]
        value = text[tokens[i + 2].start : tokens[end].end + 1]
        edits.append(
            (operator.start, tokens[end].end + 1, f"= {target} {_COMPOUND[operator.token_type]} ({value})")
        )
    return _apply(text, edits)


def _assignment_start(tokens: list[Token], operator: int) -> int | None:
    """The first token of the column assigned by the compound operator at `operator`: after the
    `SET` or `,` before it."""
    position = operator - 1
    while position >= 0 and tokens[position].token_type not in (TokenType.SET, TokenType.COMMA):
        if tokens[position].token_type in (TokenType.L_PAREN, TokenType.R_PAREN):
            return None
        position -= 1
    return position + 1 if 0 <= position < operator - 1 else None


def _value_end(tokens: list[Token], start: int) -> int | None:
    """The last token of the value starting at `start`: up to a `,` or a clause word outside
    parentheses, or the statement's end."""
    depth = 0
    position = start
    while position < len(tokens):
        token = tokens[position]
        if token.token_type is TokenType.L_PAREN:
            depth += 1
        elif token.token_type is TokenType.R_PAREN:
            depth -= 1
            if depth < 0:
                break
        elif depth == 0 and (
            token.token_type in (TokenType.COMMA, TokenType.SEMICOLON) or token.text.upper() in _AFTER_VALUE
        ):
            break
        position += 1
    return position - 1 if position > start else None


def _athena_backticks(text: str) -> str | None:
    # Hive's tokenizer reads the back quotes (and Hive's strings, so a back quote in a string stays)
    edits = [
        (token.start, token.end + 1, '"' + token.text.replace('"', '""') + '"')
        for token in dialect_tools("hive")[1].tokenize(text)
        if token.token_type is TokenType.IDENTIFIER and text[token.start] == "`"
    ]
    return _apply(text, edits)


def _teradata_attributes(text: str) -> str | None:
    tokens = dialect_tools("teradata")[1].tokenize(text)
    edits: list[tuple[int, int, str]] = []
    for i in range(1, len(tokens) - 3):
        opening, word, value, closing = tokens[i : i + 4]
        if opening.token_type is not TokenType.L_PAREN or closing.token_type is not TokenType.R_PAREN:
            continue
        phrase = word.text.upper() if word.token_type is TokenType.VAR else ""
        if phrase == "TITLE" and value.token_type is TokenType.STRING:
            edits.append((opening.start, closing.end + 1, ""))
        elif phrase == "NAMED" and value.token_type in (TokenType.VAR, TokenType.IDENTIFIER):
            edits.append((opening.start, closing.end + 1, f"AS {text[value.start : value.end + 1]}"))
    return _apply(text, edits)


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str | None:
    """`text` with each `(start, end, replacement)` span replaced; None when there is none."""
    if not edits:
        return None
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


_REWRITES = {
    "tsql": _tsql_compound_assignments,
    "fabric": _tsql_compound_assignments,
    "athena": _athena_backticks,
    "teradata": _teradata_attributes,
}
