"""Lineage of one parsed statement: what it writes, from what, under which filters.

`StatementExtractor` keeps the script state that statements change: the
default database (`USE`), temporary views, and tables created earlier in the
script (their schemas resolve later `SELECT *`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from sys import intern

import sqlglot
from sqlglot import exp

from watershed.graph import ids
from watershed.graph.catalog import Catalog, CatalogColumn, CatalogTable
from watershed.graph.lineage import (
    ColumnLineage,
    Predicate,
    SourceColumn,
    StatementLineage,
    TableEdge,
    TableRead,
    WeakReference,
)
from watershed.ingest.dates import DatePoint, intersect, window_days
from watershed.ingest.errors import StatementError
from watershed.ingest.paths import PathStatements
from watershed.ingest.resolve import (
    KINDS,
    Occurrence,
    QueryResolver,
    ReadContext,
    Relation,
    ResolverEnv,
    Scope,
    Source,
    table_id,
)
from watershed.ingest.script_tables import Dropped, Renamed, TableEvent, apply_table_events


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


@dataclass(slots=True)
class Write:
    """One INSERT branch: the table written, its columns, and what it read."""

    table: str
    columns: list[ColumnLineage]
    ctx: ReadContext
    extra_reads: list[str] = field(default_factory=list)


_COMMAND_KINDS = {"SET": "set", "USE": "use"}
# Hive's `ALTER TABLE dest EXCHANGE PARTITION (spec) WITH TABLE src`, which sqlglot keeps as a Command.
_RENAME_TABLES = re.compile(r"\s*TABLES?\s+(?P<pairs>.+?)\s*$", re.IGNORECASE | re.DOTALL)
_EXCHANGE = re.compile(
    r"\s*TABLE\s+(?P<dest>[^\s(]+)\s+EXCHANGE\s+PARTITION\s*\((?P<spec>.*)\)\s*WITH\s+TABLE\s+(?P<src>[^\s;]+)\s*$",
    re.IGNORECASE | re.DOTALL,
)
_LINEAGE_KEYWORDS = ("INSERT", "WITH", "SELECT", "FROM", "MERGE", "CREATE")


class StatementExtractor(PathStatements):
    def __init__(
        self,
        catalog: Catalog,
        default_database: str,
        partition_columns: frozenset[str],
        sub_day_columns: frozenset[str],
        dialect: str,
        run_date: DatePoint | None,
        default_catalog: str = "spark_catalog",
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
        )
        self.resolver = QueryResolver(self.env)
        self.run_date = run_date
        #: the results returned so far: a DROP or RENAME of a table the script wrote rewrites
        #: them in place (`script_tables`), since the task's lineage is assembled from them
        self.results: list[StatementLineage] = []
        #: tables the script has written in their current incarnation, with the position in
        #: `results` of the first statement that wrote them
        self.written: dict[str, int] = {}

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
                [
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
            self._finish(statement, [self._delete(node)])
        elif isinstance(node, exp.Query) and _into(node) is not None:
            self._select_into(node, statement)
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
        elif isinstance(node, exp.LoadData):
            statement["kind"] = "load"
            self._finish(statement, [self._load_data(node)])
        elif isinstance(node, exp.Copy):
            write = self._copy(node, statement)
            self._finish(statement, [write])
        elif isinstance(node, exp.Command) and str(node.this).upper() == "UNLOAD":
            statement["kind"] = "unload"
            text = (
                node.expression.name
                if isinstance(node.expression, exp.Literal)
                else str(node.expression or "")
            )
            self._finish(statement, [self._unload_command(text)])
        elif isinstance(node, exp.Command) and str(node.this).upper() == "RENAME":
            statement["kind"] = "alter"
            self._rename_command(node, index, statement)
        elif isinstance(node, exp.Command):
            keyword = str(node.this).upper()
            statement["kind"] = _COMMAND_KINDS.get(keyword, "command")
            if keyword == "ALTER":
                exchange = _EXCHANGE.match(str(node.expression or ""))
                if exchange is not None:
                    statement["kind"] = "alter"
                    self._finish(statement, [self._exchange(exchange)])
            if keyword.startswith(_LINEAGE_KEYWORDS):
                raise StatementError(
                    f"{keyword} statement uses syntax the {self.env.dialect} parser does not support"
                )
        else:
            statement["kind"] = "ddl"
        result = StatementLineage(**statement)
        for table in result.writes:
            self.written.setdefault(table, len(self.results))
        self.results.append(result)
        return result

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

    def _apply(self, start: int, event: TableEvent) -> None:
        before = self.results[start:]
        for old, new in zip(before, apply_table_events(before, [event]), strict=True):
            if new is not old:
                for name in ("reads", "writes", "columns", "weak_references", "table_edges", "unresolved"):
                    setattr(old, name, getattr(new, name))

    def _rename_command(self, node: exp.Command, index: int, statement: dict) -> None:
        """MySQL `RENAME TABLE a TO b [, c TO d]`, which sqlglot keeps as a Command."""
        text = (
            node.expression.name if isinstance(node.expression, exp.Literal) else str(node.expression or "")
        )
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
        return Write(tid, columns, ctx)

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
                if not isinstance(item, exp.Literal | exp.Null | exp.Boolean) and not _is_default(item):
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
                ColumnLineage(target=ids.child(tid, name), sources=_sources(relation.contribs[position]))
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
            if like is not None and isinstance(like.this, exp.Table):
                source = self.catalog.get(
                    table_id(like.this, self.env.default_database, self.env.default_catalog)
                )
                if source is not None:
                    self.catalog.put(tid, source.model_copy(update={"name": tid}))
            return
        statement["kind"] = "create-view" if kind == "VIEW" else "create-table-as"
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

    def _select_into(self, node: exp.Query, statement: dict) -> None:
        """`SELECT … INTO t FROM …` (T-SQL, Postgres) creates `t` as CREATE TABLE AS would;
        `INTO TEMP t` and T-SQL's `#t` are temporary, as a temporary view."""
        into = _into(node)
        target = into.this
        if not isinstance(target, exp.Table):
            raise StatementError(f"SELECT INTO {into.sql(dialect=self.env.dialect)[:80]}: unsupported target")
        name = target.name.lower()
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

    def _copy_of(
        self,
        tid: str,
        source: exp.Table,
        names: list[str] | None = None,
        partition: list[exp.EQ] | None = None,
        register: bool = True,
    ) -> Write:
        """`tid` becomes a copy of `source`: every column direct from the source column of the same
        name (`names`, else the source's columns; unknown without a catalog, and said so). Only
        the rows of `partition` (`col = value` items) are copied when it is given."""
        ctx = ReadContext()
        scope = Scope()
        self.resolver._add_source(scope, source, ctx, {})
        alias, src = next(iter(scope.sources.items()))
        if partition:
            condition = exp.and_(
                *(
                    exp.EQ(this=exp.column(i.this.name, table=alias), expression=i.expression)
                    for i in partition
                )
            )
            self.resolver.filters(condition, scope, ctx, "filter")
        if names is None:
            relation = self.resolver._projections([exp.Star()], scope, ctx)
            names = list(relation.names)
            contribs = relation.contribs
        else:
            contribs = [self.resolver._source_column(src, name, ctx, name) for name in names]
        entry = self.catalog.get(src.table) if src.table is not None else None
        if register and entry is not None:
            self.catalog.put(tid, entry.model_copy(update={"name": tid}))
        elif register and names:
            self.catalog.put(tid, CatalogTable(name=tid, columns=[CatalogColumn(name=n) for n in names]))
        columns = [
            ColumnLineage(target=ids.child(tid, name), sources=_sources(c))
            for name, c in zip(names, contribs, strict=False)
        ]
        return Write(tid, columns, ctx)

    def _swap(self, node: exp.Alter) -> list[Write]:
        """Snowflake `ALTER TABLE a SWAP WITH b`: the two tables exchange contents (and schemas),
        so each is written from the other."""
        first = node.this
        second = next(a for a in node.args["actions"] if isinstance(a, exp.SwapTable)).this
        if not isinstance(first, exp.Table) or not isinstance(second, exp.Table):
            raise StatementError("ALTER TABLE … SWAP WITH: unsupported table names")
        ids_ = [table_id(t, self.env.default_database, self.env.default_catalog) for t in (first, second)]
        entries = [self.catalog.get(tid) for tid in ids_]
        writes = [
            self._copy_of(ids_[0], second, register=False),
            self._copy_of(ids_[1], first, register=False),
        ]
        # Each now has the other's schema (or none known).
        for tid, entry in zip(ids_, reversed(entries), strict=True):
            if entry is not None:
                self.catalog.put(tid, entry.model_copy(update={"name": tid}))
            else:
                self.catalog.drop(tid)
        return writes

    def _exchange(self, match: re.Match) -> Write:
        """Hive `ALTER TABLE dest EXCHANGE PARTITION (spec) WITH TABLE src`: the partition's rows
        move from src into dest, every column direct from src's column of the same name; the spec
        is a filter on src (its predicates give the read's partition window)."""
        dialect = self.env.dialect
        dest = exp.to_table(match["dest"], dialect=dialect)
        source = exp.to_table(match["src"], dialect=dialect)
        tid = table_id(dest, self.env.default_database, self.env.default_catalog)
        entry = self.catalog.get(tid)
        spec = sqlglot.parse_one(f"({match['spec']})", read=dialect)
        items = spec.expressions if isinstance(spec, exp.Tuple) else [spec.unnest()]
        partition = [item for item in items if isinstance(item, exp.EQ) and isinstance(item.this, exp.Column)]
        write = self._copy_of(tid, source, entry.all_columns if entry is not None else None, partition)
        if len(partition) != len(items):
            write.ctx.problem(f"EXCHANGE PARTITION ({match['spec'].strip()}): unsupported partition spec")
        return write

    def _merge(self, node: exp.Merge) -> Write:
        target = node.this
        source = node.args.get("using")
        tid = table_id(target, self.env.default_database, self.env.default_catalog)
        ctx = ReadContext()
        resolver = self.resolver
        with_ = node.args.get("with_")
        ctes = {cte.alias_or_name.lower(): cte for cte in with_.expressions} if with_ is not None else {}
        scope = Scope(ctes=ctes)
        target_alias = (target.alias or target.name).lower()
        entry = self.catalog.get(tid)
        target_columns = entry.all_columns if entry is not None else None
        # The target is matched against, not read as a value source: no occurrence.
        scope.add(target_alias, Source(target_alias, table=tid, columns=target_columns))
        if source is None:
            raise StatementError(f"MERGE into {tid} has no USING source")
        resolver._add_source(scope, source, ctx, ctes)
        # The USING item is the scope's one other source, whatever alias it got.
        src = next((v for k, v in scope.sources.items() if k != target_alias), None)
        on = node.args.get("on")
        if on is not None:
            resolver.filters(on, scope, ctx, "join")
        assigned: dict[str, list] = {}
        whens = node.args.get("whens")
        for when in whens.expressions if whens is not None else []:
            condition = when.args.get("condition")
            if condition is not None:
                resolver.weak(condition, scope, ctx, "condition")
            then = when.args.get("then")
            if isinstance(then, exp.Update):
                for assignment in then.expressions:
                    if isinstance(assignment, exp.Star):
                        self._merge_star(tid, src, target_columns, assignment, assigned, ctx)
                        continue
                    out: list = []
                    if not _is_default(assignment.expression):
                        resolver.value(assignment.expression, scope, ctx, 0, (), None, out)
                    assigned.setdefault(assignment.this.name.lower(), []).extend(out)
            elif isinstance(then, exp.Insert):
                columns = then.this.expressions if isinstance(then.this, exp.Tuple) else []
                values = then.expression.expressions if isinstance(then.expression, exp.Tuple) else []
                if values and not columns and then.this is None:
                    # INSERT VALUES without a column list fills the target's columns in order.
                    if target_columns is None:
                        ctx.problem(
                            f"MERGE into {tid}: INSERT VALUES without a column list needs the catalog"
                        )
                    columns = [exp.to_identifier(name) for name in (target_columns or [])]
                if isinstance(then.this, exp.Star):
                    self._merge_star(tid, src, target_columns, then.this, assigned, ctx)
                elif not columns and then.this is None and isinstance(then.expression, exp.Star):
                    self._merge_star(tid, src, target_columns, then.expression, assigned, ctx)
                elif isinstance(then.this, exp.Var) and then.this.name.upper() == "ROW":
                    # BigQuery `INSERT ROW`: the source row into the target's columns, by position.
                    self._merge_star(tid, src, target_columns, None, assigned, ctx, by_position=True)
                for column, value in zip(columns, values, strict=False):
                    out = []
                    if not _is_default(value):
                        resolver.value(value, scope, ctx, 0, (), None, out)
                    assigned.setdefault(column.name.lower(), []).extend(out)
            elif isinstance(then, exp.Var) and "*" in then.name:
                self._merge_star(tid, src, target_columns, None, assigned, ctx)
        columns = [
            ColumnLineage(target=ids.child(tid, name), sources=_sources(c)) for name, c in assigned.items()
        ]
        return Write(tid, columns, ctx)

    def _ctes(self, node: exp.Expression) -> dict[str, exp.CTE]:
        with_ = node.args.get("with_")
        return {cte.alias_or_name.lower(): cte for cte in with_.expressions} if with_ is not None else {}

    def _target_scope(
        self, target: exp.Expression, items: list[exp.Expression], ctx: ReadContext, ctes: dict[str, exp.CTE]
    ) -> tuple[str, Scope, list[exp.Join]]:
        """The scope of an UPDATE or DELETE: its target, matched against but not read, and its
        other tables (`FROM`, `USING`, joins), read. Returns the target's id, the scope and the
        joins whose conditions are still to be walked.

        T-SQL names the target by an alias its `FROM` defines (`UPDATE x … FROM dbo.t x`), and
        T-SQL and MySQL repeat the target in `FROM`/`JOIN`: that item is the target, not a read.
        """
        if not isinstance(target, exp.Table) or not isinstance(target.this, exp.Identifier):
            raise StatementError(f"unsupported target {target.sql(dialect=self.env.dialect)[:80]}")
        joins: list[exp.Join] = list(target.args.get("joins") or [])
        for item in items:
            joins.extend(item.args.get("joins") or [])
        candidates = [*items, *(join.this for join in joins)]
        target_table = target
        if target.args.get("db") is None and not target.alias:
            named = target.name.lower()
            for item in candidates:
                if isinstance(item, exp.Table) and item.alias and item.alias.lower() == named:
                    target_table = item
        tid = table_id(target_table, self.env.default_database, self.env.default_catalog)
        entry = self.catalog.get(tid)
        scope = Scope(ctes=ctes)
        aliases = {(target.alias or target.name).lower(), (target_table.alias or target_table.name).lower()}
        for alias in aliases:
            source = Source(alias, table=tid, columns=entry.all_columns if entry is not None else None)
            if entry is not None:
                source._column_set = entry.column_set
            scope.add(alias, source)
        for item in candidates:
            if isinstance(item, exp.Table) and (
                item is target_table
                or (
                    isinstance(item.this, exp.Identifier)
                    and table_id(item, self.env.default_database, self.env.default_catalog) == tid
                    and (item.alias or item.name).lower() in aliases | {ids.split(tid)[1]}
                )
            ):
                continue
            self.resolver._add_source(scope, item, ctx, ctes)
        return tid, scope, joins

    def _conditions(
        self, node: exp.Expression, joins: list[exp.Join], scope: Scope, ctx: ReadContext
    ) -> None:
        resolver = self.resolver
        for join in joins:
            on = join.args.get("on")
            if on is not None:
                resolver.filters(on, scope, ctx, "join")
            for ident in join.args.get("using") or []:
                resolver._using_column(ident.name.lower(), scope, ctx)
        where = node.args.get("where")
        if where is not None:
            resolver.filters(where.this, scope, ctx, "filter")
        order = node.args.get("order")
        if order is not None:
            for item in order.expressions:
                resolver.weak(item, scope, ctx, "order")

    def _update(self, node: exp.Update) -> Write:
        ctx = ReadContext()
        ctes = self._ctes(node)
        from_ = node.args.get("from_")
        items = [from_.this, *from_.expressions] if from_ is not None and from_.this is not None else []
        tid, scope, joins = self._target_scope(node.this, items, ctx, ctes)
        joins.extend(node.args.get("joins") or [])
        self._conditions(node, joins, scope, ctx)
        assigned: dict[str, list] = {}
        for assignment in node.expressions:
            if not isinstance(assignment, exp.EQ):
                ctx.problem(
                    f"UPDATE {tid}: unsupported assignment {assignment.sql(dialect=self.env.dialect)[:80]}"
                )
                continue
            columns = (
                assignment.this.expressions if isinstance(assignment.this, exp.Tuple) else [assignment.this]
            )
            value = assignment.expression
            values = value.expressions if isinstance(value, exp.Tuple) else None
            if values is None and len(columns) > 1:
                # `SET (a, b) = (SELECT x, y FROM …)`: the subquery's columns in order
                query = value.this if isinstance(value, exp.Subquery) else value
                relation = (
                    self.resolver.query(query, ctx, ctes, scope) if isinstance(query, exp.Query) else None
                )
                if relation is None:
                    ctx.problem(
                        f"UPDATE {tid}: unsupported assignment {assignment.sql(dialect=self.env.dialect)[:80]}"
                    )
                    continue
                for column, contribs in zip(columns, relation.contribs, strict=False):
                    assigned.setdefault(column.name.lower(), []).extend(contribs)
                continue
            for column, item in zip(columns, values or [value], strict=False):
                out: list = []
                if not _is_default(item):
                    self.resolver.value(item, scope, ctx, 0, (), None, out)
                assigned.setdefault(column.name.lower(), []).extend(out)
        columns = [
            ColumnLineage(target=ids.child(tid, name), sources=_sources(c)) for name, c in assigned.items()
        ]
        return Write(tid, columns, ctx)

    def _delete(self, node: exp.Delete) -> Write:
        ctx = ReadContext()
        ctes = self._ctes(node)
        target = node.this
        items = list(node.args.get("using") or [])
        # MySQL `DELETE a FROM a JOIN b …`: `tables` names what is deleted from, `this` the FROM
        named = node.args.get("tables") or []
        if named:
            # (T-SQL `DELETE t` names only the table: no FROM)
            items = [target, *items] if isinstance(target, exp.Expression) else items
            target = named[0]
            if len(named) > 1:
                ctx.problem(
                    f"DELETE from several tables: only {target.sql(dialect=self.env.dialect)} is written"
                )
        tid, scope, joins = self._target_scope(target, items, ctx, ctes)
        self._conditions(node, joins, scope, ctx)
        return Write(tid, [], ctx)

    def _merge_star(
        self,
        tid: str,
        src: Source | None,
        target_columns: list[str] | None,
        star: exp.Star | None,
        assigned: dict[str, list],
        ctx: ReadContext,
        by_position: bool = False,
    ) -> None:
        """`UPDATE SET *` / `INSERT *` [EXCEPT (…)]: every column of the target from the source
        column of the same name (Delta's rule; by position for BigQuery's `INSERT ROW`). Without
        the target's schema, the source's columns are the target's."""
        if src is None:
            ctx.problem(f"MERGE into {tid}: the USING source is not resolved")
            return
        excluded = {c.name.lower() for c in (star.args.get("except_") or [])} if star is not None else set()
        known = src.relation.names if src.relation is not None else src.columns
        if known is None and target_columns is None:
            ctx.problem(f"{src.table}.*: columns unknown without a catalog")
            return
        if by_position:
            if known is not None and target_columns is not None and len(known) != len(target_columns):
                ctx.problem(
                    f"MERGE into {tid}: INSERT ROW gives {len(known)} columns for {len(target_columns)}"
                )
            pairs = list(zip(target_columns or known or [], known or target_columns or [], strict=False))
        elif target_columns is None:
            pairs = [(name, name) for name in known or []]
        else:
            pairs = [(name, name) for name in target_columns]
            if known is not None:
                present = set(known)
                missing = [name for name in target_columns if name not in present and name not in excluded]
                if missing:
                    ctx.problem(f"MERGE into {tid}: * finds no source column for {', '.join(missing)}")
                pairs = [(name, name) for name in target_columns if name in present]
        for target, name in pairs:
            if target in excluded:
                continue
            assigned.setdefault(target, []).extend(self.resolver._source_column(src, name, ctx, name))

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
            WeakReference(column=intern(c), role=r, target_table=t) for c, r, t in weak
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
        unparsed.extend(text for text in occurrence.unparsed if text not in unparsed)
        for column, op, values, text in occurrence.predicates:
            if text not in predicates:
                predicates[text] = Predicate(column=column, op=op, values=values, text=text)
                if column in occurrence.partition_columns and column not in partition_columns:
                    partition_columns.append(column)
        window = self._window(occurrence)
        if table not in windows:
            windows[table] = window
        elif window is None or windows[table] is None:
            windows[table] = None
        elif window > windows[table]:
            windows[table] = window

    def _window(self, occurrence: Occurrence) -> int | None:
        if not occurrence.ranges or any(r is None for r in occurrence.ranges):
            return None
        return window_days(intersect(occurrence.ranges), self.run_date)


def _is_default(node: exp.Expression) -> bool:
    """`DEFAULT` as an assigned or inserted value (sqlglot reads it as a column or a variable)."""
    if isinstance(node, exp.Column) and node.table == "" and not node.this.quoted:
        return node.name.upper() == "DEFAULT"
    return isinstance(node, exp.Var) and node.name.upper() == "DEFAULT"


def _database_of(table: str) -> str:
    return ids.split_last(table)[0]


def _into(node: exp.Expression) -> exp.Into | None:
    """The INTO clause of a query: on its first SELECT (`SELECT * INTO t FROM a UNION ALL …`)."""
    while isinstance(node, exp.SetOperation):
        node = node.this
    into = node.args.get("into") if isinstance(node, exp.Select) else None
    # `INTO @var` / `INTO :var` (MySQL, embedded SQL) fills variables: a plain SELECT
    target = into.this if isinstance(into, exp.Into) else None
    return into if isinstance(target, exp.Table) and isinstance(target.this, exp.Identifier) else None


def _sources(contribs: list) -> list[SourceColumn]:
    # Column ids are interned: the same source recurs in statement after
    # statement, and a large script's results are mostly these strings.
    seen: dict[tuple, None] = {}
    for column_id, key, kind, funcs, _occurrence in contribs:
        seen[(column_id, key, kind, funcs)] = None
    return [
        SourceColumn(column=intern(column_id), key=key, kind=KINDS[kind], functions=list(funcs))
        for column_id, key, kind, funcs in seen
    ]


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
