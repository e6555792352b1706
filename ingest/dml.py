"""UPDATE, DELETE and MERGE: statements that change a table's rows in place.

A DELETE's or MERGE's target is matched, not read: it gets no read and no edge to
itself, but its columns can be weak references (and MERGE's value sources). An
UPDATE reads its target when it reads the target's columns (`SET a = a + 1`, a
`WHERE` or join condition on them): the old values decide the new ones.
"""

from __future__ import annotations

from sqlglot import exp

from watershed.graph import ids
from watershed.graph.lineage import ColumnLineage
from watershed.ingest.errors import StatementError
from watershed.ingest.resolve import Occurrence, ReadContext, Scope, Source, table_id
from watershed.ingest.writes import Write, is_default, sources_of


class DmlStatements:
    """The DML statements of `StatementExtractor` (it provides `env`, `catalog` and `resolver`)."""

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
                    if not is_default(assignment.expression):
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
                    if not is_default(value):
                        resolver.value(value, scope, ctx, 0, (), None, out)
                    assigned.setdefault(column.name.lower(), []).extend(out)
            elif isinstance(then, exp.Var) and "*" in then.name:
                self._merge_star(tid, src, target_columns, None, assigned, ctx)
        columns = [
            ColumnLineage(target=ids.child(tid, name), sources=sources_of(c)) for name, c in assigned.items()
        ]
        return Write(tid, columns, ctx)

    def _ctes(self, node: exp.Expression) -> dict[str, exp.CTE]:
        with_ = node.args.get("with_")
        return {cte.alias_or_name.lower(): cte for cte in with_.expressions} if with_ is not None else {}

    def _target_scope(
        self,
        targets: list[exp.Expression],
        items: list[exp.Expression],
        ctx: ReadContext,
        ctes: dict[str, exp.CTE],
    ) -> tuple[list[Occurrence], Scope, list[exp.Join]]:
        """The scope of an UPDATE or DELETE: its targets, matched against, and its other tables
        (`FROM`, `USING`, joins), read. Returns each target as a table occurrence that is not
        yet read (its id is the occurrence's table), the scope, and the joins whose conditions
        are still to be walked.

        T-SQL names the target by an alias its `FROM` defines (`UPDATE x … FROM dbo.t x`), and
        T-SQL and MySQL repeat the target in `FROM`/`JOIN`: that item is the target, not a read.
        MySQL's `DELETE t1, t2 FROM db.t1 JOIN db.t2 …` names its targets by a FROM item's alias,
        or by its table name when it has none.
        """
        joins: list[exp.Join] = []
        for target in targets:
            if not isinstance(target, exp.Table) or not isinstance(target.this, exp.Identifier):
                raise StatementError(f"unsupported target {target.sql(dialect=self.env.dialect)[:80]}")
            joins.extend(target.args.get("joins") or [])
        for item in items:
            joins.extend(item.args.get("joins") or [])
        candidates = [*items, *(join.this for join in joins)]
        scope = Scope(ctes=ctes)
        found: list[Occurrence] = []
        skipped: list[tuple[exp.Table, str, set[str]]] = []
        for target in targets:
            target_table = target
            if target.args.get("db") is None and not target.alias:
                named = target.name.lower()
                for item in candidates:
                    if (
                        isinstance(item, exp.Table)
                        and isinstance(item.this, exp.Identifier)
                        and (item.alias or item.name).lower() == named
                    ):
                        target_table = item
            tid = table_id(target_table, self.env.default_database, self.env.default_catalog)
            entry = self.catalog.get(tid)
            occurrence = Occurrence(
                tid, entry.partition_set if entry is not None else self.env.partition_columns
            )
            found.append(occurrence)
            aliases = {
                (target.alias or target.name).lower(),
                (target_table.alias or target_table.name).lower(),
            }
            for alias in aliases:
                source = Source(
                    alias,
                    table=tid,
                    columns=entry.all_columns if entry is not None else None,
                    occurrence=occurrence,
                )
                if entry is not None:
                    source._column_set = entry.column_set
                scope.add(alias, source)
            skipped.append((target_table, tid, aliases | {ids.split(tid)[1]}))
        for item in candidates:
            if isinstance(item, exp.Table) and any(
                item is target_table
                or (
                    isinstance(item.this, exp.Identifier)
                    and table_id(item, self.env.default_database, self.env.default_catalog) == tid
                    and (item.alias or item.name).lower() in names
                )
                for target_table, tid, names in skipped
            ):
                continue
            self.resolver._add_source(scope, item, ctx, ctes)
        return found, scope, joins

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
        (target,), scope, joins = self._target_scope([node.this], items, ctx, ctes)
        tid = target.table
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
                if not is_default(item):
                    self.resolver.value(item, scope, ctx, 0, (), None, out)
                assigned.setdefault(column.name.lower(), []).extend(out)
        # The target's own columns read (a value, a condition): its old rows are read too
        if any(ids.parent(column) == tid for column, _role in ctx.weak) or any(
            ids.parent(contribution[0]) == tid for contribs in assigned.values() for contribution in contribs
        ):
            ctx.occurrences.append(target)
        columns = [
            ColumnLineage(target=ids.child(tid, name), sources=sources_of(c)) for name, c in assigned.items()
        ]
        return Write(tid, columns, ctx)

    def _delete(self, node: exp.Delete) -> list[Write]:
        """Every table deleted from is written (no column values), under the same conditions."""
        ctx = ReadContext()
        ctes = self._ctes(node)
        target = node.this
        items = list(node.args.get("using") or [])
        # MySQL `DELETE a, b FROM a JOIN b …`: `tables` names what is deleted from, `this` the FROM
        named = list(node.args.get("tables") or [])
        if named:
            # (T-SQL `DELETE t` names only the table: no FROM)
            items = [target, *items] if isinstance(target, exp.Expression) else items
        elif items and isinstance(target, exp.Table) and target.args.get("joins"):
            # MySQL `DELETE FROM a, b USING a JOIN b …`: the tables before USING, comma-separated
            named = [target.copy(), *(join.this for join in target.args["joins"])]
            named[0].set("joins", None)
        else:
            named = [target]
        targets, scope, joins = self._target_scope(named, items, ctx, ctes)
        self._conditions(node, joins, scope, ctx)
        return [Write(tid, [], ctx) for tid in dict.fromkeys(t.table for t in targets)]

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
