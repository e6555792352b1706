"""Scripting blocks, routine bodies and T-SQL batches, cut into the statements they run.

sqlglot parses one statement at a time and knows no control flow: a Spark/Databricks
`BEGIN … END` block, a BigQuery `IF … THEN … END IF`, a T-SQL procedure written
without semicolons or a PL/pgSQL body inside `$$ … $$` is one unparsable statement
to it, and every statement inside would be lost. `ScriptSplitter` works on the tokens
of one `;`-separated piece of a script and returns the statements the piece holds,
with the control flow around them left out:

* block words (`BEGIN`, `END [IF|WHILE|LOOP|…] [label]`, `ELSE`, `LOOP`, `REPEAT`,
  `label:`), conditions (`IF … THEN`, `ELSEIF`, `WHEN … THEN`, `WHILE … DO`, T-SQL
  `IF`/`WHILE` up to the statement they guard) and jumps (`LEAVE`, `ITERATE`,
  `RETURN`, `SIGNAL`, `RAISE`, `PRINT`, …) are skipped: conditions are not lineage;
* a `FOR … AS|IN query DO|LOOP` loop and a `DECLARE … CURSOR FOR query` keep their
  query as a statement of its own (it reads tables); a condition handler keeps its body;
* routine bodies — `CREATE PROCEDURE|FUNCTION|TRIGGER … AS BEGIN …` (T-SQL, MySQL,
  Databricks), `AS $$ … $$` with `LANGUAGE sql|plpgsql` (Postgres, Snowflake),
  `DO $$ … $$`, `EXECUTE IMMEDIATE '…'|$$ … $$` — are tokenized again and split the
  same way; a body in another language (Python, JavaScript, …) is opaque;
* MySQL's client `DELIMITER //` lines are followed;
* in T-SQL, where semicolons are optional, a statement ends where the next one starts
  (a statement keyword outside parentheses that does not continue the current one),
  and `GO` separates batches.

Names that only exist inside a block (a routine's `SELECT … INTO v`, a trigger's
`inserted`/`NEW`, a `FOR` loop's row, a T-SQL `@variable`) are bound by the rewrites of
`ingest/script_bindings.py`. Every token keeps its line in the task's text, so errors
point at the right line. The
common case — a piece that starts with none of these words — costs one set lookup.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from watershed.ingest.script_bindings import (
    STRINGS,
    TsqlVariables,
    bind_loop_variable,
    bind_pseudo_tables,
    bind_row_values,
    closing,
    keyword,
    without_into_variables,
)

#: Dialects whose statements need no semicolon between them.
NO_SEMICOLON_DIALECTS = frozenset({"tsql", "fabric"})
#: Dialects whose client scripts change the statement delimiter with `DELIMITER`.
_DELIMITER_DIALECTS = frozenset({"mysql", "doris", "starrocks", "singlestore"})

#: First words of a piece that need more than "the piece is one statement".
_SCRIPT_WORDS = frozenset(
    {
        "BEGIN", "END", "ELSE", "ELSEIF", "ELSIF", "IF", "WHILE", "LOOP", "REPEAT", "UNTIL",
        "FOR", "CASE", "WHEN", "LEAVE", "ITERATE", "BREAK", "CONTINUE", "DECLARE", "DO",
        "RETURN", "RAISE", "SIGNAL", "RESIGNAL", "PRINT", "GET", "LET", "EXCEPTION", "NULL",
        "EXECUTE", "EXEC", "GO", "DELIMITER", "GOTO", "RAISERROR", "THROW", "WAITFOR", "PERFORM",
        "FOREACH", "EXIT", "ASSERT",
    }
)  # fmt: skip
#: Statements with no lineage that sqlglot cannot parse everywhere: skipped, not counted.
_JUMPS = frozenset(
    {
        "LEAVE", "ITERATE", "BREAK", "CONTINUE", "RETURN", "RAISE", "SIGNAL", "RESIGNAL", "PRINT",
        "GET", "LET", "NULL", "GOTO", "RAISERROR", "THROW", "WAITFOR", "EXIT", "ASSERT",
    }
)  # fmt: skip
_END_OF = frozenset({"IF", "WHILE", "LOOP", "FOR", "REPEAT", "CASE", "TRY", "CATCH"})
_LABELLED = frozenset({"BEGIN", "LOOP", "WHILE", "FOR", "REPEAT"})
_ROUTINES = frozenset({"PROCEDURE", "PROC", "FUNCTION", "TRIGGER"})
_BODY_LANGUAGES = frozenset({"SQL", "PLPGSQL"})
_QUERY_STARTS = frozenset({"SELECT", "WITH", "VALUES", "FROM", "TABLE"})

#: Where a condition handler's body starts (after `DECLARE … HANDLER FOR <conditions>`).
_HANDLER_BODY = frozenset(
    {
        "BEGIN", "INSERT", "UPDATE", "DELETE", "MERGE", "SET", "SELECT", "VALUES", "WITH", "CREATE",
        "DROP", "TRUNCATE", "CALL", "EXECUTE", "IF", "LEAVE", "ITERATE", "RESIGNAL", "SIGNAL",
        "CASE", "WHILE", "LOOP", "REPEAT",
    }
)  # fmt: skip
#: T-SQL words that start a statement (unless they continue the current one, see `_tsql_end`).
_TSQL_STARTS = frozenset(
    {
        "SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "WITH", "CREATE", "ALTER", "DROP",
        "TRUNCATE", "DECLARE", "SET", "EXEC", "EXECUTE", "PRINT", "RETURN", "IF", "ELSE", "WHILE",
        "BEGIN", "END", "GO", "USE", "BREAK", "CONTINUE", "RAISERROR", "THROW", "COMMIT",
        "ROLLBACK", "SAVE", "OPEN", "CLOSE", "FETCH", "DEALLOCATE", "GRANT", "REVOKE", "DENY",
        "DBCC", "WAITFOR", "GOTO", "BULK", "CHECKPOINT", "RECONFIGURE", "KILL", "BACKUP",
        "RESTORE", "UPDATE STATISTICS", "REVERT",
    }
)  # fmt: skip
#: `WITH <option> AS` in a T-SQL view or routine header is no CTE.
_ROUTINE_OPTIONS = frozenset(
    {"EXECUTE", "EXEC", "SCHEMABINDING", "ENCRYPTION", "VIEW_METADATA", "RECOMPILE", "NATIVE_COMPILATION"}
)
#: Object kinds after which `IF [NOT] EXISTS` belongs to a DROP/CREATE.
_OBJECT_KINDS = frozenset(
    {
        "TABLE", "VIEW", "PROCEDURE", "PROC", "FUNCTION", "TRIGGER", "INDEX", "SCHEMA", "DATABASE",
        "TYPE", "SEQUENCE", "SYNONYM", "USER", "ROLE", "ASSEMBLY", "DEFAULT", "RULE", "STATISTICS",
        "KEY", "CONSTRAINT", "COLUMN",
    }
)  # fmt: skip
#: Between `CURSOR`/`RESULTSET` and the query of a declaration.
_DECLARED_QUERY_PREFIX = frozenset({"FOR", "IS", "DEFAULT", ":", "=", ":="})
_SET_OPERATORS = frozenset({"UNION", "ALL", "EXCEPT", "INTERSECT", "DISTINCT"})
_GRANTS = frozenset({"ON", "OF", "AFTER", "FOR", "GRANT", "REVOKE", "DENY", ","})
_TRANSACTION = frozenset({"TRAN", "TRANSACTION", "DISTRIBUTED", "WORK"})
#: Postgres `BEGIN ISOLATION LEVEL …`, `BEGIN READ ONLY`, `BEGIN DEFERRABLE`: transactions.
_TRANSACTION_MODES = frozenset({"ISOLATION", "READ", "DEFERRABLE"})


@dataclass(frozen=True)
class BodyError:
    """A routine body or command text that does not tokenize: one error for the statement."""

    line: int
    message: str


Piece = list[Token] | BodyError


def _line_at(token: Token, position: int, sql: str) -> int:
    """The line of `position` inside or just before `token` (whose `line` is that of its end)."""
    return token.line - sql.count("\n", position, token.end + 1)


class ScriptSplitter:
    """Splits the pieces of one task's script; holds the script's state across them: MySQL's
    delimiter, open blocks and loops, the trigger being defined, T-SQL's variables."""

    def __init__(self, dialect: str, tokenizer) -> None:
        self._tokenizer = tokenizer
        self._commands = frozenset(getattr(type(tokenizer), "COMMANDS", ()))
        self._tsql = dialect in NO_SEMICOLON_DIALECTS
        self._delimiters = dialect in _DELIMITER_DIALECTS
        #: MySQL's current custom delimiter, as token texts (None: the semicolon).
        self._delimiter: tuple[str, ...] | None = None
        #: Open compound blocks (not T-SQL): their pieces are always split, and their
        #: `SELECT … INTO name` fills variables.
        self._depth = 0
        #: T-SQL: the table of the trigger whose body is being split (its `inserted`/`deleted`).
        self._trigger_table: list[Token] | None = None
        #: T-SQL: the query last assigned to each `@variable` of the batch (`SET @v = (SELECT …)`,
        #: `DECLARE @v t = (SELECT …)`, `SELECT @v = col FROM …`): a later use reads it.
        self._variables = TsqlVariables()
        #: Open FOR/LOOP loops (not T-SQL): (variable, query) of a `FOR v AS|IN query` loop, None
        #: for other loops; `v.col` in the body reads the query's column.
        self._loops: list[tuple[str, list[Token]] | None] = []
        #: MySQL-style row triggers: (the trigger's table, the block depth its body opens at),
        #: while a `BEGIN … END` body is split (its NEW/OLD rows).
        self._row_table: tuple[list[Token], int] | None = None

    def statements(self, tokens: list[Token], sql: str) -> list[Piece] | None:
        """The statements of one piece (tokens without a semicolon), or None when it is one plain statement."""
        if not self._tsql and self._delimiter is None and not self._depth:
            first = tokens[0]
            word = keyword(first)
            if word not in _SCRIPT_WORDS and not (
                (word == "CREATE" or word == "ALTER") and self._routine_kind(tokens, 0)
            ):
                if len(tokens) < 2:
                    return None
                second = tokens[1].token_type
                if second is not TokenType.COLON and not (
                    first.token_type is TokenType.LT and second is TokenType.LT
                ):
                    return None
        out: list[Piece] = []
        self._piece(list(tokens), sql, out)
        return out

    # -- one piece ------------------------------------------------------------------------------

    def _piece(self, tokens: list[Token], sql: str, out: list[Piece]) -> None:
        i = 0
        while i < len(tokens):
            self._unslurp(tokens, i, sql)
            n = len(tokens)
            token = tokens[i]
            word = keyword(token)
            following = keyword(tokens[i + 1]) if i + 1 < n else ""
            if self._delimiters and word == "DELIMITER":
                i = self._set_delimiter(tokens, i)
                continue
            if self._delimiter is not None and self._at_delimiter(tokens, i):
                i += len(self._delimiter)
                continue
            # labels: `name: BEGIN|LOOP|…`, PL/pgSQL `<<name>>`
            if (
                i + 2 < n
                and tokens[i + 1].token_type is TokenType.COLON
                and keyword(tokens[i + 2]) in _LABELLED
            ):
                i += 2
                continue
            if token.token_type is TokenType.LT and following == "<":
                close = self._find(tokens, i + 2, lambda t: t.token_type is TokenType.GT)
                i = close + 2 if close < n else n
                continue
            if word == "BEGIN":
                i, block = self._after_begin(tokens, i + 1)
                if block and not self._tsql:
                    self._depth += 1
                continue
            if word == "END":
                if self._loops and following in ("FOR", "LOOP"):
                    self._loops.pop()
                if not self._tsql and (i + 1 >= n or keyword(tokens[i + 1]) not in _END_OF):
                    self._depth = max(0, self._depth - 1)
                    if self._row_table is not None and self._depth <= self._row_table[1]:
                        self._row_table = None  # the trigger's body ended
                i = self._after_end(tokens, i + 1)
                continue
            if word in ("ELSE", "LOOP", "REPEAT", "EXCEPTION"):
                if word == "LOOP" and not self._tsql:
                    self._loops.append(None)
                i += 1
                continue
            if word in ("IF", "ELSEIF", "ELSIF", "WHILE", "WHEN"):
                i = self._after_condition(tokens, i + 1)
                if not self._tsql and keyword(tokens[i - 1]) == "LOOP":
                    self._loops.append(None)  # PL/pgSQL WHILE … LOOP
                continue
            if word == "CASE":
                # a CASE statement (a CASE expression never starts one): on to its first WHEN
                i = self._find(tokens, i + 1, lambda t: keyword(t) == "WHEN")
                continue
            if word == "UNTIL":
                i = self._after_end(tokens, self._find(tokens, i + 1, lambda t: keyword(t) == "END") + 1)
                continue
            if (
                self._tsql
                and token.token_type is TokenType.COLON
                and i + 1 < n
                and tokens[i + 1].line == token.line
                and (i == 0 or tokens[i - 1].line != token.line)
            ):
                # a SQLCMD directive (`:setvar name "value"`, `:r file`): the rest of its line
                line = token.line
                while i < n and tokens[i].line == line:
                    i += 1
                continue
            if word == "GO" and self._tsql:
                self._trigger_table = None  # a trigger's body ends with its batch
                self._variables.clear()  # and variables with it
                i += 1
                if i < n and tokens[i].token_type is TokenType.NUMBER and tokens[i].line == token.line:
                    i += 1
                continue
            if word == "FOR":
                i = self._for_loop(tokens, i, out)
                continue
            if word == "DECLARE":
                i = self._declare(tokens, i, sql, out)
                continue
            if word == "DO" and self._string_after(tokens, i + 1) is not None:
                body = self._string_after(tokens, i + 1)
                self._body(tokens[body], sql, out)
                i = self._end_of_statement(tokens, body + 1)
                continue
            if word == "DO":
                i += 1
                continue
            if self._tsql and (word == "REVERT" or (word in ("EXECUTE", "EXEC") and following == "AS")):
                # impersonation (`EXECUTE AS USER = '…'`, `REVERT`): no lineage
                i = self._end_of_statement(tokens, i + 1)
                continue
            if self._tsql and word in ("EXECUTE", "EXEC"):
                literal = self._tsql_dynamic_sql(tokens, i + 1)
                if literal is not None:
                    # `EXEC sp_executesql N'…'` / `EXEC ('…')` with the text written out: analysed
                    self._body(tokens[literal], sql, out)
                    i = self._end_of_statement(tokens, literal + 1)
                    continue
            if word in ("EXECUTE", "EXEC") and following == "IMMEDIATE":
                if i + 2 < n and tokens[i + 2].token_type in STRINGS:
                    self._body(tokens[i + 2], sql, out)
                i = self._end_of_statement(tokens, i + 2)
                continue
            if word == "RETURN" and following == "QUERY":
                i += 2
                continue
            if word == "RETURN" and following in ("SELECT", "WITH"):
                i += 1  # a table function's query
                continue
            if (
                word == "RETURN"
                and following == "("
                and i + 2 < n
                and keyword(tokens[i + 2]) in ("SELECT", "WITH")
            ):
                close = closing(tokens, i + 1)
                self._emit(tokens[i + 2 : close], sql, out)
                i = self._end_of_statement(tokens, close + 1)
                continue
            if word == "PERFORM" and i + 1 < n:
                # PL/pgSQL: a query whose result is dropped; it still reads
                select = Token(TokenType.SELECT, "SELECT", token.line, token.col, token.start, token.end)
                end = self._end_of_statement(tokens, i + 1)
                self._emit([select, *tokens[i + 1 : end]], sql, out)
                i = end
                continue
            if word == "FOREACH":
                i = self._find(tokens, i + 1, lambda t: keyword(t) == "LOOP") + 1
                self._loops.append(None)
                continue
            if word == "OPEN" and not self._tsql:
                # `OPEN c FOR query` (PL/pgSQL): the query reads
                query = self._find(tokens, i + 1, lambda t: keyword(t) == "FOR") + 1
                if query < n and keyword(tokens[query]) in _QUERY_STARTS:
                    end = self._end_of_statement(tokens, query)
                    self._emit(tokens[query:end], sql, out)
                    i = end
                    continue
            if word in _JUMPS or (i + 1 < n and tokens[i + 1].text == ":=") or self._compound_set(tokens, i):
                end = self._end_of_statement(tokens, i + 1)
                if word == "LET":
                    self._declared_query(tokens[i + 1 : end], out)
                i = end
                continue
            if (word == "CREATE" or word == "ALTER") and self._routine_kind(tokens, i):
                i = self._routine(tokens, i, sql, out)
                continue
            end = self._end_of_statement(tokens, i + 1)
            self._emit(tokens[i:end], sql, out)
            i = end

    @staticmethod
    def _tsql_dynamic_sql(tokens: list[Token], i: int) -> int | None:
        """Index of the literal statement text of `EXEC ('…')` or `EXEC [sys.|dbo.]sp_executesql [@stmt =] N'…'`."""
        n = len(tokens)
        if (
            i + 2 < n
            and tokens[i].token_type is TokenType.L_PAREN
            and tokens[i + 1].token_type in STRINGS
            and tokens[i + 2].token_type is TokenType.R_PAREN
        ):
            return i + 1
        j = i
        while j + 1 < n and tokens[j + 1].token_type is TokenType.DOT:
            j += 2
        if j >= n or keyword(tokens[j]) != "SP_EXECUTESQL":
            return None
        j += 1
        if (
            j + 2 < n
            and tokens[j].token_type is TokenType.PARAMETER
            and tokens[j + 2].token_type is TokenType.EQ
        ):
            j += 3
        return j if j < n and tokens[j].token_type in STRINGS else None

    def _compound_set(self, tokens: list[Token], i: int) -> bool:
        """T-SQL `SET @v += 1`: a variable assignment sqlglot does not parse (no lineage either way)."""
        return (
            self._tsql
            and i + 4 < len(tokens)
            and keyword(tokens[i]) == "SET"
            and tokens[i + 1].token_type is TokenType.PARAMETER
            and tokens[i + 4].token_type is TokenType.EQ
            and tokens[i + 3].text in ("+", "-", "*", "/", "%", "&", "|", "^")
        )

    def _emit(self, statement: list[Token], sql: str, out: list[Piece]) -> None:
        if not statement:
            return
        if self._tsql:
            statement = self._variables.track(statement)
        first = statement[0]
        if self._depth and keyword(first) in ("SELECT", "WITH"):
            statement = without_into_variables(statement)
        if self._trigger_table is not None:
            statement = bind_pseudo_tables(statement, self._trigger_table)
        if any(self._loops) and keyword(first) != "SET":
            for loop in self._loops:
                if loop is not None:
                    statement = bind_loop_variable(statement, *loop)
        if self._row_table is not None and keyword(first) != "SET":  # SET NEW.x = …: an assignment
            statement = bind_row_values(statement, self._row_table[0])
        if first.token_type in self._commands and len(statement) > 1:
            # A command keeps its arguments as one string, as the tokenizer gives it to the parser.
            last = statement[-1]
            if not (len(statement) == 2 and last.token_type is TokenType.STRING):
                text = sql[statement[1].start : last.end + 1]
                string = Token(TokenType.STRING, text, last.line, last.col, statement[1].start, last.end)
                statement = [first, string]
        out.append(statement)

    # -- where things end -------------------------------------------------------------------------

    @staticmethod
    def _find(tokens: list[Token], start: int, match) -> int:
        """Index of the first token at or after `start`, outside parentheses, that matches (or len)."""
        depth = 0
        for j in range(start, len(tokens)):
            kind = tokens[j].token_type
            if kind is TokenType.L_PAREN:
                depth += 1
            elif kind is TokenType.R_PAREN:
                depth -= 1
            elif depth <= 0 and match(tokens[j]):
                return j
        return len(tokens)

    def _end_of_statement(self, tokens: list[Token], start: int) -> int:
        """Where the statement that runs up to `start` ends: the piece's end, a custom delimiter,
        a `DELIMITER` line, or (T-SQL) the next statement's first word."""
        if self._tsql:
            return self._tsql_end(tokens, start)
        if self._delimiters:
            for j in range(start, len(tokens)):
                if self._at_delimiter(tokens, j) or (
                    keyword(tokens[j]) == "DELIMITER" and tokens[j].line != tokens[j - 1].line
                ):
                    return j
        return len(tokens)

    def _at_delimiter(self, tokens: list[Token], i: int) -> bool:
        delimiter = self._delimiter
        if delimiter is None or i + len(delimiter) > len(tokens):
            return False
        return all(tokens[i + k].text == part for k, part in enumerate(delimiter))

    def _set_delimiter(self, tokens: list[Token], i: int) -> int:
        """`DELIMITER //`: the rest of its line is the new delimiter (nothing left there: the semicolon)."""
        line = tokens[i].line
        j = i + 1
        while j < len(tokens) and tokens[j].line == line:
            j += 1
        texts = tuple(t.text for t in tokens[i + 1 : j])
        self._delimiter = texts or None
        return j

    def _after_begin(self, tokens: list[Token], i: int) -> tuple[int, bool]:
        """Past `BEGIN [ATOMIC|NOT ATOMIC|TRY|CATCH]` (a block), or past a whole transaction
        statement (`BEGIN [DISTRIBUTED] TRAN[SACTION] [name]`, Postgres `BEGIN [WORK]
        [ISOLATION LEVEL …] [READ ONLY]`, `BEGIN;`), which has no lineage: (index, is a block)."""
        n = len(tokens)
        following = keyword(tokens[i]) if i < n else ""
        if following in ("TRY", "CATCH"):
            return i + 1, False
        if following == "ATOMIC":
            if (
                self._tsql
                and i + 2 < n
                and keyword(tokens[i + 1]) == "WITH"
                and tokens[i + 2].token_type is TokenType.L_PAREN
            ):
                # natively compiled: `BEGIN ATOMIC WITH (TRANSACTION ISOLATION LEVEL = …, LANGUAGE = …)`
                close = closing(tokens, i + 2)
                return close + 1, close + 1 < n
            return i + 1, i + 1 < n
        if following == "NOT" and i + 1 < n and keyword(tokens[i + 1]) == "ATOMIC":
            return i + 2, i + 2 < n
        if (
            following in _TRANSACTION
            or following in _TRANSACTION_MODES
            or (following == "NOT" and i + 1 < n and keyword(tokens[i + 1]) == "DEFERRABLE")
        ):
            if self._tsql:
                while i < n and keyword(tokens[i]) in _TRANSACTION:
                    i += 1
                if i < n and tokens[i].line == tokens[i - 1].line and keyword(tokens[i]) not in _TSQL_STARTS:
                    i += 1  # the transaction's name
                return i, False
            return self._end_of_statement(tokens, i), False
        return i, i < n  # `BEGIN;` alone is a transaction too

    def _after_end(self, tokens: list[Token], i: int) -> int:
        """Past `END [IF|WHILE|…] [label]` (T-SQL: `END [TRY|CATCH]`; an IF after END starts a statement)."""
        if self._tsql:
            return i + 1 if i < len(tokens) and keyword(tokens[i]) in ("TRY", "CATCH") else i
        if i < len(tokens) and keyword(tokens[i]) in _END_OF:
            i += 1
        if (
            i < len(tokens)
            and tokens[i].token_type in (TokenType.VAR, TokenType.IDENTIFIER)
            and (not self._delimiters or keyword(tokens[i]) != "DELIMITER")
        ):
            i += 1  # the block's label
        return i

    def _after_condition(self, tokens: list[Token], i: int) -> int:
        """Past a condition: up to THEN/DO/LOOP, or in T-SQL up to the statement it guards."""
        if self._tsql:
            return self._tsql_end(tokens, i, condition=True)
        depth = 0  # CASE … END inside the condition holds THENs of its own
        for j in range(i, len(tokens)):
            word = keyword(tokens[j])
            if word == "CASE":
                depth += 1
            elif word == "END" and depth:
                depth -= 1
            elif not depth and word in ("THEN", "DO", "LOOP"):
                return j + 1
        return len(tokens)

    def _tsql_end(self, tokens: list[Token], start: int, condition: bool = False) -> int:
        """The index of the T-SQL statement word that starts the next statement after `start`."""
        kind = "IF" if condition else keyword(tokens[start - 1])
        if kind == "MERGE":
            return len(tokens)  # T-SQL requires MERGE to end with a semicolon
        body = False  # INSERT's query, UPDATE's SET, the statement after WITH's CTEs has begun
        depth = 0
        cases = 0
        n = len(tokens)
        for j in range(start, n):
            token = tokens[j]
            kind_j = token.token_type
            if kind_j is TokenType.L_PAREN:
                depth += 1
                continue
            if kind_j is TokenType.R_PAREN:
                depth -= 1
                continue
            if depth > 0:
                continue
            word = keyword(token)
            if word == "CASE":
                cases += 1
                continue
            if word == "END" and cases:
                cases -= 1
                continue
            if cases or word not in _TSQL_STARTS:
                continue
            if (
                word in ("UPDATE", "INSERT", "DELETE")
                and j + 1 < n
                and tokens[j + 1].token_type is TokenType.L_PAREN
            ):
                continue  # a trigger's UPDATE(column) test, not a statement
            previous = tokens[j - 1].text.upper() if j > start or not condition else ""
            if word == "WITH" and not (
                j + 2 < n
                and tokens[j + 1].token_type is not TokenType.L_PAREN
                and tokens[j + 2].token_type in (TokenType.ALIAS, TokenType.L_PAREN)
                and keyword(tokens[j + 1]) not in _ROUTINE_OPTIONS
            ):
                continue  # table hints, WITH TIES, WITH EXECUTE AS …
            if condition:
                return j
            if word == "IF" and previous in _OBJECT_KINDS:
                continue  # DROP TABLE IF EXISTS, CREATE TABLE IF NOT EXISTS
            if word in ("SELECT", "VALUES", "WITH", "EXEC", "EXECUTE") and kind == "INSERT" and not body:
                body = True
                continue
            if word == "SELECT" and previous in _SET_OPERATORS:
                continue
            if kind == "WITH" and not body and word in ("SELECT", "INSERT", "UPDATE", "DELETE", "MERGE"):
                if word == "MERGE":
                    return n
                kind, body = word, word != "INSERT"
                if word == "UPDATE":
                    body = False
                continue
            if word == "SET" and ((kind == "UPDATE" and not body) or kind == "ALTER"):
                body = True
                continue
            if word in ("SELECT", "WITH") and kind in ("CREATE", "ALTER") and previous == "AS":
                continue
            if word == "SELECT" and kind == "DECLARE" and previous == "FOR":
                continue
            if word in ("SELECT", "INSERT", "UPDATE", "DELETE", "EXECUTE", "EXEC") and previous in _GRANTS:
                continue
            if word in ("EXECUTE", "EXEC") and previous == "WITH":
                continue
            return j
        return n

    # -- constructs -------------------------------------------------------------------------------

    def _for_loop(self, tokens: list[Token], i: int, out: list[Piece]) -> int:
        """`FOR [v AS|IN] query DO|LOOP`: the query is a statement of its own; the loop body follows."""
        end = self._find(tokens, i + 1, lambda t: keyword(t) in ("DO", "LOOP"))
        start = i + 1
        variable = ""
        if start + 1 < end and keyword(tokens[start + 1]) in ("AS", "IN"):
            variable = tokens[start].text.lower()
            start += 2
        query = tokens[start:end]
        if query and query[0].token_type is TokenType.L_PAREN and query[-1].token_type is TokenType.R_PAREN:
            query = query[1:-1]
        if query and keyword(query[0]) in _QUERY_STARTS:
            out.append(query)
            self._loops.append((variable, query) if variable else None)
        else:
            self._loops.append(None)
        return end + 1

    def _declare(self, tokens: list[Token], i: int, sql: str, out: list[Piece]) -> int:
        end = self._end_of_statement(tokens, i + 1)
        words = [keyword(t) for t in tokens[i + 1 : min(end, i + 8)]]
        if "HANDLER" in words:
            # `DECLARE {EXIT|CONTINUE} HANDLER FOR <conditions> <statement|BEGIN …>`: the body stays
            return self._find(tokens, i + 2 + words.index("HANDLER"), lambda t: keyword(t) in _HANDLER_BODY)
        if "CURSOR" in words:
            query = self._find(tokens, i + 1, lambda t: keyword(t) == "FOR") + 1
            if query < end:
                self._emit(tokens[query:end], sql, out)
            return end
        if self._tsql:
            created = self._variables.table_declaration(tokens[i:end])
            if created is not None:
                out.append(created)  # its schema, for the batch's later statements
                return end
            self._variables.track(tokens[i:end])
        if any(keyword(t) == "SELECT" for t in tokens[i:end]):
            self._emit(tokens[i:end], sql, out)  # a default read from a query
        # a plain declaration has no lineage (and MySQL's does not parse)
        return end

    def _declared_query(self, declaration: list[Token], out: list[Piece]) -> None:
        """Snowflake Scripting / PL/pgSQL `c CURSOR FOR query`, `r RESULTSET [DEFAULT|:=] (query)`
        (in a DECLARE section or a LET): the query reads."""
        for k, token in enumerate(declaration):
            word = keyword(token)
            if word == "CURSOR" or word == "RESULTSET":
                start = k + 1
                while start < len(declaration) and keyword(declaration[start]) in _DECLARED_QUERY_PREFIX:
                    start += 1
                query = declaration[start:]
                if (
                    query
                    and query[0].token_type is TokenType.L_PAREN
                    and query[-1].token_type is TokenType.R_PAREN
                ):
                    query = query[1:-1]
                if query and keyword(query[0]) in _QUERY_STARTS:
                    out.append(query)
                return

    def _routine_kind(self, tokens: list[Token], i: int) -> str:
        for token in tokens[i + 1 : i + 8]:
            word = keyword(token)
            if word in _ROUTINES:
                return word
            if word in ("TABLE", "VIEW", "INDEX", "SCHEMA", "DATABASE", "AS", "SELECT"):
                return ""
        return ""

    @staticmethod
    def _trigger_on(tokens: list[Token], i: int) -> list[Token] | None:
        """The table of `CREATE TRIGGER name ON table {AFTER|FOR|INSTEAD OF} …` (None: a DDL trigger)."""
        on = next((j for j in range(i + 2, len(tokens)) if keyword(tokens[j]) == "ON"), None)
        if on is None:
            return None
        end = on + 1
        while end < len(tokens) and keyword(tokens[end]) not in ("AFTER", "FOR", "INSTEAD", "WITH"):
            end += 1
        table = tokens[on + 1 : end]
        if not table or keyword(table[0]) in ("DATABASE", "ALL"):
            return None
        return table

    def _routine(self, tokens: list[Token], i: int, sql: str, out: list[Piece]) -> int:
        """`CREATE [OR REPLACE] PROCEDURE|FUNCTION|TRIGGER …`: its body's statements, no statement of its own."""
        n = len(tokens)
        if self._tsql:
            self._trigger_table = (
                self._trigger_on(tokens, i) if self._routine_kind(tokens, i) == "TRIGGER" else None
            )
            self._variables.clear()
        language = ""
        depth = 0
        for j in range(i + 2, n):
            token = tokens[j]
            kind = token.token_type
            if kind is TokenType.L_PAREN:
                depth += 1
            elif kind is TokenType.R_PAREN:
                depth -= 1
            if depth:
                continue
            word = keyword(token)
            if word == "LANGUAGE" and j + 1 < n:
                language = tokens[j + 1].text.upper()
            previous = keyword(tokens[j - 1])
            if kind in STRINGS and previous == "AS":
                quoted = kind is not TokenType.STRING
                if language in _BODY_LANGUAGES or (quoted and not language):
                    self._body(token, sql, out, declarations=True)
                    return n
                if not language:
                    language = next(
                        (
                            tokens[k + 1].text.upper()
                            for k in range(j + 1, n - 1)
                            if keyword(tokens[k]) == "LANGUAGE"
                        ),
                        "",
                    )
                    if language in _BODY_LANGUAGES:
                        self._body(token, sql, out, declarations=True)
                        return n
                # another language (a Hive UDF class name, Python, JavaScript): opaque, the
                # statement as the parser sees it
                end = self._end_of_statement(tokens, j + 1)
                self._emit(tokens[i:end], sql, out)
                return end
            if self._tsql:
                if (
                    kind is TokenType.ALIAS
                    and previous not in ("EXECUTE", "EXEC")
                    # `@p AS type`: a parameter's type, the body is further on
                    and tokens[j - 2].token_type is not TokenType.PARAMETER
                ):
                    out.extend(self._variables.routine_header(tokens[i:j]))
                    return j + 1
            elif word == "BEGIN" or word == "RETURN":
                if word == "BEGIN" and self._routine_kind(tokens, i) == "TRIGGER":
                    table = self._trigger_on(tokens, i)
                    self._row_table = (table, self._depth) if table else None
                return j  # a label before BEGIN is part of the header
            elif word == "ROW" and previous == "EACH" and j + 1 < n and keyword(tokens[j + 1]) == "BEGIN":
                table = self._trigger_on(tokens, i)
                self._row_table = (table, self._depth) if table else None
                return j + 1
            elif (word == "ROW" and previous == "EACH") or (
                kind is TokenType.ALIAS and j + 1 < n and keyword(tokens[j + 1]) in _HANDLER_BODY
            ):
                return j + 1  # a trigger's FOR EACH ROW, Databricks' LANGUAGE SQL AS BEGIN
        # no body found: the statement as the parser sees it
        end = self._end_of_statement(tokens, i + 1)
        self._emit(tokens[i:end], sql, out)
        return end

    # -- text inside strings ----------------------------------------------------------------------

    @staticmethod
    def _string_after(tokens: list[Token], i: int) -> int | None:
        for j in range(i, min(i + 3, len(tokens))):
            if tokens[j].token_type in STRINGS:
                return j
        return None

    def _retokenize(self, sql: str, start: int, end: int, line: int) -> list[Token] | TokenError:
        try:
            tokens = self._tokenizer.tokenize(sql[start:end])
        except TokenError as exc:
            return exc
        shift = line - 1
        for token in tokens:
            token.line += shift
            token.start += start
            token.end += start
        return tokens

    def _unslurp(self, tokens: list[Token], i: int, sql: str) -> None:
        """A command word first in a piece (BigQuery's BEGIN, T-SQL's PRINT/GO/END, Postgres' DO)
        takes the rest of the piece as one string: put that text back as tokens."""
        if i + 1 >= len(tokens):
            return
        command = tokens[i]
        rest = tokens[i + 1]
        if command.token_type not in self._commands or rest.token_type is not TokenType.STRING:
            return
        if not self._tsql and keyword(command) not in _SCRIPT_WORDS:
            return
        start = command.end + 1
        if sql[start : rest.end + 1].strip() != rest.text:
            return  # a real string literal
        again = self._retokenize(sql, start, rest.end + 1, command.line)  # starts on the command's line
        if not isinstance(again, TokenError):
            tokens[i + 1 : i + 2] = again

    def _body(self, string: Token, sql: str, out: list[Piece], declarations: bool = False) -> None:
        """The statements of SQL held in a string token (`$$ … $$`, `'…'`)."""
        raw = sql[string.start : string.end + 1]
        offset = raw.find(string.text) if string.text else -1
        if offset >= 0:
            start = string.start + offset
            tokens = self._retokenize(sql, start, start + len(string.text), _line_at(string, start, sql))
        else:
            # escapes inside the quotes: the text is not the source's; lines are counted from the string
            try:
                tokens = self._tokenizer.tokenize(string.text)
            except TokenError as exc:
                tokens = exc
            else:
                line = _line_at(string, string.start, sql)
                for token in tokens:
                    token.line += line - 1
                    token.start = string.start
                    token.end = string.end
        if isinstance(tokens, TokenError):
            out.append(BodyError(_line_at(string, string.start, sql), f"cannot tokenize the body: {tokens}"))
            return
        part: list[Token] = []
        skipping = declarations and bool(tokens) and keyword(tokens[0]) == "DECLARE"
        saved, self._delimiter = self._delimiter, None
        depth, loops = self._depth, self._loops
        self._loops = []
        if not self._tsql:
            self._depth += 1  # a body is a block even without BEGIN (a LANGUAGE sql function)
        try:
            for token in [*tokens, None]:
                if token is not None and token.token_type is not TokenType.SEMICOLON:
                    part.append(token)
                    continue
                if skipping and part:
                    # PL/pgSQL and Snowflake Scripting: `DECLARE a int; b text; BEGIN …` —
                    # declarations up to the BEGIN that opens the body
                    begin = next((k for k, t in enumerate(part) if keyword(t) == "BEGIN"), None)
                    self._declared_query(part[:begin], out)
                    if begin is None:
                        part = []
                        continue
                    part, skipping = part[begin:], False
                if part:
                    self._piece(part, sql, out)
                part = []
        finally:
            self._delimiter = saved
            self._depth, self._loops = depth, loops


__all__ = ["NO_SEMICOLON_DIALECTS", "BodyError", "Piece", "ScriptSplitter"]
