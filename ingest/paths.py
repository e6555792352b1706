"""Statements that move rows between tables and files named by location.

Files are tables of their own in the graph, with the id `ids.path_table`
(`path:fs./data/out`, `path:local./tmp/x`): a directory written by one task and
loaded by another meet in one node. A file's columns are named as the statement
that writes it names them (the select list of `INSERT OVERWRITE DIRECTORY`,
`UNLOAD`, `COPY … TO`); files loaded into a table are read as holding that
table's columns (`LOAD DATA`, `COPY … FROM`), so each column of the table comes
directly from the file column of the same name.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from watershed.graph import ids
from watershed.graph.errors import WatershedError
from watershed.graph.lineage import ColumnLineage, SourceColumn
from watershed.ingest.errors import StatementError
from watershed.ingest.resolve import Occurrence, ReadContext, Relation, Scope, table_id
from watershed.ingest.writes import Write

# Redshift `UNLOAD ('select …') TO 's3://…' [options]`, which sqlglot keeps as a Command.
_UNLOAD = re.compile(r"\s*\(\s*'((?:[^']|'')*)'\s*\)\s*TO\s+'((?:[^']|'')*)'", re.IGNORECASE | re.DOTALL)


def path_id(location: str, local: bool = False) -> str:
    try:
        return ids.path_table(location, local=local)
    except WatershedError as exc:
        raise StatementError(f"bad file location {location!r}: {exc}") from None


def _location(node: exp.Expression | None) -> str | None:
    """The location a COPY names: a string, a stage (`@stage/path`), or a table holding either."""
    if isinstance(node, exp.Table) and not isinstance(node.this, exp.Identifier):
        node = node.this
    if isinstance(node, exp.Literal) and node.is_string:
        return node.name
    if isinstance(node, exp.Var) and node.name.startswith("@"):
        return node.name
    return None


class PathStatements:
    """The path statements of `StatementExtractor` (it provides `env`, `catalog`, `resolver`,
    `_query_with`, `_column_lineage` and the `Write` record)."""

    def _directory_insert(self, node: exp.Insert, directory: exp.Directory, query: exp.Expression | None):
        """`INSERT OVERWRITE [LOCAL] DIRECTORY '/p' … SELECT …`: the files at /p, columns named
        by the select list."""
        tid = path_id(directory.this.name, local=bool(directory.args.get("local")))
        if query is None:
            raise StatementError(f"INSERT OVERWRITE DIRECTORY {directory.this.name!r} has no query")
        ctx = ReadContext()
        relation = self._query_with(node, query, ctx)
        return Write(tid, self._column_lineage(tid, list(relation.names), relation), ctx)

    def _load_data(self, node: exp.LoadData):
        """Hive `LOAD DATA [LOCAL] INPATH '/p' [OVERWRITE] INTO TABLE t [PARTITION (…)]`."""
        inpath = node.args.get("inpath")
        if not isinstance(inpath, exp.Literal):
            raise StatementError("LOAD DATA without an INPATH string")
        target = node.this
        static = set()
        partition = node.args.get("partition") or (
            target.args.get("partition") if isinstance(target, exp.Table) else None
        )
        for item in partition.expressions if partition is not None else []:
            if isinstance(item, exp.EQ):
                static.add(item.this.name.lower())
        return self._file_load(
            target, [path_id(inpath.name, local=bool(node.args.get("local")))], None, static
        )

    def _file_load(
        self, target: exp.Expression, paths: list[str], columns: list[str] | None, static: set[str]
    ):
        """`target` loaded from the files at `paths`: each data column from the file column of
        the same name (the table's own schema, or the statement's column list)."""
        if not isinstance(target, exp.Table) or not target.name:
            raise StatementError(f"unsupported load target {target.sql(dialect=self.env.dialect)[:80]!r}")
        tid = table_id(target, self.env.default_database, self.env.default_catalog)
        ctx = ReadContext()
        occurrences = []
        for path in paths:
            occurrence = Occurrence(path, frozenset())
            ctx.occurrences.append(occurrence)
            occurrences.append(occurrence)
        if columns is None:
            entry = self.catalog.get(tid)
            columns = entry.all_columns if entry is not None else None
        lineage: list[ColumnLineage] = []
        if columns is None:
            ctx.problem(
                f"{tid}: columns unknown without a catalog; only the files it is loaded from are known"
            )
        else:
            for name in columns:
                sources = (
                    []
                    if name in static
                    else [SourceColumn(column=ids.child(path, name), kind="direct") for path in paths]
                )
                lineage.append(ColumnLineage(target=ids.child(tid, name), sources=sources))
        if not paths:
            ctx.problem(f"{tid} is loaded from a location that is not named (STDIN, a parameter)")
        return Write(tid, lineage, ctx)

    def _copy(self, node: exp.Copy, statement: dict):
        """Postgres/Redshift `COPY t [(cols)] FROM|TO 'file'`, `COPY (query) TO 'file'`,
        Snowflake/T-SQL `COPY INTO t FROM 'location'|@stage` and `COPY INTO 'location'|@stage FROM
        t|(query)`."""
        target = node.this
        files = node.args.get("files") or []
        loading = bool(node.args.get("kind"))
        if loading and _location(target) is None:
            statement["kind"] = "load"
            columns = None
            if isinstance(target, exp.Schema):
                columns = [c.name.lower() for c in target.expressions]
                target = target.this
            locations = [_location(item) for item in files]
            for item in files:
                if isinstance(item, exp.Subquery):
                    # Snowflake `COPY INTO t FROM (SELECT $1, … FROM @stage)`: the stage is read
                    locations.extend(_location(table) for table in item.find_all(exp.Table))
            paths = [path_id(location) for location in dict.fromkeys(locations) if location is not None]
            return self._file_load(target, paths, columns, set())
        statement["kind"] = "unload"
        if loading:
            location, source = _location(target), files[0] if files else None
        else:
            location, source = (_location(files[0]) if files else None), target
        if source is None:
            raise StatementError("COPY: the copied table or query is not named")
        # `COPY t TO STDOUT`: the rows go to the client, as a SELECT's do
        return self._unload(path_id(location) if location is not None else "", source)

    def _unload(self, tid: str, source: exp.Expression):
        """The rows of `source` (a table or a query) written to the files `tid`."""
        ctx = ReadContext()
        if isinstance(source, exp.Subquery):
            source = source.this
        if isinstance(source, exp.Query):
            relation = self.resolver.query(source, ctx)
        elif isinstance(source, exp.Table | exp.Schema):
            table = source.this if isinstance(source, exp.Schema) else source
            scope = Scope()
            self.resolver._add_source(scope, table, ctx, {})
            relation = self.resolver._projections([exp.Star()], scope, ctx)
            if isinstance(source, exp.Schema):
                wanted = [c.name.lower() for c in source.expressions]
                found = {
                    name: contribs for name, contribs in zip(relation.names, relation.contribs, strict=False)
                }
                src = next(iter(scope.sources.values()))
                relation = Relation(
                    wanted,
                    [found.get(n) or self.resolver._source_column(src, n, ctx, n) for n in wanted],
                )
        else:
            raise StatementError(f"unsupported COPY source {source.sql(dialect=self.env.dialect)[:80]}")
        return Write(tid, self._column_lineage(tid, list(relation.names), relation), ctx)

    def reparse(self, text: str) -> exp.Expression | None:
        """A statement sqlglot could not parse, in a form it parses (Spark's `INSERT OVERWRITE
        DIRECTORY … USING fmt`); None when there is none. Never raises."""
        for keyword, pattern in (("EXPORT", _EXPORT), ("IMPORT", _IMPORT)):
            if pattern.match(text) is not None:
                # handled by `_export_import`, from the text
                return exp.Command(this=keyword, expression=exp.Literal.string(text))
        if self.env.dialect in VARIABLE_INTO_DIALECTS:
            return _without_mysql_into(text, self.env.dialect)
        rewritten = rewrite_directory_using(text)
        if rewritten is None:
            return None
        try:
            return sqlglot.parse_one(rewritten, read=self.env.dialect)
        except SqlglotError:
            return None

    def _export_import(self, keyword: str, text: str, statement: dict):
        """Hive `EXPORT TABLE t [PARTITION (…)] TO '/p'` writes the files from t (a copy: every
        column direct, the spec a filter); `IMPORT [TABLE t [PARTITION (…)]] FROM '/p'` writes t
        from them — the table the files were exported from when the statement names none and this
        script exported them."""
        dialect = self.env.dialect
        if keyword == "EXPORT":
            match = _EXPORT.match(text)
            statement["kind"] = "unload"
            source = exp.to_table(match["table"], dialect=dialect)
            tid = path_id(_unquote(match["path"]))
            partition = self._partition_items(match["spec"])
            write = self._copy_of(tid, source, None, partition, register=False)
            name = table_id(source, self.env.default_database, self.env.default_catalog)
            self.exported[tid] = (ids.name(name), self.catalog.get(name))
            return write
        match = _IMPORT.match(text)
        statement["kind"] = "load"
        path = path_id(_unquote(match["path"]))
        exported = self.exported.get(path)
        if match["table"] is not None:
            target = exp.to_table(match["table"], dialect=dialect)
        elif exported is not None:
            target = exp.to_table(exported[0], dialect=dialect)
        else:
            raise StatementError(
                f"IMPORT FROM {match['path']}: the table is named by the export's metadata, unknown here"
            )
        tid = table_id(target, self.env.default_database, self.env.default_catalog)
        if exported is not None and exported[1] is not None and self.catalog.get(tid) is None:
            self.catalog.put(tid, exported[1].model_copy(update={"name": tid}))
        static = {item.this.name.lower() for item in self._partition_items(match["spec"])}
        return self._file_load(target, [path], None, static)

    def _partition_items(self, spec: str | None) -> list[exp.EQ]:
        if not spec:
            return []
        parsed = sqlglot.parse_one(f"({spec})", read=self.env.dialect)
        items = parsed.expressions if isinstance(parsed, exp.Tuple) else [parsed.unnest()]
        return [item for item in items if isinstance(item, exp.EQ) and isinstance(item.this, exp.Column)]

    def _outfile(self, node: exp.Query):
        """MySQL `SELECT … INTO OUTFILE|DUMPFILE '/p' …`: the query's rows written to the file on
        the server, columns named by the select list."""
        location = outfile_of(node)
        query = node.copy()
        _first_select(query).set("into", None)
        return self._unload(path_id(location or ""), query)

    def _unload_command(self, text: str):
        """Redshift `UNLOAD ('select …') TO 's3://…'`: the query is a string literal."""
        match = _UNLOAD.match(text)
        if match is None:
            raise StatementError("UNLOAD: expected ('query') TO 'location'")
        query = sqlglot.parse_one(match[1].replace("''", "'"), read=self.env.dialect)
        return self._unload(path_id(match[2].replace("''", "'")), query)


# Hive's EXPORT / IMPORT, which sqlglot does not parse (see `reparse`).
_EXPORT = re.compile(
    r"\s*EXPORT\s+TABLE\s+(?P<table>[^\s(]+)\s*(?:PARTITION\s*\((?P<spec>[^)]*)\))?\s*"
    r"TO\s+(?P<path>'(?:[^']|'')*'|\"[^\"]*\")(?:\s+FOR\s+.*)?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_IMPORT = re.compile(
    r"\s*IMPORT\s+(?:(?:EXTERNAL\s+)?TABLE\s+(?P<table>[^\s(]+)\s*(?:PARTITION\s*\((?P<spec>[^)]*)\))?\s*)?"
    r"FROM\s+(?P<path>'(?:[^']|'')*'|\"[^\"]*\")(?:\s+LOCATION\s+(?:'(?:[^']|'')*'|\"[^\"]*\"))?\s*$",
    re.IGNORECASE | re.DOTALL,
)


#: Dialects where `SELECT … INTO name` fills variables and never creates a table.
VARIABLE_INTO_DIALECTS = frozenset({"mysql"})
# Where the clause after MySQL's `INTO` ends: the rest of the query, or its end.
_AFTER_INTO = frozenset(
    {"FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "WINDOW", "FOR", "LOCK", "UNION"}
)


def _first_select(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.SetOperation):
        node = node.this
    return node


def outfile_of(node: exp.Expression) -> str | None:
    """The file a MySQL `SELECT … INTO OUTFILE|DUMPFILE` writes, as `_without_mysql_into` marks it."""
    into = _first_select(node).args.get("into")
    target = into.this if isinstance(into, exp.Into) else None
    return target.name if isinstance(target, exp.Literal) and target.is_string else None


def _without_mysql_into(text: str, dialect: str) -> exp.Expression | None:
    """A MySQL SELECT whose INTO clause sqlglot does not parse — `INTO v1, v2`, `INTO OUTFILE '/p'
    [CHARACTER SET …] [FIELDS …] [LINES …]`, `INTO DUMPFILE '/p'`, or INTO after FROM … — as the
    query without it; for a file, the query marked with an `Into` of the file's path (`outfile_of`).
    None when there is no such clause or the rest does not parse."""
    try:
        tokens = sqlglot.tokenize(text, read=dialect)
    except SqlglotError:
        return None
    if not tokens or tokens[0].token_type not in (TokenType.SELECT, TokenType.WITH, TokenType.L_PAREN):
        return None
    depth, into = 0, None
    for k, token in enumerate(tokens):
        kind = token.token_type
        depth += (kind is TokenType.L_PAREN) - (kind is TokenType.R_PAREN)
        if depth == 0 and kind is TokenType.INTO:
            into = k
            break
    if into is None or into + 1 >= len(tokens):
        return None
    end, location = into + 1, None
    if tokens[end].text.upper() in ("OUTFILE", "DUMPFILE"):
        if end + 1 >= len(tokens) or tokens[end + 1].token_type is not TokenType.STRING:
            return None
        location = tokens[end + 1].text
        end += 2
    while end < len(tokens):
        token = tokens[end]
        if token.token_type is TokenType.SEMICOLON or (
            token.token_type not in (TokenType.STRING, TokenType.IDENTIFIER)
            and token.text.upper().split(" ")[0] in _AFTER_INTO
        ):
            break
        end += 1
    rest = text[: tokens[into].start] + (" " + text[tokens[end].start :] if end < len(tokens) else "")
    try:
        query = sqlglot.parse_one(rest, read=dialect)
    except SqlglotError:
        return None
    if not isinstance(query, exp.Query):
        return None
    if location is not None:
        _first_select(query).set("into", exp.Into(this=exp.Literal.string(location)))
    return query


def _unquote(text: str) -> str:
    return text[1:-1].replace("''", "'") if text[:1] == "'" else text[1:-1]


_DIRECTORY_USING = re.compile(
    r"\s*INSERT\s+OVERWRITE\s+(?P<local>LOCAL\s+)?DIRECTORY\s*(?P<path>'(?:[^']|'')*')?\s*USING\s+[\w.]+\s*",
    re.IGNORECASE,
)
_OPTIONS = re.compile(r"OPTIONS\s*\(", re.IGNORECASE)
_PATH_OPTION = re.compile(r"""(?:^|,)\s*['"`]?path['"`]?\s*=?\s*('(?:[^']|'')*')""", re.IGNORECASE)


def rewrite_directory_using(text: str) -> str | None:
    """Spark's `INSERT OVERWRITE [LOCAL] DIRECTORY ['/p'] USING fmt [OPTIONS (…, 'path' '/p')] query`,
    which sqlglot's Spark parser rejects, as the Hive form it parses (`… DIRECTORY '/p' query`);
    None for any other text, or when no path is named."""
    match = _DIRECTORY_USING.match(text)
    if match is None:
        return None
    rest = text[match.end() :]
    path = match["path"]
    options = _OPTIONS.match(rest)
    if options is not None:
        end = _closing_paren(rest, options.end())
        if end is None:
            return None
        if path is None:
            named = _PATH_OPTION.search(rest[options.end() : end])
            path = named[1] if named is not None else None
        rest = rest[end + 1 :]
    if path is None:
        return None
    return f"INSERT OVERWRITE {'LOCAL ' if match['local'] else ''}DIRECTORY {path} {rest.strip()}"


def _closing_paren(text: str, start: int) -> int | None:
    """Index of the `)` closing the parenthesis opened just before `start` (quotes respected)."""
    depth, quote = 1, None
    for position in range(start, len(text)):
        char = text[position]
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"`":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return position
    return None
