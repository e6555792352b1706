"""How names inside scripting blocks are bound, as rewrites of a statement's tokens.

The statements `ingest/scripting.py` cuts out of blocks and routine bodies name things
that only exist there: a MySQL/PL/pgSQL `SELECT … INTO v` fills a variable, a trigger's
`inserted`/`NEW.col` is a row of the trigger's table, `v.col` in a `FOR v AS query` loop
is a row of the query, a T-SQL `@v` holds the query last assigned to it. Each rewrite
turns such a name into SQL the extractor already reads (the table, a scalar subquery),
so the lineage reaches the real sources. New tokens take the position of the name they
replace, so errors still point at the right line.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot.tokens import Token, TokenType

#: Token types of string literals (a routine body, dynamic SQL text).
STRINGS = frozenset(
    {TokenType.STRING, TokenType.RAW_STRING, TokenType.HEREDOC_STRING, TokenType.NATIONAL_STRING}
)


def keyword(token: Token) -> str:
    """The token's text in upper case, to compare with keywords; "" for a string or a quoted
    identifier (`[Insert]`, `"END"` are names, never keywords)."""
    if token.token_type is TokenType.IDENTIFIER or token.token_type in STRINGS:
        return ""
    return token.text.upper()


_INTO_TARGET = frozenset(
    {
        TokenType.VAR,
        TokenType.IDENTIFIER,
        TokenType.PARAMETER,
        TokenType.COLON,
        TokenType.DOT,
        TokenType.COMMA,
    }
)


def without_into_variables(statement: list[Token]) -> list[Token]:
    """A SELECT inside a procedural block (MySQL routine, PL/pgSQL, Snowflake Scripting):
    `INTO [STRICT] v [, w]` assigns variables — there, tables are made with CREATE TABLE AS —
    so the clause goes and the statement is the query it reads."""
    depth = 0
    for j, token in enumerate(statement):
        kind = token.token_type
        if kind is TokenType.L_PAREN:
            depth += 1
        elif kind is TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and kind is TokenType.INTO:
            if any(keyword(t) in ("INSERT", "MERGE") for t in statement[:j]):
                return statement
            end = j + 1
            if end < len(statement) and keyword(statement[end]) in ("OUTFILE", "DUMPFILE"):
                return statement  # MySQL writes a file: `PathStatements.reparse` reads it
            if end < len(statement) and keyword(statement[end]) == "STRICT":
                end += 1
            while end < len(statement) and statement[end].token_type in _INTO_TARGET:
                if statement[end].token_type is TokenType.VAR and keyword(statement[end]) in (
                    "FROM", "WHERE", "GROUP", "ORDER", "LIMIT", "HAVING", "UNION", "WINDOW",
                ):  # fmt: skip
                    break
                end += 1
            return statement[:j] + statement[end:]
    return statement


def bind_pseudo_tables(statement: list[Token], table: list[Token]) -> list[Token]:
    """In a T-SQL trigger, `FROM inserted` / `JOIN deleted` read the trigger's table: the
    pseudo-table becomes that table, aliased with its own name so `inserted.col` still resolves."""
    bound: list[Token] = []
    n = len(statement)
    for k, token in enumerate(statement):
        if (
            k
            and token.token_type is TokenType.VAR
            and keyword(token) in ("INSERTED", "DELETED")
            and statement[k - 1].token_type in (TokenType.FROM, TokenType.JOIN)
            and not (k + 1 < n and statement[k + 1].token_type is TokenType.DOT)
        ):
            at = (token.line, token.col, token.start, token.end)
            bound.extend(Token(t.token_type, t.text, *at) for t in table)
            aliased = k + 1 < n and statement[k + 1].token_type in (TokenType.ALIAS, TokenType.VAR)
            if not aliased:
                bound.extend((Token(TokenType.ALIAS, "AS", *at), token))
            continue
        bound.append(token)
    return bound


def _split_commas(tokens: list[Token]) -> list[list[Token]]:
    """`tokens` cut at the commas outside parentheses."""
    items: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        kind = token.token_type
        if kind is TokenType.L_PAREN:
            depth += 1
        elif kind is TokenType.R_PAREN:
            depth -= 1
        elif kind is TokenType.COMMA and depth == 0:
            items.append([])
            continue
        items[-1].append(token)
    return items


def _is_assignment(statement: list[Token], k: int) -> bool:
    """`@v =` at `k` in a select list or a SET clause (not a comparison in WHERE/ON/…)."""
    if not (
        k + 2 < len(statement)
        and statement[k].token_type is TokenType.PARAMETER
        and statement[k + 2].token_type is TokenType.EQ
    ):
        return False
    previous = statement[k - 1] if k else None
    if previous is None:
        return True
    if previous.token_type in (TokenType.SELECT, TokenType.SET, TokenType.COMMA, TokenType.DISTINCT):
        return True
    # SELECT TOP (1) @v = … / SELECT TOP 1 @v = …
    return any(keyword(t) == "TOP" for t in statement[max(0, k - 4) : k])


def bind_loop_variable(statement: list[Token], variable: str, query: list[Token]) -> list[Token]:
    """In a `FOR v AS query DO … END FOR` body, `v.col` is the current row's column: read as
    `(SELECT v.col FROM (query) AS v)`, so the body's values trace to the query's sources."""

    def is_row(token: Token) -> bool:
        return token.token_type in (TokenType.VAR, TokenType.IDENTIFIER) and token.text.lower() == variable

    def source(token: Token, place: tuple) -> list[Token]:
        return [
            Token(TokenType.L_PAREN, "(", *place),
            *(Token(t.token_type, t.text, *place) for t in query),
            Token(TokenType.R_PAREN, ")", *place),
            Token(TokenType.ALIAS, "AS", *place),
            Token(token.token_type, token.text, *place),
        ]

    return _bind_row_columns(statement, is_row, source)


def bind_row_values(statement: list[Token], table: list[Token]) -> list[Token]:
    """In a row trigger (MySQL), `NEW.col` / `OLD.col` are the triggering row's columns: each is
    read as `(SELECT new.col FROM <table> AS new)`, so values and conditions trace to the table."""

    def is_row(token: Token) -> bool:
        return keyword(token) in ("NEW", "OLD")

    def source(token: Token, place: tuple) -> list[Token]:
        return [
            *(Token(t.token_type, t.text, *place) for t in table),
            Token(TokenType.ALIAS, "AS", *place),
            Token(TokenType.VAR, token.text, *place),
        ]

    return _bind_row_columns(statement, is_row, source)


def _bind_row_columns(
    statement: list[Token],
    is_row: Callable[[Token], bool],
    source: Callable[[Token, tuple], list[Token]],
) -> list[Token]:
    """Every `row.col` whose `row` token `is_row` (and that is not itself the tail of a dotted
    name) becomes the scalar subquery `(SELECT row.col FROM <source>)`, at the token's place so
    errors still point at the statement's text."""
    bound: list[Token] = []
    n = len(statement)
    k = 0
    while k < n:
        token = statement[k]
        if (
            k + 2 < n
            and is_row(token)
            and statement[k + 1].token_type is TokenType.DOT
            and (k == 0 or statement[k - 1].token_type is not TokenType.DOT)
        ):
            place = (token.line, token.col, token.start, token.end)
            bound += [
                Token(TokenType.L_PAREN, "(", *place),
                Token(TokenType.SELECT, "SELECT", *place),
                *statement[k : k + 3],
                Token(TokenType.FROM, "FROM", *place),
                *source(token, place),
                Token(TokenType.R_PAREN, ")", *place),
            ]
            k += 3
            continue
        bound.append(token)
        k += 1
    return bound


class TsqlVariables:
    """T-SQL's `@variables` of one batch that were assigned a query (`DECLARE @v t = (SELECT …)`,
    `SET @v = (SELECT …)`, `SELECT [TOP n] @v = col FROM …`): a later use reads that query."""

    def __init__(self) -> None:
        self.values: dict[str, list[Token]] = {}
        #: the batch's table variables (`DECLARE @t TABLE (…)`), by name without the `@`
        self.tables: set[str] = set()

    def clear(self) -> None:
        """A new batch (`GO`) or routine: its variables are new."""
        self.values = {}
        self.tables = set()

    def table_declaration(self, statement: list[Token]) -> list[Token] | None:
        """`DECLARE @t [AS] TABLE (…)` as `CREATE TABLE [@t] (…)`, None for any other DECLARE.

        A table variable lives only in its batch: the extractor reads a table named `@…` as a
        session table (declared columns its schema, lineage through it, never a written table
        of the task), and later uses of `@t` in the batch are rewritten to that name."""
        if not (len(statement) > 4 and statement[1].token_type is TokenType.PARAMETER):
            return None
        k = 3 + (keyword(statement[3]) == "AS")
        if not (
            k + 1 < len(statement)
            and keyword(statement[k]) == "TABLE"
            and statement[k + 1].token_type is TokenType.L_PAREN
        ):
            return None
        name = statement[2].text.lower()
        self.tables.add(name)
        self.values.pop(name, None)
        first = statement[0]
        at = (first.line, first.col, first.start, first.end)
        return [
            Token(TokenType.CREATE, "CREATE", *at),
            Token(TokenType.TABLE, "TABLE", *at),
            _table_variable(statement[1], name),
            *statement[k + 1 :],
        ]

    def track(self, statement: list[Token]) -> list[Token]:
        """Record the queries assigned to T-SQL variables; put them in place of later uses."""
        word = keyword(statement[0])
        if word == "DECLARE":
            for item in _split_commas(statement[1:]):
                self._assign(item)
            return statement
        if word == "SET" and len(statement) > 4 and statement[1].token_type is TokenType.PARAMETER:
            self._assign(statement[1:])
            return statement
        if word == "SELECT":
            targets = [k for k in range(len(statement)) if _is_assignment(statement, k)]
            if len(targets) == 1 and len(_split_commas(statement[1:])) == 1:
                # `SELECT [TOP (n)] @v = expr FROM …`: @v holds the query without the assignment
                k = targets[0]
                self.values[statement[k + 1].text.lower()] = self._substitute(
                    [*statement[:k], *statement[k + 3 :]]
                )
                return self._tables_only(statement)
            for k in targets:
                self.values.pop(statement[k + 1].text.lower(), None)
            return self._tables_only(statement)
        return self._substitute(statement)

    def _assign(self, item: list[Token]) -> None:
        """`@v [type] [=] expr`: remember expr when it holds a query, else forget @v."""
        if not (len(item) > 1 and item[0].token_type is TokenType.PARAMETER):
            return
        name = item[1].text.lower()
        equals = next((j for j, t in enumerate(item) if t.token_type is TokenType.EQ), None)
        expression = self._substitute(item[equals + 1 :]) if equals is not None else []
        if any(t.token_type is TokenType.SELECT for t in expression):
            self.values[name] = expression
        else:
            self.values.pop(name, None)

    def routine_header(self, header: list[Token]) -> list[list[Token]]:
        """A T-SQL routine's table-valued parameters (`@p type READONLY`) and the table of a
        multi-statement table function (`RETURNS @r TABLE (…)`) are table variables of its body;
        the latter's declaration, as `table_declaration` gives it."""
        created: list[list[Token]] = []
        n = len(header)
        for k in range(n - 2):
            token = header[k]
            if keyword(token) == "RETURNS" and header[k + 1].token_type is TokenType.PARAMETER:
                # `RETURNS @r [AS] TABLE (…)`: up to the parenthesis closing the column list
                opening = next(
                    (m for m in range(k + 3, min(k + 6, n)) if header[m].token_type is TokenType.L_PAREN),
                    None,
                )
                close = closing(header, opening) if opening is not None else len(header)
                if close < len(header):
                    declaration = self.table_declaration([token, *header[k + 1 : close + 1]])
                    if declaration is not None:
                        created.append(declaration)
            elif token.token_type is TokenType.PARAMETER:
                for after in header[k + 2 :]:
                    word = keyword(after)
                    if word == "READONLY":
                        self.tables.add(header[k + 1].text.lower())
                    if (
                        word == "READONLY"
                        or after.token_type in (TokenType.COMMA, TokenType.R_PAREN)
                        or (after.token_type is TokenType.PARAMETER)
                    ):
                        break
        return created

    def _tables_only(self, statement: list[Token]) -> list[Token]:
        """The statement with its table variables named, its scalar variables left alone."""
        values, self.values = self.values, {}
        try:
            return self._substitute(statement)
        finally:
            self.values = values

    def _substitute(self, statement: list[Token]) -> list[Token]:
        if not self.values and not self.tables:
            return statement
        bound: list[Token] = []
        n = len(statement)
        k = 0
        while k < n:
            token = statement[k]
            if (
                token.token_type is TokenType.PARAMETER
                and k + 1 < n
                and statement[k + 1].text.lower() in self.tables
            ):
                # a table variable (T-SQL has no scalar of the same name in the batch)
                bound.append(_table_variable(token, statement[k + 1].text.lower()))
                k += 2
                continue
            value = (
                self.values.get(statement[k + 1].text.lower())
                if token.token_type is TokenType.PARAMETER and k + 1 < n
                else None
            )
            if value is not None and not _is_assignment(statement, k):
                place = (token.line, token.col, token.start, token.end)
                bound += [
                    Token(TokenType.L_PAREN, "(", *place),
                    *(Token(t.token_type, t.text, *place) for t in value),
                    Token(TokenType.R_PAREN, ")", *place),
                ]
                k += 2
                continue
            bound.append(token)
            k += 1
        return bound


def closing(tokens: list[Token], opening: int) -> int:
    """Index of the parenthesis closing the one at `opening` (`len(tokens)` when it never closes)."""
    depth = 0
    for m in range(opening, len(tokens)):
        kind = tokens[m].token_type
        depth += (kind is TokenType.L_PAREN) - (kind is TokenType.R_PAREN)
        if depth == 0:
            return m
    return len(tokens)


def _table_variable(at: Token, name: str) -> Token:
    """The quoted name `[@name]` the extractor reads as the batch's table variable `@name`."""
    return Token(TokenType.IDENTIFIER, f"@{name}", at.line, at.col, at.start, at.end)


__all__ = [
    "STRINGS",
    "TsqlVariables",
    "bind_loop_variable",
    "bind_pseudo_tables",
    "bind_row_values",
    "closing",
    "keyword",
    "without_into_variables",
]
