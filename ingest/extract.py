"""The lineage extractor: one SQL task in, one `TaskLineage` out.

The script is tokenized once and split on semicolons, so that a statement
that does not parse becomes a `StatementProblem` while the others still yield
their lineage. Nothing raises out of `extract_lineage` for bad SQL.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import re
from collections.abc import Iterator
from typing import Any

from sqlglot.dialects.dialect import Dialects
from sqlglot.errors import ParseError, SqlglotError, TokenError
from sqlglot.tokens import Token, TokenType

from watershed.graph.catalog import Catalog
from watershed.graph.errors import WatershedError
from watershed.graph.lineage import (
    ColumnLineage,
    SqlTask,
    StatementLineage,
    StatementProblem,
    TableEdge,
    TableRead,
    TaskLineage,
    WeakReference,
)
from watershed.ingest.dates import DatePoint, parse_date_text
from watershed.ingest.dialects import dialect_tools
from watershed.ingest.errors import StatementError
from watershed.ingest.limits import check_deadline, check_tokens
from watershed.ingest.parse_errors import explain
from watershed.ingest.resolve import may_hold_windows
from watershed.ingest.scripting import NO_SEMICOLON_DIALECTS, BodyError, ScriptSplitter
from watershed.ingest.settings import IngestSettings
from watershed.ingest.statements import StatementExtractor
from watershed.ingest.variables import script_variables, substitute, unresolved_references

# sqlglot logs a warning for every statement it keeps as an opaque Command
# (SET, ADD JAR); those are expected in warehouse scripts.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

SUB_DAY_PARTITION_COLUMNS = frozenset({"hour", "hh", "hr", "minute", "mi"})
_EMPTY_CATALOG = Catalog()
_default_settings: IngestSettings | None = None


def _settings() -> IngestSettings:
    global _default_settings
    if _default_settings is None:
        _default_settings = IngestSettings()
    return _default_settings


class _Chunk:
    __slots__ = ("end", "line", "start", "tokens")

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.line = tokens[0].line
        self.start = tokens[0].start
        self.end = tokens[-1].end


def _split(tokenizer, sql: str) -> list[_Chunk] | TokenError:
    try:
        tokens = tokenizer.tokenize(sql)
    except TokenError as exc:
        return exc
    if not tokens:
        return []
    if ";" not in sql:
        return [_Chunk(tokens)]
    semicolon = TokenType.SEMICOLON
    cuts = [i for i, token in enumerate(tokens) if token.token_type is semicolon]
    chunks: list[_Chunk] = []
    start = 0
    for cut in [*cuts, len(tokens)]:
        if cut > start:
            chunks.append(_Chunk(tokens[start:cut]))
        start = cut + 1
    return chunks


_TOKEN_REPR = re.compile(r"<Token token_type: [^,]*, text: (.*?), line: \d+.*?>")
_STATEMENT_END = re.compile(r";[ \t]*(?:--[^\n]*)?(?:\n|$)")
#: T-SQL scripts often have no semicolons: a `GO` line ends a batch too.
_TSQL_STATEMENT_END = re.compile(
    r";[ \t]*(?:--[^\n]*)?(?:\n|$)|^[ \t]*GO(?:[ \t]+\d+)?[ \t]*(?:\n|$)", re.I | re.M
)


def _split_text(sql: str) -> list[tuple[int, str]]:
    """Fallback split when the whole script does not tokenize: at semicolons ending a line."""
    pieces: list[tuple[int, str]] = []
    position = 0
    for match in _STATEMENT_END.finditer(sql):
        pieces.append((position, sql[position : match.start()]))
        position = match.end()
    pieces.append((position, sql[position:]))
    return [(offset, text) for offset, text in pieces if text.strip()]


def _run_date(variables: dict[str, str], settings: IngestSettings) -> DatePoint | None:
    for name in settings.run_date_variables:
        value = variables.get(name)
        if value:
            point = parse_date_text(value)
            if point is not None and point.anchor == "":
                return point
    return None


def _with_run_date(variables: dict[str, str], settings: IngestSettings) -> dict[str, str]:
    """The script's variables (its vars and its own SETs), with the configured run date under the
    first run-date name when none of the run-date names is set: a task's own date always wins."""
    if settings.run_date is None or any(variables.get(name) for name in settings.run_date_variables):
        return variables
    name = settings.run_date_variables[0]
    return {**variables, name: settings.run_date}


class UnknownDialectError(WatershedError, ValueError):
    """A dialect sqlglot does not know; the message names it and lists the known ones."""


def known_dialects() -> list[str]:
    return sorted(d.value for d in Dialects if d.value)


def check_dialect(name: str) -> None:
    """Raise `UnknownDialectError` unless `name` is a dialect sqlglot parses."""
    try:
        dialect_tools(name.strip().lower())
    except (ValueError, SqlglotError):
        raise UnknownDialectError(
            f"unknown dialect {name!r} (known: {', '.join(known_dialects())})"
        ) from None


def extract_lineage(
    task: SqlTask,
    catalog: Catalog | None = None,
    settings: IngestSettings | None = None,
    default_catalog: str | None = None,
) -> TaskLineage:
    """Extract the lineage of one SQL task. Never raises for bad SQL, only for a statement or an
    analysis beyond the limits in force (`ingest.limits`): `AnalysisLimitError`.

    `default_catalog` (else the setting) is the session's catalog, dropped from
    three-part names; any other catalog is kept in the table id (`cat2:db2.t1`).
    """
    settings = settings or _settings()
    catalog = catalog or _EMPTY_CATALOG
    statements: list[StatementLineage] = []
    errors: list[StatementProblem] = []
    header: dict[str, Any] = {
        "task_id": task.task_id,
        "dialect": task.dialect,
        "version": task.effective_version,
    }
    dialect = task.dialect.strip().lower()
    try:
        check_dialect(dialect)
    except UnknownDialectError as exc:
        # Checked before anything else: one error for the task, not one per statement.
        errors.append(StatementProblem(task_id=task.task_id, statement_index=0, message=str(exc)))
        return TaskLineage(**header, errors=errors)
    _dialect, tokenizer, parser = dialect_tools(dialect)

    variables = _with_run_date(script_variables(task.sql, task.vars), settings)
    sql = substitute(task.sql, variables)
    default_db = (catalog.default_database or settings.default_database).lower()
    extractor = StatementExtractor(
        catalog,
        default_db,
        frozenset(c.lower() for c in settings.partition_columns),
        SUB_DAY_PARTITION_COLUMNS,
        dialect,
        _run_date(variables, settings),
        (default_catalog or settings.default_catalog).strip().lower(),
        settings.conditions_as_lineage,
    )

    # The script is tokenized a batch of statements at a time: the tokens of a
    # whole multi-megabyte script would take tens of bytes per character.
    run = _Run(statements, errors, extractor, parser, ScriptSplitter(dialect, tokenizer), task.task_id)
    line = 1
    ends = _TSQL_STATEMENT_END if dialect in NO_SEMICOLON_DIALECTS else _STATEMENT_END
    for offset, end, chunks in _batches(tokenizer, sql, ends):
        text = sql[offset:end]
        if isinstance(chunks, TokenError):
            _untokenizable(run, tokenizer, text, line)
        else:
            for chunk in chunks:
                run.piece(chunk, text, line - 1)
        line += text.count("\n")

    return TaskLineage(**header, statements=statements, errors=errors, **_aggregate(statements))


#: Characters of script tokenized at once (cut at the next statement end after it).
BATCH_CHARS = 128 * 1024
#: How many following batches a batch that does not tokenize alone may take in
#: (a cut fell inside a string or comment spanning a `;` line end).
_EXTEND = 4


def _cut(sql: str, start: int, ends: re.Pattern = _STATEMENT_END) -> int:
    if len(sql) - start <= BATCH_CHARS:
        return len(sql)
    match = ends.search(sql, start + BATCH_CHARS)
    return match.end() if match is not None else len(sql)


def _batches(
    tokenizer, sql: str, ends: re.Pattern = _STATEMENT_END
) -> Iterator[tuple[int, int, list[_Chunk] | TokenError]]:
    """`(start, end, chunks)` for consecutive pieces of `sql`, each cut at a statement end.

    A piece that does not tokenize is retried with the next pieces joined to
    it, since a cut inside a string or comment leaves it unterminated; one
    that still fails is returned with its error, to be split per statement.
    """
    start = 0
    while start < len(sql):
        end = _cut(sql, start, ends)
        chunks = _split(tokenizer, sql[start:end])
        if isinstance(chunks, TokenError):
            longer = end
            for _ in range(_EXTEND):
                if longer >= len(sql):
                    break
                longer = _cut(sql, longer, ends)
                retried = _split(tokenizer, sql[start:longer])
                if not isinstance(retried, TokenError):
                    chunks, end = retried, longer
                    break
        yield start, end, chunks
        start = end


class _Run:
    """One task's extraction: where results go, and the statement counter."""

    def __init__(
        self,
        statements: list[StatementLineage],
        errors: list[StatementProblem],
        extractor: StatementExtractor,
        parser,
        splitter: ScriptSplitter,
        task_id: str,
    ) -> None:
        self.statements = statements
        self.errors = errors
        self.extractor = extractor
        self.parser = parser
        self.splitter = splitter
        self.task_id = task_id
        self.counter = itertools.count()

    def piece(self, chunk: _Chunk, sql: str, line_offset: int) -> None:
        """The statements of one `;`-separated piece: itself, or those of its blocks and bodies."""
        pieces = self.splitter.statements(chunk.tokens, sql)
        if pieces is None:
            # the statement's own tokens, so its text shows whether it can hold a window; a
            # block's statements may carry tokens spliced in from elsewhere (`script_bindings`)
            self.one(chunk, sql, line_offset, may_hold_windows(sql[chunk.start : chunk.end + 1]))
            return
        for piece in pieces:
            if isinstance(piece, BodyError):
                self.errors.append(
                    StatementProblem(
                        task_id=self.task_id,
                        statement_index=next(self.counter),
                        line=piece.line + line_offset,
                        message=piece.message,
                    )
                )
            else:
                self.one(_Chunk(piece), sql, line_offset)

    def one(self, chunk: _Chunk, sql: str, line_offset: int, windows_possible: bool = True) -> None:
        _one(
            self.statements,
            self.errors,
            self.extractor,
            self.parser,
            chunk,
            sql,
            next(self.counter),
            line_offset,
            self.task_id,
            windows_possible,
        )


def _untokenizable(run: _Run, tokenizer, text: str, first_line: int) -> None:
    """A piece that does not tokenize: split at semicolons ending a line, each part on its own
    (joined to the next few parts when a string or comment runs on past its end)."""
    parts = _split_text(text)
    position = 0
    while position < len(parts):
        offset, part = parts[position]
        chunks = _split(tokenizer, part)
        taken = 1
        while isinstance(chunks, TokenError) and taken <= _EXTEND and position + taken < len(parts):
            last_offset, last_part = parts[position + taken]
            taken += 1
            joined = text[offset : last_offset + len(last_part)]
            retried = _split(tokenizer, joined)
            if not isinstance(retried, TokenError):
                chunks, part = retried, joined
        if isinstance(chunks, TokenError):
            taken = 1
        position += taken
        line = first_line + text.count("\n", 0, offset)
        if isinstance(chunks, TokenError):
            run.errors.append(
                StatementProblem(
                    task_id=run.task_id,
                    statement_index=next(run.counter),
                    line=line,
                    message="cannot tokenize the text (an unclosed quote or comment?) near "
                    + str(chunks).removeprefix("Error tokenizing "),
                    detail=str(chunks),
                )
            )
            continue
        for chunk in chunks:
            run.piece(chunk, part, line - 1)


def _one(
    statements: list[StatementLineage],
    errors: list[StatementProblem],
    extractor: StatementExtractor,
    parser,
    chunk: _Chunk,
    sql: str,
    index: int,
    line_offset: int,
    task_id: str,
    windows_possible: bool = True,
) -> None:
    line = chunk.line + line_offset
    # before the parse; a breach stops the task (AnalysisLimitError is no statement's error)
    check_deadline()
    check_tokens(chunk.tokens, chunk.end - chunk.start + 1, f"statement {index} (line {line})")
    try:
        parsed = parser.parse(chunk.tokens, sql)
        node = parsed[0] if parsed else None
        if node is None:
            return
        # the text the tokens' offsets point into: unaliased Spark items are named with their
        # functions' written names (`nvl`, not the `coalesce` sqlglot parses it as)
        extractor.env.sql_text = sql
        extractor.resolver.windows_possible = windows_possible
        statements.append(extractor.extract(node, index, line))
    except ParseError as exc:
        # forms sqlglot does not parse but the extractor can rewrite (Spark's INSERT OVERWRITE
        # DIRECTORY … USING fmt, Hive's EXPORT/IMPORT): else the parse error is reported below
        fallback = extractor.reparse(sql[chunk.start : chunk.end + 1])
        if fallback is not None:
            extractor.env.sql_text = None  # parsed from another text
            extractor.resolver.windows_possible = True
            try:
                statements.append(extractor.extract(fallback, index, line))
                return
            except (
                StatementError,
                SqlglotError,
                ValueError,
                TypeError,
                AttributeError,
                KeyError,
                IndexError,
            ):
                pass
        detail = exc.errors[0] if exc.errors else {"description": str(exc)}
        message = explain(detail)
        pending = unresolved_references(sql[chunk.start : chunk.end + 1])
        if pending:
            message += f" (unsubstituted variables: {', '.join(pending)})"
        errors.append(
            StatementProblem(
                task_id=task_id,
                statement_index=index,
                line=(detail.get("line") or chunk.line) + line_offset,
                column=detail.get("col"),
                message=message,
                # sqlglot's own words, for a bug report; the message is the sentence a steward reads
                detail=_TOKEN_REPR.sub(r"'\1'", str(detail.get("description") or exc).split("\n")[0]),
            )
        )
    except StatementError as exc:
        errors.append(StatementProblem(task_id=task_id, statement_index=index, line=line, message=str(exc)))
    except (SqlglotError, RecursionError, ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
        # An extractor bug on an unusual statement must not abort the task.
        errors.append(
            StatementProblem(
                task_id=task_id,
                statement_index=index,
                line=line,
                message=f"lineage failed: {type(exc).__name__}: {exc}",
            )
        )


def _aggregate(statements: list[StatementLineage]) -> dict:
    """Merge the statements into the task-level lists, reusing their objects where they do not clash."""
    reads: dict[str, TableRead] = {}
    unbounded: set[str] = set()
    writes: dict[str, None] = {}
    columns: dict[str, ColumnLineage] = {}
    merged_columns: set[str] = set()
    weak: dict[tuple[str, str, str], WeakReference] = {}
    edges: dict[tuple[str, str], TableEdge] = {}
    unresolved: dict[str, None] = {}
    copied: set[str] = set()
    for statement in statements:
        for read in statement.reads:
            if read.partition_window_days is None:
                unbounded.add(read.table)
            merged = reads.get(read.table)
            if merged is None:
                reads[read.table] = read
                continue
            if read.table not in copied:
                copied.add(read.table)
                merged = reads[read.table] = TableRead(
                    table=merged.table,
                    predicates=list(merged.predicates),
                    partition_window_days=merged.partition_window_days,
                    partition_columns=list(merged.partition_columns),
                    unparsed_partition_predicates=list(merged.unparsed_partition_predicates),
                )
            merged.unparsed_partition_predicates.extend(
                t for t in read.unparsed_partition_predicates if t not in merged.unparsed_partition_predicates
            )
            texts = {p.text for p in merged.predicates}
            merged.predicates.extend(p for p in read.predicates if p.text not in texts)
            merged.partition_columns.extend(
                c for c in read.partition_columns if c not in merged.partition_columns
            )
            if read.partition_window_days is not None and (
                merged.partition_window_days is None
                or read.partition_window_days > merged.partition_window_days
            ):
                merged.partition_window_days = read.partition_window_days
        writes.update(dict.fromkeys(statement.writes))
        for column in statement.columns:
            existing = columns.get(column.target)
            if existing is None:
                columns[column.target] = column
                continue
            if column.target not in merged_columns:
                existing = columns[column.target] = ColumnLineage(
                    target=existing.target, sources=list(existing.sources)
                )
                merged_columns.add(column.target)
            seen = {(s.column, s.key, s.kind, tuple(s.functions)) for s in existing.sources}
            existing.sources.extend(
                s for s in column.sources if (s.column, s.key, s.kind, tuple(s.functions)) not in seen
            )
        # keyed by all their fields: a later equal record may replace an earlier one in place
        weak.update({(r.column, r.role, r.target_table): r for r in statement.weak_references})
        edges.update({(e.source, e.target): e for e in statement.table_edges})
        for problem in statement.unresolved:
            unresolved[f"statement {statement.index}: {problem}"] = None
    for table in unbounded:
        read = reads[table]
        if read.partition_window_days is not None:
            reads[table] = dataclasses.replace(read, partition_window_days=None)
    return {
        "reads": list(reads.values()),
        "writes": list(writes),
        "columns": list(columns.values()),
        "weak_references": list(weak.values()),
        "table_edges": list(edges.values()),
        "unresolved": list(unresolved),
    }


__all__ = ["StatementLineage", "UnknownDialectError", "check_dialect", "extract_lineage", "known_dialects"]
