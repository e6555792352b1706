"""The lineage extractor: one SQL task in, one `TaskLineage` out.

The script is tokenized once and split on semicolons, so that a statement
that does not parse becomes a `LineageError` while the others still yield
their lineage. Nothing raises out of `extract_lineage` for bad SQL.
"""

from __future__ import annotations

import logging
import re

from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, SqlglotError, TokenError
from sqlglot.tokens import Token, TokenType

from ingest.catalog import Catalog
from ingest.dates import DatePoint, parse_date_text
from ingest.model import (
    ColumnLineage,
    LineageError,
    SourceColumn,
    SqlTask,
    StatementLineage,
    TableEdge,
    TableRead,
    TaskLineage,
    WeakReference,
)
from ingest.settings import IngestSettings
from ingest.statements import StatementError, StatementExtractor
from ingest.variables import script_variables, substitute, unresolved_references

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


def _split(dialect: Dialect, sql: str) -> list[_Chunk] | TokenError:
    try:
        tokens = dialect.tokenize(sql)
    except TokenError as exc:
        return exc
    chunks: list[_Chunk] = []
    current: list[Token] = []
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if current:
                chunks.append(_Chunk(current))
                current = []
        else:
            current.append(token)
    if current:
        chunks.append(_Chunk(current))
    return chunks


_TOKEN_REPR = re.compile(r"<Token token_type: [^,]*, text: (.*?), line: \d+.*?>")
_STATEMENT_END = re.compile(r";[ \t]*(?:--[^\n]*)?(?:\n|$)")


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


def extract_lineage(
    task: SqlTask,
    catalog: Catalog | None = None,
    settings: IngestSettings | None = None,
) -> TaskLineage:
    """Extract the lineage of one SQL task. Never raises for bad SQL."""
    settings = settings or _settings()
    catalog = catalog or _EMPTY_CATALOG
    result = TaskLineage(task_id=task.task_id, dialect=task.dialect, version=task.effective_version)
    try:
        dialect = Dialect.get_or_raise(task.dialect)
    except (ValueError, SqlglotError) as exc:
        result.errors.append(
            LineageError(task_id=task.task_id, statement_index=0, message=f"unknown dialect: {exc}")
        )
        return result

    variables = script_variables(task.sql, task.vars)
    sql = substitute(task.sql, variables)
    default_db = (catalog.default_database or settings.default_database).lower()
    extractor = StatementExtractor(
        catalog,
        default_db,
        frozenset(c.lower() for c in settings.partition_columns),
        SUB_DAY_PARTITION_COLUMNS,
        task.dialect,
        _run_date(variables, settings),
    )
    parser = dialect.parser()

    split = _split(dialect, sql)
    if isinstance(split, TokenError):
        pieces = _split_text(sql)
        for index, (offset, text) in enumerate(pieces):
            line = sql.count("\n", 0, offset) + 1
            chunks = _split(dialect, text)
            if isinstance(chunks, TokenError):
                result.errors.append(
                    LineageError(
                        task_id=task.task_id,
                        statement_index=index,
                        line=line,
                        message=f"cannot tokenize: {chunks}",
                    )
                )
                continue
            for chunk in chunks:
                _one(result, extractor, parser, chunk, text, index, line - 1, task.task_id)
    else:
        for index, chunk in enumerate(split):
            _one(result, extractor, parser, chunk, sql, index, 0, task.task_id)

    _aggregate(result)
    return result


def _one(
    result: TaskLineage,
    extractor: StatementExtractor,
    parser,
    chunk: _Chunk,
    sql: str,
    index: int,
    line_offset: int,
    task_id: str,
) -> None:
    line = chunk.line + line_offset
    try:
        parsed = parser.parse(chunk.tokens, sql)
        node = parsed[0] if parsed else None
        if node is None:
            return
        result.statements.append(extractor.extract(node, index, line))
    except ParseError as exc:
        detail = exc.errors[0] if exc.errors else {}
        message = _TOKEN_REPR.sub(r"'\1'", str(detail.get("description") or exc).split("\n")[0])
        pending = unresolved_references(sql[chunk.start : chunk.end + 1])
        if pending:
            message += f" (unsubstituted variables: {', '.join(pending)})"
        result.errors.append(
            LineageError(
                task_id=task_id,
                statement_index=index,
                line=(detail.get("line") or chunk.line) + line_offset,
                column=detail.get("col"),
                message=message,
            )
        )
    except StatementError as exc:
        result.errors.append(
            LineageError(task_id=task_id, statement_index=index, line=line, message=str(exc))
        )
    except (SqlglotError, RecursionError, ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
        # An extractor bug on an unusual statement must not abort the task.
        result.errors.append(
            LineageError(
                task_id=task_id,
                statement_index=index,
                line=line,
                message=f"lineage failed: {type(exc).__name__}: {exc}",
            )
        )


def _aggregate(result: TaskLineage) -> None:
    reads: dict[str, TableRead] = {}
    unbounded: set[str] = set()
    writes: dict[str, None] = {}
    columns: dict[str, dict[tuple, SourceColumn]] = {}
    weak: dict[tuple[str, str, str], None] = {}
    edges: dict[tuple[str, str], None] = {}
    unresolved: dict[str, None] = {}
    for statement in result.statements:
        for read in statement.reads:
            merged = reads.get(read.table)
            if merged is None:
                reads[read.table] = read.model_copy(deep=True)
                if read.partition_window_days is None:
                    unbounded.add(read.table)
                continue
            texts = {p.text for p in merged.predicates}
            merged.predicates.extend(p for p in read.predicates if p.text not in texts)
            merged.partition_columns.extend(
                c for c in read.partition_columns if c not in merged.partition_columns
            )
            if read.partition_window_days is None:
                unbounded.add(read.table)
            elif (
                merged.partition_window_days is None
                or read.partition_window_days > merged.partition_window_days
            ):
                merged.partition_window_days = read.partition_window_days
        for table in statement.writes:
            writes[table] = None
        for column in statement.columns:
            bucket = columns.setdefault(column.target, {})
            for source in column.sources:
                bucket[(source.column, source.key, source.kind, tuple(source.functions))] = source
        for ref in statement.weak_references:
            weak[(ref.column, ref.role, ref.target_table)] = None
        for edge in statement.table_edges:
            edges[(edge.source, edge.target)] = None
        for problem in statement.unresolved:
            unresolved[f"statement {statement.index}: {problem}"] = None
    for table in unbounded:
        reads[table].partition_window_days = None
    result.reads = list(reads.values())
    result.writes = list(writes)
    result.columns = [ColumnLineage(target=t, sources=list(s.values())) for t, s in columns.items()]
    result.weak_references = [WeakReference(column=c, role=r, target_table=t) for c, r, t in weak]
    result.table_edges = [TableEdge(source=s, target=t) for s, t in edges]
    result.unresolved = list(unresolved)


__all__ = ["StatementLineage", "extract_lineage"]
