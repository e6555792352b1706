"""Lineage of one parsed statement: what it writes, from what, under which filters.

`StatementExtractor` keeps the script state that statements change: the
default database (`USE`), temporary views, tables created earlier in the
script (their schemas resolve later `SELECT *`), and the tables the script
wrote, which a later DROP or RENAME rewrites (`script_tables`). INSERT, CREATE
and SELECT INTO live here; UPDATE/DELETE/MERGE in `dml`, whole-table copies
(CLONE, SWAP, EXCHANGE PARTITION) in `copies`, files in `paths`.
"""

from __future__ import annotations

import re
from sys import intern

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from watershed.graph import ids
from watershed.graph.catalog import Catalog, CatalogColumn, CatalogTable
from watershed.graph.lineage import (
    ColumnLineage,
    Kind,
    Predicate,
    SourceColumn,
    StatementLineage,
    TableEdge,
    TableRead,
    WeakReference,
)
from watershed.ingest.copies import EXCHANGE, CopyStatements
from watershed.ingest.dates import DatePoint, intersect, window_days
from watershed.ingest.dml import DmlStatements
from watershed.ingest.errors import StatementError
from watershed.ingest.parse_rewrites import rewrite_for_parse
from watershed.ingest.paths import VARIABLE_INTO_DIALECTS, PathStatements, outfile_of
from watershed.ingest.resolve import (
    Occurrence,
    QueryResolver,
    ReadContext,
    Relation,
    ResolverEnv,
    Scope,
    Source,
    table_id,
    table_name,
)
from watershed.ingest.script_tables import Dropped, Renamed, TableEvent, apply_table_events
from watershed.ingest.scripting import NO_SEMICOLON_DIALECTS
from watershed.ingest.writes import Write, is_default, sources_of


class LayeredCatalog:
    """The task's catalog with the tables its own script creates laid over it."""

    def __init__(self, base: Catalog) -> None:
        self.base = base
        self.created: dict[str, CatalogTable] = {}
        #: tables the script dropped or renamed away (until it creates them again)
        self.gone: set[str] = set()

    def get(self, name: str) -> CatalogTable | None:
        found = self.created.get(name)
        if found is not None or name in self.gone:
            return found
        return self.base.tables.get(name)

    def drop(self, name: str) -> CatalogTable | None:
        entry = self.get(name)
        self.created.pop(name, None)
        self.gone.add(name)
        return entry

    def put(self, name: str, entry: CatalogTable) -> None:
        self.created[name] = entry
        self.gone.discard(name)


_COMMAND_KINDS = {"SET": "set", "USE": "use"}
# MySQL's `RENAME TABLE a TO b [, c TO d]`, which sqlglot keeps as a Command.
_RENAME_TABLES = re.compile(r"\s*TABLES?\s+(?P<pairs>.+?)\s*$", re.IGNORECASE | re.DOTALL)
# Commands named like a lineage statement that have none (T-SQL's statistics maintenance).
_NO_LINEAGE_COMMANDS = frozenset({"UPDATE STATISTICS"})
_LINEAGE_KEYWORDS = (
    "INSERT",
    "WITH",
    "SELECT",
    "FROM",
    "MERGE",
    "CREATE",
    "UPDATE",
    "DELETE",
    "COPY",
    "LOAD",
    "UPSERT",
)


class StatementExtractor(DmlStatements, CopyStatements, PathStatements):
    def __init__(
        self,
        catalog: Catalog,
        default_database: str,
        partition_columns: frozenset[str],
        sub_day_columns: frozenset[str],
        dialect: str,
        run_date: DatePoint | None,
        default_catalog: str = "spark_catalog",
        conditions_as_lineage: bool = False,
    ) -> None:
        self.catalog = LayeredCatalog(catalog)
        self.env = ResolverEnv(
            self.catalog,
            default_database,
            partition_columns,
            sub_day_columns,
            dialect,
            temp_views={},
            default_catalog=default_catalog,
            conditions_as_lineage=conditions_as_lineage,
        )
        self.resolver = QueryResolver(self.env)
        self.run_date = run_date
        #: the results returned so far: a DROP or RENAME of a table the script wrote rewrites
        #: them in place (`script_tables`), since the task's lineage is assembled from them
        self.results: list[StatementLineage] = []
        #: tables the script has written in their current incarnation, with the position in
        #: `results` of the first statement that wrote them
        self.written: dict[str, int] = {}
        #: files written by EXPORT TABLE: the table name and schema an IMPORT of them restores
        self.exported: dict[str, tuple[str, CatalogTable | None]] = {}
        #: session tables (T-SQL table variables and table-valued parameters, named `@t` by
        #: `script_bindings`): the statements that wrote each in its current declaration
        self.session_tables: dict[str, list[StatementLineage]] = {}

    # ---------------------------------------------------------------- entry

    def extract(self, node: exp.Expression, index: int, line: int) -> StatementLineage:
        statement: dict = {"index": index, "line": line, "kind": "command"}
        self.resolver.new_statement()
        if isinstance(node, exp.Insert):
            statement["kind"] = "insert"
            self._finish(statement, [self._insert(node, None)])
        elif isinstance(node, exp.MultitableInserts):
            statement["kind"] = "multi-insert"
            self._finish(
                statement,
                self._conditional_inserts(node)
                if any(isinstance(branch, exp.ConditionalInsert) for branch in node.expressions)
                else [
                    self._insert(insert, node.args.get("source"), node.args.get("with_"))
                    for insert in node.expressions
                ],
            )
        elif isinstance(node, exp.Create):
            self._create(node, statement)
        elif isinstance(node, exp.Merge):
            statement["kind"] = "merge"
            self._finish(statement, [self._merge(node)])
        elif isinstance(node, exp.Update):
            statement["kind"] = "update"
            self._finish(statement, [self._update(node)])
        elif isinstance(node, exp.Delete):
            statement["kind"] = "delete"
            self._finish(statement, self._delete(node))
        elif isinstance(node, exp.Query) and (into := _into(node, self.env.dialect)) is not None:
            self._select_into(node, into, statement)
        elif isinstance(node, exp.Query) and outfile_of(node) is not None:
            # MySQL `SELECT … INTO OUTFILE|DUMPFILE '/p'` (see `PathStatements.reparse`)
            statement["kind"] = "unload"
            self._finish(statement, [self._outfile(node)])
        elif isinstance(node, exp.Alter) and any(
            isinstance(a, exp.SwapTable) for a in node.args.get("actions") or []
        ):
            statement["kind"] = "alter"
            self._finish(statement, self._swap(node))
        elif isinstance(node, exp.Query):
            statement["kind"] = "select"
            ctx = ReadContext()
            self.resolver.query(node, ctx)
            self._finish(statement, [Write("", [], ctx)])
        elif isinstance(node, exp.Use):
            statement["kind"] = "use"
            database = node.this.name.lower()
            catalog = node.this.args.get("db") if isinstance(node.this, exp.Table) else None
            if catalog is not None and catalog.name.lower() != self.env.default_catalog:
                # `USE cat2.db2`: unqualified names now read as tables of db2 in cat2
                database = ids.qualify(catalog.name.lower(), database)
            self.env.default_database = database
        elif isinstance(node, exp.Set):
            statement["kind"] = "set"
        elif isinstance(node, exp.Drop):
            statement["kind"] = "ddl"
            if str(node.args.get("kind") or "").upper() in ("TABLE", "VIEW"):
                dropped = node.args.get("tables") or ([node.this] if node.this is not None else [])
                for table in dropped:
                    if isinstance(table, exp.Table):
                        self._drop(table, index)
        elif isinstance(node, exp.Alter) and any(
            isinstance(a, exp.AlterRename) for a in node.args.get("actions") or []
        ):
            statement["kind"] = "alter"
            rename = next(a for a in node.args["actions"] if isinstance(a, exp.AlterRename))
            write = self._rename(node.this, rename.this, index)
            if write is not None:
                self._finish(statement, [write])
        elif isinstance(node, exp.Alter) and str(node.args.get("kind") or "").upper() == "TABLE":
            statement["kind"] = "ddl"
            self._alter_columns(node)
        elif isinstance(node, exp.LoadData):
            statement["kind"] = "load"
            self._finish(statement, [self._load_data(node)])
        elif isinstance(node, exp.Copy):
            write = self._copy(node, statement)
            self._finish(statement, [write])
        elif isinstance(node, exp.Command) and str(node.this).upper() in ("EXPORT", "IMPORT"):
            text = node.expression.name if isinstance(node.expression, exp.Literal) else ""
            self._finish(statement, [self._export_import(str(node.this).upper(), text, statement)])
        elif isinstance(node, exp.Command) and str(node.this).upper() == "UNLOAD":
            statement["kind"] = "unload"
            self._finish(statement, [self._unload_command(_command_text(node))])
        elif isinstance(node, exp.Command) and str(node.this).upper() == "REPLACE":
            # MySQL `REPLACE [INTO] t …`: an INSERT whose rows replace those with the same key
            statement["kind"] = "insert"
            insert = sqlglot.parse_one(f"INSERT {_command_text(node)}", read=self.env.dialect)
            if not isinstance(insert, exp.Insert):
                raise StatementError("REPLACE: expected REPLACE [INTO] table … VALUES|SELECT …")
            self._finish(statement, [self._insert(insert, None)])
        elif isinstance(node, exp.Command) and str(node.this).upper() == "RENAME":
            statement["kind"] = "alter"
            self._rename_command(node, index, statement)
        elif isinstance(node, exp.Command):
            keyword = str(node.this).upper()
            statement["kind"] = _COMMAND_KINDS.get(keyword, "command")
            if keyword == "ALTER":
                exchange = EXCHANGE.match(str(node.expression or ""))
                if exchange is not None:
                    statement["kind"] = "alter"
                    self._finish(statement, [self._exchange(exchange)])
            if keyword.startswith(_LINEAGE_KEYWORDS) and keyword not in _NO_LINEAGE_COMMANDS:
                raise StatementError(
                    f"{keyword} statement uses syntax the {self.env.dialect} parser does not support"
                )
        else:
            statement["kind"] = "ddl"
        if isinstance(node, exp.Insert | exp.Update | exp.Merge | exp.Delete) and statement.get("writes"):
            self._output_into(node, statement)
        result = StatementLineage(**statement)
        if self.env.dialect in NO_SEMICOLON_DIALECTS:
            result = self._through_session_tables(result)
        for table in result.writes:
            self.written.setdefault(table, len(self.results))
        self.results.append(result)
        return result

    def reparse(self, text: str) -> exp.Expression | None:
        """A statement sqlglot could not parse, in a form it parses: a dialect's narrow rewrite
        (`parse_rewrites`), else the forms of `PathStatements.reparse`; None when there is none."""
        rewritten = rewrite_for_parse(text, self.env.dialect)
        if rewritten is not None:
            try:
                return sqlglot.parse_one(rewritten, read=self.env.dialect)
            except SqlglotError:
                pass
        return super().reparse(text)

    # -------------------------------------------------- script table changes

    def _drop(self, table: exp.Table, index: int) -> None:
        """A temporary view is forgotten; a table or view the script wrote is intermediate."""
        if table.args.get("db") is None and self.env.temp_views.pop(table.name.lower(), None) is not None:
            return
        tid = table_id(table, self.env.default_database, self.env.default_catalog)
        self.catalog.drop(tid)
        start = self.written.pop(tid, None)
        if start is not None:
            self._apply(start, Dropped(index, tid))

    def _alter_columns(self, node: exp.Alter) -> None:
        """ADD COLUMNS / ADD COLUMN / DROP COLUMN / RENAME COLUMN / CHANGE / REPLACE COLUMNS on a
        table whose schema is known: later statements see the new columns (no lineage)."""
        if not isinstance(node.this, exp.Table):
            return
        tid = table_id(node.this, self.env.default_database, self.env.default_catalog)
        entry = self.catalog.get(tid)
        if entry is None:
            return
        columns = list(entry.columns)
        for action in node.args.get("actions") or []:
            if isinstance(action, exp.Schema | exp.ReplaceColumns):
                added = [
                    CatalogColumn(name=c.name, type=_type_sql(c))
                    for c in action.expressions
                    if isinstance(c, exp.ColumnDef)
                ]
                columns = added if isinstance(action, exp.ReplaceColumns) else columns + added
            elif isinstance(action, exp.ColumnDef):
                columns.append(CatalogColumn(name=action.name, type=_type_sql(action)))
            elif isinstance(action, exp.Drop) and str(action.args.get("kind") or "").upper() == "COLUMN":
                gone = {c.name.lower() for c in action.args.get("tables") or []}
                columns = [c for c in columns if c.name.lower() not in gone]
            elif isinstance(action, exp.RenameColumn | exp.AlterColumn):
                old = action.this.name.lower()
                new = action.args.get("to") or action.args.get("rename_to")
                if new is not None:
                    columns = [
                        c.model_copy(update={"name": new.name}) if c.name.lower() == old else c
                        for c in columns
                    ]
        if columns != entry.columns:
            self.catalog.put(tid, entry.model_copy(update={"columns": columns}))

    def _output_into(self, node: exp.Expression, statement: dict) -> None:
        """T-SQL `OUTPUT inserted.c, deleted.d INTO @t [(cols)]`: the rows the statement wrote (or
        removed) go into the table variable, each `inserted.c`/`deleted.c` direct from the written
        table's column; anything else the clause computes has no source here."""
        returning = node.args.get("returning")
        if not isinstance(returning, exp.Returning):
            return
        into = returning.args.get("into")
        names: list[str] = []
        if isinstance(into, exp.Anonymous):  # `INTO @t (a, b)`
            names = [c.name.lower() for c in into.expressions]
            into = into.this
        if isinstance(into, exp.Identifier):
            into = exp.Table(this=into)
        if not (isinstance(into, exp.Table) and _is_session_table(into, self.env.dialect)):
            return
        tid = table_id(into, self.env.default_database, self.env.default_catalog)
        declared = self.catalog.get(tid)
        if not names and declared is not None:
            names = [c.name.lower() for c in declared.columns]  # filled in order, as INSERT does
        target = statement["writes"][0]
        for position, item in enumerate(returning.expressions):
            value = item.unalias()
            name = names[position] if position < len(names) else item.alias_or_name.lower()
            if isinstance(value, exp.Column) and isinstance(value.this, exp.Star):
                statement["unresolved"].append(f"OUTPUT {value.sql()} INTO {into.name}: columns not listed")
                continue
            kind: Kind = "direct" if isinstance(value, exp.Column) else "expression"
            written = dict.fromkeys(
                column.name.lower()
                for column in value.find_all(exp.Column)
                if column.table.lower() in ("inserted", "deleted")
            )
            sources = [SourceColumn(column=ids.child(target, c), kind=kind) for c in written]
            statement["columns"].append(ColumnLineage(target=ids.child(tid, name), sources=sources))
        statement["writes"].append(tid)
        statement["table_edges"].append(TableEdge(source=target, target=tid))

    def _through_session_tables(self, result: StatementLineage) -> StatementLineage:
        """The statement with the session tables it touches folded away, as a table the script
        drops right after is: their writers' sources reach its targets. Each writer is kept as
        extracted (with the other session tables folded) for the next statement reading it."""
        touched = [
            tid
            for tid in dict.fromkeys([*result.writes, *(read.table for read in result.reads)])
            if ids.split_last(tid)[1].startswith(_SESSION_PREFIXES)
        ]
        if not touched:
            return result
        for tid in touched:
            # a table-valued parameter is never declared in the script: its rows come from the caller
            self.session_tables.setdefault(tid, [])

        def folded(statement: StatementLineage, tables: list[str]) -> StatementLineage:
            for tid in tables:
                writers = self.session_tables[tid]
                if not writers:
                    statement = _without_table(statement, tid)  # read before any row went in
                    continue
                event = Dropped(statement.index, tid)
                statement = apply_table_events([*writers, statement], [event])[-1]
            return statement

        for tid in touched:
            if tid in result.writes:
                self.session_tables[tid].append(folded(result, [t for t in touched if t != tid]))
        return folded(result, touched)

    def _apply(self, start: int, event: TableEvent) -> None:
        before = self.results[start:]
        for old, new in zip(before, apply_table_events(before, [event]), strict=True):
            if new is not old:
                for name in ("reads", "writes", "columns", "weak_references", "table_edges", "unresolved"):
                    setattr(old, name, getattr(new, name))

    def _rename_command(self, node: exp.Command, index: int, statement: dict) -> None:
        """MySQL `RENAME TABLE a TO b [, c TO d]`, which sqlglot keeps as a Command."""
        text = _command_text(node)
        match = _RENAME_TABLES.match(text)
        if match is None:
            raise StatementError("RENAME: expected TABLE a TO b [, c TO d]")
        writes = []
        for pair in match["pairs"].split(","):
            old, _, new = pair.strip().partition(" ")
            new = re.sub(r"(?i)^\s*TO\s+", "", new)
            dialect = self.env.dialect
            write = self._rename(
                exp.to_table(old, dialect=dialect), exp.to_table(new.strip(), dialect=dialect), index
            )
            if write is not None:
                writes.append(write)
        if writes:
            self._finish(statement, writes)

    def _rename(self, old: exp.Expression, new: exp.Expression, index: int) -> Write | None:
        """`ALTER TABLE|VIEW old RENAME TO new`: later statements see `new` with `old`'s schema.

        A table the script wrote is the same object under its new name: what the script said
        about `old` is said about `new` (`script_tables`). A table from before the script moves
        its rows: `new` is written as a copy of `old`. An unqualified new name stays in `old`'s
        database (Spark, Postgres)."""
        if not isinstance(old, exp.Table) or not isinstance(new, exp.Table):
            raise StatementError("ALTER … RENAME TO: unsupported names")
        if old.args.get("db") is None and new.args.get("db") is None:
            view = self.env.temp_views.pop(old.name.lower(), None)
            if view is not None:
                self.env.temp_views[new.name.lower()] = view
                return None
        old_id = table_id(old, self.env.default_database, self.env.default_catalog)
        if new.args.get("db") is None:
            new_id = ids.child(_database_of(old_id), new.name.lower())
        else:
            new_id = table_id(new, self.env.default_database, self.env.default_catalog)
        start = self.written.pop(old_id, None)
        if start is not None:
            entry = self.catalog.drop(old_id)
            if entry is not None:
                self.catalog.put(new_id, entry.model_copy(update={"name": new_id}))
            self.written[new_id] = min(start, self.written.get(new_id, start))
            self._apply(start, Renamed(index, old_id, new_id))
            return None
        write = self._copy_of(new_id, old)
        self.catalog.drop(old_id)
        return write

    # --------------------------------------------------------------- writes

    def _insert(
        self, node: exp.Insert, shared_source: exp.Expression | None, shared_with: exp.With | None = None
    ) -> Write:
        target = node.this
        explicit: list[str] | None = None
        if isinstance(target, exp.Schema):
            explicit = [c.name.lower() for c in target.expressions]
            target = target.this
        query = node.expression
        if shared_source is not None and isinstance(query, exp.Select) and query.args.get("from_") is None:
            source = shared_source.copy()
            # Hive's FROM-first form hangs the joins and lateral views on the source.
            for arg in ("joins", "laterals"):
                attached = source.args.get(arg)
                if attached:
                    source.set(arg, None)
                    query.set(arg, list(attached) + list(query.args.get(arg) or []))
            query.set("from_", exp.From(this=source))
        if isinstance(target, exp.Directory):
            return self._directory_insert(node, target, query)
        if not isinstance(target, exp.Table):
            raise StatementError(
                f"INSERT into unsupported target {target.sql(dialect=self.env.dialect)[:80]}"
            )
        tid = table_id(target, self.env.default_database, self.env.default_catalog)
        static: dict[str, exp.Expression] = {}
        dynamic: list[str] = []
        partition = target.args.get("partition")
        if partition is not None:
            for item in partition.expressions:
                if isinstance(item, exp.EQ):
                    static[item.this.name.lower()] = item.expression
                else:
                    dynamic.append(item.name.lower())
        if query is None:
            raise StatementError(f"INSERT into {tid} has no query or VALUES")
        if isinstance(query, exp.Select) and not query.expressions:
            raise StatementError(f"INSERT into {tid}: the SELECT list is empty")
        ctx = ReadContext()
        relation = self._query_with(node, query, ctx, shared_with)
        names = self._target_columns(tid, relation, explicit, static, dynamic, partition is not None, ctx)
        columns = self._column_lineage(tid, names, relation)
        columns.extend(ColumnLineage(target=ids.child(tid, name), sources=[]) for name in static)
        conflict = node.args.get("conflict")
        if isinstance(conflict, exp.OnConflict) and conflict.expressions:
            self._upsert(conflict, target, tid, names, relation, query, columns, ctx)
        return Write(tid, columns, ctx)

    def _upsert(
        self,
        conflict: exp.OnConflict,
        target: exp.Table,
        tid: str,
        names: list[str],
        relation: Relation,
        query: exp.Expression,
        columns: list[ColumnLineage],
        ctx: ReadContext,
    ) -> None:
        """Postgres `ON CONFLICT (k) DO UPDATE SET c = EXCLUDED.c [WHERE …]`, MySQL `ON DUPLICATE
        KEY UPDATE c = VALUES(c)` / `= new.c`: the assignments write target columns too. The
        proposed row (`EXCLUDED`, `VALUES(c)`, the VALUES alias) is the insert's own row; the
        target's columns are matched, not read; the conflict keys are `join` and the WHERE
        `condition` weak references."""
        entry = self.catalog.get(tid)
        # Unqualified names are the target's columns first, then the query's own (MySQL's
        # `… SELECT * FROM (…) AS dt ON DUPLICATE KEY UPDATE b = b + c`): the target in an inner
        # scope, the proposed row and the query in its parent.
        rows = Scope()
        proposed = Relation(
            list(names), [relation.contribs[i] for i in range(min(len(names), len(relation.contribs)))]
        )
        values_alias = query.args.get("alias") if isinstance(query, exp.Values) else None
        for alias in ("excluded", values_alias.name.lower() if values_alias is not None else ""):
            if alias:
                rows.add(alias, Source(alias, relation=proposed))
        if isinstance(query, exp.Query) and not isinstance(query, exp.Values):
            rows.add("_query", Source("_query", relation=relation))
        scope = Scope(parent=rows)
        target_alias = (target.alias or target.name).lower()
        source = Source(target_alias, table=tid, columns=entry.all_columns if entry is not None else None)
        if entry is not None:
            source._column_set = entry.column_set
        scope.add(target_alias, source)
        for key in conflict.args.get("conflict_keys") or []:
            self.resolver.weak(key, scope, ctx, "join")
        where = conflict.args.get("where")
        if where is not None:
            self.resolver.weak(where.this, scope, ctx, "condition")
        by_target = {column.target: column for column in columns}
        for assignment in conflict.expressions:
            if not isinstance(assignment, exp.EQ):
                continue
            value = assignment.expression.transform(_values_function_as_excluded)
            out: list = []
            if not is_default(value):
                self.resolver.value(value, scope, ctx, 0, (), None, out)
            column_id = ids.child(tid, assignment.this.name.lower())
            sources = sources_of(out)
            existing = by_target.get(column_id)
            if existing is None:
                by_target[column_id] = ColumnLineage(target=column_id, sources=sources)
                columns.append(by_target[column_id])
            else:
                known = {(s.column, s.key, s.kind, tuple(s.functions)) for s in existing.sources}
                existing.sources.extend(
                    s for s in sources if (s.column, s.key, s.kind, tuple(s.functions)) not in known
                )

    def _conditional_inserts(self, node: exp.MultitableInserts) -> list[Write]:
        """Snowflake's `INSERT ALL|FIRST [WHEN cond THEN] INTO … [ELSE INTO …] SELECT …`: each INTO
        with the conditions that decide its rows (its WHEN's; every WHEN's for ELSE)."""
        branches = [b for b in node.expressions if isinstance(b, exp.ConditionalInsert)]
        conditions: list[exp.Expression] = [
            c for b in branches if (c := b.args.get("expression")) is not None
        ]
        writes = []
        current: list[exp.Expression] = []
        for branch in branches:
            condition = branch.args.get("expression")
            if branch.args.get("else_"):
                current = conditions
            elif condition is not None:
                current = [condition]
            # else: sqlglot keeps a WHEN's condition on its first INTO only; the next ones share it
            writes.append(self._conditional_insert(branch, node, current))
        return writes

    def _conditional_insert(
        self, branch: exp.ConditionalInsert, node: exp.MultitableInserts, conditions: list[exp.Expression]
    ) -> Write:
        """One `INTO t [(cols)] [VALUES (…)]`: the VALUES (else the query's columns, in order)
        name the query's columns; the conditions are `condition` weak references of t."""
        insert = branch.this
        target = insert.this
        explicit = None
        if isinstance(target, exp.Schema):
            explicit = [c.name.lower() for c in target.expressions]
            target = target.this
        if not isinstance(target, exp.Table):
            raise StatementError(
                f"INSERT ALL into unsupported target {target.sql(dialect=self.env.dialect)[:80]}"
            )
        tid = table_id(target, self.env.default_database, self.env.default_catalog)
        ctx = ReadContext()
        source = node.args.get("source")
        query = source.this if isinstance(source, exp.Subquery) else source
        if not isinstance(query, exp.Expression):
            raise StatementError("INSERT ALL/FIRST without a source query")
        relation = self._query_with(node, query, ctx)
        scope = Scope()
        scope.add("_source", Source("_source", relation=relation))
        for condition in conditions:
            self.resolver.weak(condition, scope, ctx, "condition")
        values = insert.expression
        if isinstance(values, exp.Values) and values.expressions:
            row = values.expressions[0]
            items = row.expressions if isinstance(row, exp.Tuple) else [row]
            contribs: list[list] = []
            for item in items:
                out: list = []
                if not isinstance(item, exp.Literal | exp.Null | exp.Boolean) and not is_default(item):
                    self.resolver.value(item, scope, ctx, 0, (), None, out)
                contribs.append(out)
            relation = Relation([f"col{i + 1}" for i in range(len(items))], contribs)
        names = self._target_columns(tid, relation, explicit, {}, [], False, ctx)
        return Write(tid, self._column_lineage(tid, names, relation), ctx)

    def _query_with(
        self,
        holder: exp.Expression,
        query: exp.Expression,
        ctx: ReadContext,
        shared_with: exp.With | None = None,
    ) -> Relation:
        ctes: dict[str, exp.CTE] | None = None
        for with_ in (shared_with, holder.args.get("with_")):
            if with_ is not None:
                ctes = {**(ctes or {}), **{cte.alias_or_name.lower(): cte for cte in with_.expressions}}
        if isinstance(query, exp.Values):
            return self._values(query, ctx, ctes or {})
        return self.resolver.query(query, ctx, ctes)

    def _values(self, values: exp.Values, ctx: ReadContext, ctes: dict[str, exp.CTE]) -> Relation:
        """`VALUES (…), (…)` written into a table: each position's sources over every row, so a
        scalar subquery (`VALUES ((SELECT max(a) FROM s), 1)`) is lineage; a literal has none."""
        scope = Scope(ctes=ctes)
        contribs: list[list] = []
        for row in values.expressions:
            items = row.expressions if isinstance(row, exp.Tuple) else [row]
            if contribs and len(items) != len(contribs):
                ctx.problem(f"VALUES rows have {len(contribs)} and {len(items)} columns")
            for position, item in enumerate(items):
                if position == len(contribs):
                    contribs.append([])
                if not isinstance(item, exp.Literal | exp.Null | exp.Boolean) and not is_default(item):
                    self.resolver.value(item, scope, ctx, 0, (), None, contribs[position])
        return self.resolver._renamed(
            Relation([f"col{i + 1}" for i in range(len(contribs))], contribs), values
        )

    def _target_columns(
        self,
        tid: str,
        relation: Relation,
        explicit: list[str] | None,
        static: dict[str, exp.Expression],
        dynamic: list[str],
        has_partition_clause: bool,
        ctx: ReadContext,
    ) -> list[str]:
        entry = self.catalog.get(tid)
        if explicit is not None:
            names = explicit + [d for d in dynamic if d not in explicit]
        elif entry is not None:
            data = [c.name for c in entry.columns]
            if has_partition_clause:
                names = data + dynamic
            else:
                names = data + entry.partition_column_names
        else:
            names = list(relation.names)
            if dynamic and len(names) >= len(dynamic):
                names[len(names) - len(dynamic) :] = dynamic
            return names
        if len(names) != len(relation.names) and not relation.passthrough:
            ctx.problem(
                f"INSERT into {tid}: the query yields {len(relation.names)} columns for {len(names)} target columns"
            )
        return names

    def _column_lineage(self, tid: str, names: list[str], relation: Relation) -> list[ColumnLineage]:
        columns: list[ColumnLineage] = []
        for position, name in enumerate(names):
            if position >= len(relation.contribs):
                break
            columns.append(
                ColumnLineage(target=ids.child(tid, name), sources=sources_of(relation.contribs[position]))
            )
        return columns

    def _create(self, node: exp.Create, statement: dict) -> None:
        kind = str(node.args.get("kind") or "").upper()
        target = node.this
        declared: list[str] | None = None
        schema_defs: list[exp.ColumnDef] = []
        like_in_schema = None
        if isinstance(target, exp.Schema):
            schema_defs = [c for c in target.expressions if isinstance(c, exp.ColumnDef)]
            # Postgres `CREATE TABLE t (LIKE s)`: the column list copies s's
            like_in_schema = next((c for c in target.expressions if isinstance(c, exp.LikeProperty)), None)
            declared = [
                c.name.lower() for c in target.expressions if not isinstance(c, exp.LikeProperty)
            ] or None
            target = target.this
        if not isinstance(target, exp.Table) or kind not in ("TABLE", "VIEW"):
            statement["kind"] = "ddl"
            return
        properties = node.args.get("properties")
        temporary = properties is not None and any(
            isinstance(p, exp.TemporaryProperty) for p in properties.expressions
        )
        query = node.expression
        name = target.name.lower()
        if temporary and query is not None:
            statement["kind"] = "temporary-view"
            if declared:
                query = exp.Subquery(
                    this=query, alias=exp.TableAlias(columns=[exp.to_identifier(c) for c in declared])
                )
            self.env.temp_views[name] = (query, self.env.default_database)
            # Resolve once now so that errors surface on the defining statement.
            probe = ReadContext()
            self.resolver.query(query, probe)
            statement["unresolved"] = list(probe.unresolved)
            return
        tid = table_id(target, self.env.default_database, self.env.default_catalog)
        if query is None and _is_session_table(target, self.env.dialect):
            self.session_tables[tid] = []  # declared anew: rows of an earlier batch are gone
        partitioned = _partitioned_by(properties)
        clone = node.args.get("clone")
        if query is None and isinstance(clone, exp.Clone) and isinstance(clone.this, exp.Table):
            statement["kind"] = "clone"
            self._finish(statement, [self._copy_of(tid, clone.this)])
            return
        if query is None:
            statement["kind"] = "ddl"
            if schema_defs or partitioned:
                self.catalog.put(
                    tid,
                    _table_entry(
                        tid, [CatalogColumn(name=c.name, type=_type_sql(c)) for c in schema_defs], partitioned
                    ),
                )
            like = like_in_schema or (
                properties
                and next((p for p in properties.expressions if isinstance(p, exp.LikeProperty)), None)
            )
            like_id = None
            if like is not None and isinstance(like.this, exp.Table):
                like_id = table_id(like.this, self.env.default_database, self.env.default_catalog)
                source = self.catalog.get(like_id)
                if source is not None:
                    self.catalog.put(tid, source.model_copy(update={"name": tid}))
            if temporary or _is_session_table(target, self.env.dialect):
                return  # lives only in the session: no table of the graph
            # A new, empty table: written, no column value. LIKE copies only the definition of
            # its source: a read of it, with no table edge and no column source.
            self._finish(statement, [Write(tid, [], ReadContext())])
            if like_id is not None:
                statement["reads"] = [TableRead(table=like_id)]
            return
        statement["kind"] = "create-view" if kind == "VIEW" else "create-table-as"
        if kind == "VIEW":
            statement["view_sql"] = _view_sql(
                node, query, declared, self.env.dialect, self.env.default_database
            )
        ctx = ReadContext()
        relation = self._query_with(node, query, ctx)
        names = declared or list(relation.names)
        if len(names) < len(relation.names):
            names = names + relation.names[len(names) :]
        if relation.passthrough and not declared:
            # `SELECT *` over a table of unknown columns: the schema is not known either
            self.catalog.drop(tid)
        else:
            self.catalog.put(
                tid,
                _table_entry(tid, [CatalogColumn(name=n) for n in names], partitioned),
            )
        self._finish(statement, [Write(tid, self._column_lineage(tid, names, relation), ctx)])

    def _select_into(self, node: exp.Expression, into: exp.Into, statement: dict) -> None:
        """`SELECT … INTO t FROM …` (T-SQL, Postgres) creates `t` as CREATE TABLE AS would;
        `INTO TEMP t` and T-SQL's `#t` are temporary, as a temporary view."""
        target = into.this
        if not isinstance(target, exp.Table):
            raise StatementError(f"SELECT INTO {into.sql(dialect=self.env.dialect)[:80]}: unsupported target")
        name = table_name(target)
        if into.args.get("temporary") or name.startswith("#"):
            statement["kind"] = "temporary-view"
            self.env.temp_views[name] = (node, self.env.default_database)
            probe = ReadContext()
            self.resolver.query(node, probe)
            statement["unresolved"] = list(probe.unresolved)
            return
        tid = table_id(target, self.env.default_database, self.env.default_catalog)
        statement["kind"] = "create-table-as"
        ctx = ReadContext()
        relation = self._query_with(node, node, ctx)
        self.catalog.put(tid, CatalogTable(name=tid, columns=[CatalogColumn(name=n) for n in relation.names]))
        self._finish(statement, [Write(tid, self._column_lineage(tid, list(relation.names), relation), ctx)])

    # ------------------------------------------------------------- assembly

    def _finish(self, statement: dict, writes: list[Write]) -> None:
        """Fill the statement draft from its writes: reads merged per table, weak refs per target."""
        reads: dict[str, tuple[dict[str, Predicate], list[str], list[str]]] = {}
        windows: dict[str, int | None] = {}
        written: list[str] = []
        columns: list[ColumnLineage] = []
        weak: dict[tuple[str, str, str], None] = {}
        unresolved: dict[str, None] = {}
        edges: dict[tuple[str, str], None] = {}
        for write in writes:
            if write.table and write.table not in written:
                written.append(write.table)
            columns.extend(write.columns)
            unresolved.update(write.ctx.unresolved)
            for occurrence in write.ctx.occurrences:
                self._merge_read(reads, windows, occurrence)
                if write.table:
                    edges[(occurrence.table, write.table)] = None
            if write.table:
                for column_id, role in write.ctx.weak:
                    weak[(column_id, role, write.table)] = None
        statement["reads"] = [
            TableRead(
                table=table,
                predicates=list(predicates.values()),
                partition_window_days=windows[table],
                partition_columns=partition_columns,
                unparsed_partition_predicates=unparsed,
            )
            for table, (predicates, partition_columns, unparsed) in reads.items()
        ]
        statement["writes"] = written
        statement["columns"] = columns
        statement["weak_references"] = [
            # the resolver's roles are the Role names
            WeakReference(column=intern(c), role=r, target_table=t)  # type: ignore[arg-type]
            for c, r, t in weak
        ]
        statement["unresolved"] = list(unresolved)
        statement["table_edges"] = [TableEdge(source=s, target=t) for s, t in edges]

    def _merge_read(
        self,
        reads: dict[str, tuple[dict[str, Predicate], list[str], list[str]]],
        windows: dict[str, int | None],
        occurrence: Occurrence,
    ) -> None:
        table = occurrence.table
        entry = reads.get(table)
        if entry is None:
            entry = reads[table] = ({}, [], [])
        predicates, partition_columns, unparsed = entry
        if occurrence.unparsed:
            unparsed.extend(text for text in occurrence.unparsed if text not in unparsed)
        for column, op, values, text in occurrence.predicates:
            if text not in predicates:
                predicates[text] = Predicate(column=column, op=op, values=values, text=text)
                if column in occurrence.partition_columns and column not in partition_columns:
                    partition_columns.append(column)
        window = self._window(occurrence)
        if table not in windows:
            windows[table] = window
            return
        known = windows[table]
        if window is None or known is None:
            windows[table] = None
        elif window > known:
            windows[table] = window

    def _window(self, occurrence: Occurrence) -> int | None:
        ranges = [r for r in occurrence.ranges if r is not None]
        if not ranges or len(ranges) != len(occurrence.ranges):
            return None
        return window_days(intersect(ranges), self.run_date)


def _values_function_as_excluded(node: exp.Expression) -> exp.Expression:
    """MySQL's `VALUES(c)` in ON DUPLICATE KEY UPDATE: the proposed row's c, as `excluded.c`."""
    if isinstance(node, exp.Anonymous) and str(node.this).upper() == "VALUES" and len(node.expressions) == 1:
        return exp.column(node.expressions[0].name, table="excluded")
    return node


#: T-SQL names of tables that live only in the session: a table variable as `script_bindings`
#: names it (`[@t]`), a temporary `#t` and a global temporary `##t` table
_SESSION_PREFIXES = ("@", "#")


def _view_sql(
    node: exp.Create, query: exp.Expression, declared: list[str] | None, dialect: str, database: str
) -> str:
    """A persistent view's query in `dialect`, with the view's own column names when it declares
    them, so the loader can store it and query-time analysis can read through it. Unqualified
    tables are qualified with the database current at creation, as the engine resolves them."""
    query = query.copy()
    with_ = node.args.get("with_")
    if with_ is not None and not query.args.get("with_"):
        query.set("with_", with_.copy())
    ctes = {cte.alias_or_name.lower() for cte in query.find_all(exp.CTE)}
    for table in query.find_all(exp.Table):
        if (
            table.args.get("db") is None
            and isinstance(table.this, exp.Identifier)
            and table.name.lower() not in ctes
            and not table.name.startswith("#")
        ):
            table.set("db", exp.to_identifier(database))
    if declared:
        alias = exp.TableAlias(
            this=exp.to_identifier("_view"), columns=[exp.to_identifier(c) for c in declared]
        )
        query = exp.select("*").from_(exp.Subquery(this=query, alias=alias))
    return query.sql(dialect=dialect)


def _is_session_table(table: exp.Table, dialect: str) -> bool:
    """A T-SQL table variable or temporary table, declared by the script."""
    return dialect in NO_SEMICOLON_DIALECTS and table_name(table).startswith(_SESSION_PREFIXES)


def _without_table(statement: StatementLineage, table: str) -> StatementLineage:
    """The statement without what it read from an empty session table."""
    return statement.model_copy(
        update={
            "reads": [read for read in statement.reads if read.table != table],
            "columns": [
                ColumnLineage(
                    target=c.target, sources=[s for s in c.sources if ids.parent(s.column) != table]
                )
                for c in statement.columns
            ],
            "weak_references": [w for w in statement.weak_references if ids.parent(w.column) != table],
            "table_edges": [e for e in statement.table_edges if e.source != table],
        }
    )


def _database_of(table: str) -> str:
    return ids.split_last(table)[0]


def _into(node: exp.Expression, dialect: str) -> exp.Into | None:
    """The INTO clause of a query that creates a table: on its first SELECT (`SELECT * INTO t
    FROM a UNION ALL …`). MySQL has no such form: there `INTO v` fills variables."""
    while isinstance(node, exp.SetOperation):
        node = node.this
    into = node.args.get("into") if isinstance(node, exp.Select) else None
    if dialect in VARIABLE_INTO_DIALECTS:
        target = into.this if isinstance(into, exp.Into) else None
        if isinstance(target, exp.Table) and target.name.upper() in ("OUTFILE", "DUMPFILE"):
            raise StatementError(f"SELECT … INTO {target.name.upper()} without a file name")
        return None
    # `INTO @var` / `INTO :var` (MySQL, embedded SQL) fills variables: a plain SELECT
    target = into.this if isinstance(into, exp.Into) else None
    return into if isinstance(target, exp.Table) and isinstance(target.this, exp.Identifier) else None


def _table_entry(tid: str, columns: list[CatalogColumn], partitioned: list[CatalogColumn]) -> CatalogTable:
    """A created table's schema. Spark's `PARTITIONED BY (p)` names columns of the column list
    (Hive's `PARTITIONED BY (p string)` declares new ones): those move to the end, as Spark
    orders a partitioned table's columns."""
    named = {c.name.lower(): c for c in columns}
    if not any(p.name.lower() in named for p in partitioned):
        return CatalogTable(name=tid, columns=columns, partitioned_by=partitioned)
    partition_names = {p.name.lower() for p in partitioned}
    return CatalogTable(
        name=tid,
        columns=[c for c in columns if c.name.lower() not in partition_names],
        partitioned_by=[named.get(p.name.lower(), p) for p in partitioned],
    )


def _partitioned_by(properties: exp.Properties | None) -> list[CatalogColumn]:
    if properties is None:
        return []
    for prop in properties.expressions:
        if isinstance(prop, exp.PartitionedByProperty) and isinstance(prop.this, exp.Schema):
            return [
                CatalogColumn(name=c.name, type=_type_sql(c) if isinstance(c, exp.ColumnDef) else "string")
                for c in prop.this.expressions
            ]
    return []


def _type_sql(column: exp.ColumnDef) -> str:
    kind = column.args.get("kind")
    return kind.sql(dialect="hive").lower() if kind is not None else "string"


def _command_text(node: exp.Command) -> str:
    """What follows an opaque command's keyword, as written (`UNLOAD ('…') TO …`, `REPLACE INTO …`)."""
    if isinstance(node.expression, exp.Literal):
        return node.expression.name
    return str(node.expression or "")
