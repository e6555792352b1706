"""A query's permission points: the tables, output columns, row conditions and cells it reads.

`query_points` runs one statement through the lineage extractor with `PointsResolver`, a
`QueryResolver` in the resolver's strict mode (`ResolverEnv.decisions`: an output's sources are
every base column that can decide its value, not only those it is computed from: a CASE/IF
condition, a map or array subscript's key, a window's PARTITION BY/ORDER BY, what a scalar
subquery's clauses read, the columns of other reads a join condition compares a read with
(`decides:join`, then `against:<column>` naming the read's own side), the array a `posexplode`
position counts in; each with `decides:<what>` on its path where it decides, so masking
knows a function above it takes a chosen value; a cast to another type than text is
`cast:<type>`, and a UDF called without a column is a source of its own, `<name>()`) that also
keeps, per SELECT, what permission checks need and lineage does not:
the columns of column-versus-column comparisons (values can pass across them), and only the
row filters that are sound. A row condition on a table read must hold for every row the query
reads from it; where that is not certain the condition is dropped, so a cell may claim MORE
rows than are read, never fewer. Conservative, by design:

- an ON condition of an outer join filtering the preserved side (LEFT: the tables before the
  join, RIGHT: the joined item, FULL: both; a LEFT ANTI join preserves the left) is dropped;
- a filter from outside a subquery (a derived table, CTE or view) that computes a window
  function, a LIMIT/OFFSET/FETCH or a TABLESAMPLE does not pass into it;
- a filter inside a subquery on a column of an enclosing query (correlated) is dropped: under
  NOT EXISTS or in a select item it does not restrict the outer rows;
- OR of predicates on different columns (or of ranges) gives no condition; HAVING and QUALIFY
  filters give none either;
- `IS NULL` gives no condition (on an outer join's null-supplying side it keeps the rows
  without a match, which tells about the rows with one);
- a table read several times gives one scope per read; their conditions are never merged;
- UPDATE, DELETE, MERGE and multi-table inserts: every table read is a scope without
  conditions, and its cells hold every column the statement's lineage names.

A cell's columns are per table: every base column of it among the outputs' sources, the
join columns and the columns that decide values, order or groups (CASE/IF conditions, ORDER BY,
SORT/CLUSTER/DISTRIBUTE BY, GROUP BY with ROLLUP/CUBE, window PARTITION BY/ORDER BY, HAVING,
QUALIFY, the right side of EXCEPT), on each of its cells (not per read): their values can be
learnt from the result. WHERE column-versus-constant filters are rows' conditions only. A
query reading no table (`SELECT 1`) has empty points; a statement that neither reads nor
writes (SET, SHOW) is a QueryError.

Join columns are the base columns of both sides of a comparison (`=`, `<>`, `<`, `<=`, `>`,
`>=`, `<=>`) whose sides both read columns (`a.k = b.k`, `upper(a.k) = b.k`), of
`x IN (SELECT k ...)` and of `JOIN ... USING (k)`, in WHERE and ON clauses at any depth.

Persistent views (catalog entries with `view_sql`) are read through to their base tables,
parsed in their `view_dialect`, once per (view, text). `catalog_for` gathers the catalog a
query needs, views' tables included.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import cast

import sqlglot
from pydantic import TypeAdapter
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError, TokenError

from watershed.graph import ids
from watershed.graph.authz import OutputSource, QueryPoints
from watershed.graph.catalog import Catalog, CatalogTable
from watershed.graph.errors import WatershedError
from watershed.graph.lineage import StatementLineage
from watershed.ingest.dialects import dialect_tools
from watershed.ingest.errors import StatementError
from watershed.ingest.functions import function_name
from watershed.ingest.limits import checked_tokens
from watershed.ingest.predicates import conjuncts
from watershed.ingest.resolve import (
    CONDITIONAL,
    DIRECT,
    EXPRESSION,
    KINDS,
    Occurrence,
    QueryResolver,
    ReadContext,
    Relation,
    ResolverEnv,
    Scope,
    Source,
    file_source,
    may_hold_windows,
    table_id,
)
from watershed.ingest.statements import StatementExtractor
from watershed.ingest.variables import substitute


class QueryError(WatershedError, ValueError):
    """The query cannot be analysed: a parse error, not exactly one statement, a `${variable}`
    left unsubstituted (Spark would read its value), or a statement that reads nothing."""


#: statements whose outermost query is what they return or write
_QUERY_KINDS = frozenset({"select", "insert", "create-table-as", "create-view", "temporary-view"})

#: comparisons whose two column sides make join columns
_COMPARISON_SET = frozenset({exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ})
_CONNECTIVES = frozenset({exp.And, exp.Or, exp.Not, exp.Paren})
_LEAVES = frozenset({exp.Column, exp.Literal, exp.Null, exp.Boolean, exp.Star, exp.Identifier})
#: nodes `_tables_of` does not walk into
_HOLD_NO_TABLE = frozenset(
    {exp.Column, exp.Identifier, exp.Literal, exp.DataType, exp.Star, exp.Null, exp.Boolean, exp.Var}
)
#: select items that hold no window, told without walking them
_PLAIN_ITEMS = frozenset({exp.Column, exp.Literal, exp.Null, exp.Boolean, exp.Star})

#: views parsed, by (view id, text, dialect)
_VIEW_CACHE: dict[tuple[str, str, str], exp.Expression] = {}


def _parse_view(table: str, text: str, dialect: str) -> exp.Expression:
    key = (table, text, dialect)
    found = _VIEW_CACHE.get(key)
    if found is None:
        try:
            statements = [s for s in sqlglot.parse(text, read=dialect) if s is not None]
        except (ParseError, TokenError) as exc:
            raise QueryError(
                f"view {table}: cannot parse its definition: {_parse_message(exc, text)}"
            ) from None
        except RecursionError:
            raise QueryError(f"view {table}: its definition is nested too deeply") from None
        except ValueError:
            # sqlglot's `Unknown dialect 'x'.`
            raise QueryError(f"view {table}: cannot parse its definition in dialect {dialect!r}") from None
        if len(statements) != 1 or not isinstance(statements[0], exp.Query):
            raise QueryError(f"view {table}: its definition is not one query")
        if len(_VIEW_CACHE) > 4096:
            _VIEW_CACHE.clear()
        found = _VIEW_CACHE[key] = statements[0]
    return found


def _parse_message(exc: SqlglotError, text: str) -> str:
    if isinstance(exc, ParseError) and exc.errors:
        detail = exc.errors[0]
        description = str(detail.get("description") or exc).split("\n")[0]
        return f"line {detail.get('line')}, column {detail.get('col')}: {description}"
    if isinstance(exc, TokenError):
        # sqlglot's message quotes the text around the error, which may hold a sensitive
        # constant (and reaches the audit log): the place only (the quoted snippet ends there)
        at = getattr(exc, "end", None)
        if not isinstance(at, int):
            at = getattr(exc, "start", None)
        if isinstance(at, int) and 0 <= at <= len(text):
            line = text.count("\n", 0, at) + 1
            column = at - (text.rfind("\n", 0, at) + 1) + 1
            return f"line {line}, column {column}: cannot tokenize the text there"
        return "cannot tokenize the text"
    return str(exc).split("\n")[0]


class PointsResolver(QueryResolver):
    """The lineage resolver plus what permission points need (see the module docstring).
    Used only by `query_points`: the harvest keeps the plain `QueryResolver`."""

    def __init__(self, env: ResolverEnv) -> None:
        super().__init__(env)
        #: base column ids of column-versus-column comparisons
        self.join_columns: dict[str, None] = {}
        #: the outermost queries of the statement, with the context they read into
        self.top: list[tuple[Relation, ReadContext]] = []
        #: relations of subqueries, by node id (`x IN (SELECT ...)`)
        self._relations: dict[int, Relation] = {}
        #: occurrence ids a filter of the current clause may restrict (None: any)
        self._allowed: set[int] | None = None
        #: views met that could not be expanded (a cycle)
        self.view_cycles: list[str] = []
        #: base columns that decide values, order or groups (CASE/IF conditions, ORDER BY,
        #: GROUP BY, window specs, HAVING, QUALIFY, EXCEPT's right side): cell columns
        self.deciding: dict[str, None] = {}
        #: inside a WHERE or ON condition: its filters are rows' conditions, not cell columns
        self._in_filters = False

    # ---------------------------------------------------------------- queries

    def query(self, node, ctx, ctes=None, parent=None) -> Relation:
        # a nested query's filters restrict its own tables, whatever clause it stands in
        saved = self._allowed, self._in_filters
        self._allowed, self._in_filters = None, False
        try:
            relation = super().query(node, ctx, ctes, parent)
        finally:
            self._allowed, self._in_filters = saved
        if _limits_rows(node, self.windows_possible):
            # an outer filter must not pass into a window, a LIMIT or a sample
            relation = Relation(
                relation.names,
                [
                    [c if c[4] is None else (c[0], c[1], c[2], c[3], None) for c in col]
                    for col in relation.contribs
                ],
                [
                    s
                    if s.occurrence is None
                    else Source(s.alias, table=s.table, columns=s.columns, relation=s.relation)
                    for s in relation.passthrough
                ],
            )
        self._relations[id(node)] = relation
        if self._depth == 0:
            self.top.append((relation, ctx))
        return relation

    def _add_item(self, scope, item, ctx, ctes) -> None:
        if type(item) is exp.Table and isinstance(item.this, exp.Identifier):
            name = item.name.lower()
            local = item.args.get("db") is None and (name in ctes or name in self.env.temp_views)
            if not local and (item.args.get("db") is None or file_source(item) is None):
                tid = table_id(item, self.env.default_database, self.env.default_catalog)
                entry = self.env.catalog.get(tid)
                if entry is not None and entry.view_sql:
                    self._view(scope, item, tid, entry, ctx)
                    return
        super()._add_item(scope, item, ctx, ctes)

    def _view(self, scope: Scope, item: exp.Table, tid: str, entry: CatalogTable, ctx: ReadContext) -> None:
        dialect = entry.view_dialect or self.env.dialect
        definition = _parse_view(tid, entry.view_sql or "", dialect)
        alias = (item.alias or item.name).lower()
        if id(definition) in self._expanding:
            self.view_cycles.append(tid)
            ctx.problem(f"view {tid} refers to itself")
            scope.add(alias, Source(alias, relation=Relation([], [])))
            return
        env = self.env
        saved = (env.default_database, env.dialect, env.sql_text, self.windows_possible)
        env.default_database = ids.split(tid)[0]
        env.dialect = dialect
        env.sql_text = None
        self.windows_possible = may_hold_windows(entry.view_sql or "")
        self._expanding.add(id(definition))
        try:
            relation = self.query(definition, ctx)
        finally:
            env.default_database, env.dialect, env.sql_text, self.windows_possible = saved
            self._expanding.discard(id(definition))
        if (
            entry.columns_ordered
            and entry.all_columns
            and len(entry.all_columns) == len(relation.names)
            and entry.all_columns != relation.names
        ):
            # the view's columns as the catalog names them (`CREATE VIEW v (a, b) AS ...`); by
            # position only when the catalog knows their order, else the definition's names hold
            relation = Relation(list(entry.all_columns), relation.contribs, relation.passthrough)
        scope.add(alias, Source(alias, relation=self._renamed(relation, item)))

    def _expand_star(self, sources, star, ctx, names, contribs, passthrough) -> None:
        sources = list(sources)
        for source in sources:
            # a base table's read (one a join decides holds a relation as well)
            if source.columns is not None and source.table is not None:
                entry = self.env.catalog.get(source.table)
                if entry is not None and not entry.columns_ordered:
                    # its columns are listed by name: positions (and so masks) would be wrong
                    ctx.problem(
                        f"{source.table}.*: its column order is unknown: list the columns, "
                        "or load the table's catalog"
                    )
        super()._expand_star(sources, star, ctx, names, contribs, passthrough)

    # ------------------------------------------------------- deciding columns

    def weak(self, node, scope, ctx, role, aliases=False) -> None:
        if self._in_filters and role in ("filter", "join"):
            super().weak(node, scope, ctx, role, aliases)
            return
        # the columns this call records (nested calls included) decide values, order or groups
        outer = ctx.weak
        ctx.weak = {}
        try:
            super().weak(node, scope, ctx, role, aliases)
        finally:
            recorded, ctx.weak = ctx.weak, outer
            outer.update(recorded)
            for column_id, _role in recorded:
                self.deciding[column_id] = None

    def _add_weak(self, ctx, contribs, role) -> None:
        super()._add_weak(ctx, contribs, role)
        if not (self._in_filters and role in ("filter", "join")):
            for contribution in contribs:
                self.deciding[contribution[0]] = None

    # ------------------------------------------------------- partial functions

    def _value_function(self, node, scope, ctx, kind, funcs, key, out) -> None:
        if type(node) is exp.Anonymous and node.find(exp.Column) is None:
            # a UDF called without a column: its result is a value of its own, named `<name>()`
            # among the output's sources (masking tells a policy secret function: never returned)
            name = function_name(node)
            path = tuple(reversed(funcs))
            if path and path[0] == name:
                path = path[1:]  # its own name, put on its siblings' paths as a salt
            out.append((f"{name}()", None, max(kind, EXPRESSION), path, None))
        partial = _partial_name(node)
        if partial is None:
            super()._value_function(node, scope, ctx, kind, funcs, key, out)
            return
        # a function whose arguments make it keep part of the value (or take a part) is
        # recorded under a name the effect table does not hold: in the strict derive it keeps
        # the tag, and no function above it lowers the tag (rules.derive, Policy.takes_whole)
        inner_kind = kind if kind > EXPRESSION else EXPRESSION
        path = (*funcs, partial)
        for child in node.iter_expressions():
            self.value(child, scope, ctx, inner_kind, path, None, out)

    # --------------------------------------------------------- join decisions

    def join_decisions(self, node: exp.Select, scope: Scope, ctx: ReadContext) -> None:
        """A read's rows are chosen by what its join condition compares it with: the columns
        of the OTHER reads in a conjunct of an ON, a USING or the WHERE that relates two reads
        decide every column of this one (`decides:join`), through chains of joins. Each such
        path ends with `against:<column>[ via <functions>]`, the read's own side of the
        comparison, so masking can leave out a decision matched against a value no less
        protected (`orders.phone = users.phone`)."""
        if len(scope.sources) < 2:
            return
        #: (the decided read, the reads deciding it, their contributions, its `against:` marks),
        #: in a fixed order: the chains below keep the first way they reach a path
        edges: list[tuple[str, tuple[str, ...], list, tuple[str, ...]]] = []
        deciding, scratch = self.deciding, ReadContext()
        # the sides are valued again only to name their paths: their weak references are the
        # condition's, recorded by `filters` already
        self.deciding = dict(deciding)
        #: each side's value by the side's id (with the side, kept alive): `a.k = b.k` has the
        #: same two sides for both reads, swapped
        valued: dict[int, tuple[exp.Expression, list]] = {}

        def value_of(side: exp.Expression) -> list:
            known = valued.get(id(side))
            if known is None:
                out: list = []
                self.value(side, scope, scratch, CONDITIONAL, (), None, out)
                known = valued[id(side)] = (side, out)
            return known[1]

        try:
            for conjunct in self._relating(node, scope, ctx):
                owners = self._owners(conjunct, scope, ctx)
                if len(owners) < 2:
                    continue
                sides: dict[int, list[tuple[exp.Column, str | None]]] = {}
                for alias in owners:
                    mine, other = self._sides(conjunct, alias, owners, scope, ctx, sides)
                    own = value_of(mine)
                    theirs = value_of(other)
                    for contribution in (*own, *theirs):
                        self.join_columns.setdefault(contribution[0], None)
                    marks = tuple(
                        dict.fromkeys(
                            f"against:{c[0]}" + (f" via {','.join(c[3])}" if c[3] else "") for c in own
                        )
                    )
                    edges.append((alias, tuple(sorted(set(owners) - {alias})), theirs, marks))
        finally:
            self.deciding = deciding
        decided: dict[str, dict[tuple, tuple[tuple, frozenset[str]]]] = {}
        #: each read's decisions in the order they were found (`decided`'s values, as a list)
        found_in_order: dict[str, list[tuple[tuple, frozenset[str]]]] = {}
        for alias, others, theirs, marks in edges:
            found = decided.setdefault(alias, {})
            in_order = found_in_order.setdefault(alias, [])
            for c in theirs:
                path = (*c[3], _JOIN, *marks)
                if (c[0], path) not in found:
                    found[(c[0], path)] = entry = ((c[0], None, CONDITIONAL, path, None), frozenset(others))
                    in_order.append(entry)
        # a chain: what decides a read that decides this one decides it too (never back to itself).
        # A decision met again through the same edge adds nothing (its path and origins are
        # the same), so each (edge, other read) pair goes on from where it stopped: the rounds
        # find what they found when every round went over every decision again, in that order
        total = sum(map(len, decided.values()))
        #: per edge and other read, how many of the other read's decisions it has taken
        taken: dict[tuple[int, str], int] = {}
        for _ in range(len(scope.sources)):
            grew = False
            for index, (alias, others, _theirs, marks) in enumerate(edges):
                found = decided.setdefault(alias, {})
                in_order = found_in_order.setdefault(alias, [])
                for other in others:
                    theirs_in_order = found_in_order.get(other, [])
                    start = taken.get((index, other), 0)
                    taken[(index, other)] = len(theirs_in_order)
                    for contribution, origins in theirs_in_order[start:]:
                        if alias in origins:
                            continue
                        path = (*contribution[3], _JOIN, *marks)
                        if (contribution[0], path) not in found:
                            found[(contribution[0], path)] = entry = (
                                (contribution[0], None, CONDITIONAL, path, None),
                                origins | {other},
                            )
                            in_order.append(entry)
                            grew = True
                            total += 1
                if total > _MAX_JOIN_DECISIONS:
                    # many reads joined every way: refuse (a problem denies) rather than stall
                    ctx.problem(
                        f"joins too entangled to tell what decides each read (over {_MAX_JOIN_DECISIONS} paths)"
                    )
                    return
            if not grew:
                break
        for alias, found in decided.items():
            if found:
                self._decided_source(scope, alias, [c for c, _ in found.values()], ctx)

    def _relating(self, node: exp.Select, scope: Scope, ctx: ReadContext) -> list[exp.Expression]:
        """The conjuncts of the SELECT's ON, USING and WHERE conditions (join groups included);
        a USING column as `left.k = right.k`."""
        found: list[exp.Expression] = []
        from_ = node.args.get("from_")
        joins: list[exp.Join] = []
        stack = [from_.this] if from_ is not None else []
        stack.extend(j.this for j in node.args.get("joins") or [])
        joins.extend(node.args.get("joins") or [])
        while stack:
            item = stack.pop()
            group = item.args.get("joins") if type(item) is exp.Subquery and not item.alias else None
            if group:
                joins.extend(group)
                stack.extend(j.this for j in group)
                stack.append(item.this)
        for join in joins:
            on = join.args.get("on")
            if on is not None:
                found.extend(conjuncts(on))
            using = join.args.get("using")
            if using:
                right = [a for a, s in scope.sources.items() if _is_item_of(s, join)]
                left = [a for a in scope.sources if a not in right]
                for ident in using:
                    name = ident.name.lower()
                    sides = [self._first_with(name, left, scope), self._first_with(name, right, scope)]
                    if None not in sides:
                        found.append(
                            exp.EQ(this=exp.column(name, sides[0]), expression=exp.column(name, sides[1]))
                        )
        where = node.args.get("where")
        if where is not None:
            found.extend(conjuncts(where.this))
        return found

    @staticmethod
    def _first_with(name: str, aliases: list[str], scope: Scope) -> str | None:
        for alias in aliases:
            known = scope.sources[alias].known_columns()
            if known is None or name in known:
                return alias
        return None

    def _owner(self, column: exp.Column, scope: Scope, ctx: ReadContext) -> str | None:
        """The alias of this SELECT's read a column of its condition belongs to (None: an
        enclosing query's, a lambda's, a subquery's own, or not told)."""
        if type(column.this) is exp.Star or column.args.get("db") is not None:
            return None
        qualifier = column.args.get("table")
        if qualifier is not None:
            alias = column.table.lower()
            return alias if alias in scope.sources else None
        found = self._find_unqualified(column.name.lower(), scope, ctx)
        if isinstance(found, Source):
            return next((a for a, s in scope.sources.items() if s is found), None)
        return None

    def _owners(self, conjunct: exp.Expression, scope: Scope, ctx: ReadContext) -> dict[str, list]:
        owners: dict[str, list] = {}
        stack = [conjunct]
        while stack:
            node = stack.pop()
            if isinstance(node, exp.Query | exp.Subquery):
                continue  # a subquery's columns are its own (a correlated one is a row filter)
            if type(node) is exp.Column:
                alias = self._owner(node, scope, ctx)
                if alias is not None:
                    owners.setdefault(alias, []).append(node)
                continue
            stack.extend(node.iter_expressions())
        return owners

    def _sides(
        self,
        conjunct: exp.Expression,
        alias: str,
        owners: dict[str, list],
        scope: Scope,
        ctx: ReadContext,
        memo: dict[int, list[tuple[exp.Column, str | None]]],
    ) -> tuple[exp.Expression, exp.Expression]:
        """(the read's own side, the others' side) of a conjunct: the two sides of a comparison
        whose one side reads only `alias`, else the conjunct with the others' columns (then
        the read's own) as NULL. `owners` is `_owners` of the conjunct; `memo` keeps each side's
        columns with their owners for the conjunct's other reads."""
        columns = owners[alias]
        if isinstance(conjunct, exp.Binary) and not isinstance(conjunct, exp.Connector):
            left, right = conjunct.left, conjunct.right
            ours = {id(c) for c in columns}
            for mine, other in ((left, right), (right, left)):
                mine_columns = self._side_columns(mine, scope, ctx, memo)
                inside = [c for c, _owner in mine_columns if id(c) in ours]
                if (
                    len(inside) == len(columns)
                    and not any(id(c) in ours for c, _owner in self._side_columns(other, scope, ctx, memo))
                    and all(owner in (alias, None) for _c, owner in mine_columns)
                ):
                    return mine, other
        # the columns to set to NULL are those `_owners` found (outside any subquery, of a read
        # of this SELECT): the others' for the read's own side, the read's for the others'
        theirs = [c for a, found in owners.items() if a != alias for c in found]
        return _nulled(conjunct, theirs), _nulled(conjunct, columns)

    def _side_columns(
        self,
        side: exp.Expression,
        scope: Scope,
        ctx: ReadContext,
        memo: dict[int, list[tuple[exp.Column, str | None]]],
    ) -> list[tuple[exp.Column, str | None]]:
        found = memo.get(id(side))
        if found is None:
            found = memo[id(side)] = [(c, self._owner(c, scope, ctx)) for c in side.find_all(exp.Column)]
        return found

    def _decided_source(self, scope: Scope, alias: str, decisions: list, ctx: ReadContext) -> None:
        """The read under `alias`, each of its columns decided by `decisions` too."""
        source = scope.sources[alias]
        if source.relation is not None:
            relation = Relation(
                list(source.relation.names),
                [[*column, *decisions] for column in source.relation.contribs],
                list(source.relation.passthrough),
            )
        elif source.columns is not None:
            relation = Relation(
                list(source.columns), [[*source.base_column(n, ctx), *decisions] for n in source.columns]
            )
        else:
            return  # a table the catalog does not know: the query is denied for it anyway
        decided = Source(
            alias, table=source.table, columns=source.columns, occurrence=source.occurrence, relation=relation
        )
        scope.add(alias, decided)

    # ---------------------------------------------------------------- filters

    def _join_condition(self, join, scope, ctx, *right) -> None:
        side = str(join.args.get("side") or "").upper()
        kind = str(join.args.get("kind") or "").upper()
        if side or kind == "ANTI":
            item_sources = [s for s in scope.sources.values() if _is_item_of(s, join)]
            joined = _occurrence_ids(item_sources)
            everything = _occurrence_ids(scope.sources.values())
            if side == "FULL" or not item_sources:
                # both sides preserved, or the joined item not told apart (a pivot's alias)
                allowed: set[int] = set()
            elif side == "RIGHT":
                allowed = everything - joined
            elif kind == "SEMI":
                allowed = everything
            else:  # LEFT [OUTER|ANTI]: the left side is preserved
                allowed = joined
            saved = self._allowed
            self._allowed = allowed if saved is None else allowed & saved
            try:
                super()._join_condition(join, scope, ctx, *right)
            finally:
                self._allowed = saved
        else:
            super()._join_condition(join, scope, ctx, *right)

    def filters(self, condition, scope, ctx, role) -> None:
        saved = self._allowed, self._in_filters
        local = _occurrence_ids(scope.sources.values())
        self._allowed = local if saved[0] is None else saved[0] & local
        self._in_filters = True
        try:
            super().filters(condition, scope, ctx, role)
        finally:
            self._allowed, self._in_filters = saved
        self._join_keys(condition, scope, ctx)

    def _occurrences_of(self, column, scope, ctx, weak=None, role=""):
        found, key = self.resolve_column(column, scope, ctx)
        if key is None and any(_JOIN in c[3] for c in found):
            # a column of a read a join decides (`join_decisions`): a filter on it is on its
            # value, a bare copy of its base column beside the decisions
            if weak is not None:
                for contribution in found:
                    weak[(contribution[0], role)] = None
            values = [c for c in found if _JOIN not in c[3]]
            bare = values and all(
                c[4] is not None and c[1] is None and c[2] == DIRECT and not c[3] for c in values
            )
            targets = [(c[4], ids.name(c[0])) for c in values] if bare else []
        else:
            targets = super()._occurrences_of(column, scope, ctx, weak, role)
        allowed = self._allowed
        if allowed is None or not targets:
            return targets
        kept = [(o, c) for o, c in targets if id(o) in allowed]
        # part of a UNION's branches filtered is no condition on the others: all or none
        return kept if len(kept) == len(targets) else []

    def _using_column(self, name, scope, ctx) -> None:
        super()._using_column(name, scope, ctx)
        for source in scope.sources.values():
            known = source.known_columns()
            if known is not None and name not in known:
                continue
            for contribution in self._source_column(source, name, ctx, name):
                self.join_columns[contribution[0]] = None

    def _join_keys(self, condition: exp.Expression, scope: Scope, ctx: ReadContext) -> None:
        stack = [condition]
        join_columns = self.join_columns
        while stack:
            node = stack.pop()
            cls = type(node)
            if cls in _CONNECTIVES:
                stack.extend(node.iter_expressions())
            elif cls in _COMPARISON_SET:
                left, right = node.args.get("this"), node.args.get("expression")
                if type(left) is exp.Column and type(right) is exp.Column:
                    # `a.k = b.k`, most of a TPC-DS WHERE: resolved (and cached) by `filters`
                    for column in (left, right):
                        if type(column.args["this"]) is not exp.Star:
                            for contribution in self.resolve_column(column, scope, ctx)[0]:
                                join_columns[contribution[0]] = None
                elif _reads_columns(left) and _reads_columns(right):
                    self._add_join_side(left, scope, ctx)
                    self._add_join_side(right, scope, ctx)
            elif cls is exp.In and node.args.get("query") is not None and _reads_columns(node.this):
                relation = self._relations.get(id(node.args["query"]))
                if relation is not None and relation.contribs:
                    self._add_join_side(node.this, scope, ctx)
                    for contribution in relation.contribs[0]:
                        join_columns[contribution[0]] = None
            elif cls not in _LEAVES and not isinstance(node, exp.Query | exp.Subquery):
                stack.extend(node.iter_expressions())

    def _add_join_side(self, side: exp.Expression, scope: Scope, ctx: ReadContext) -> None:
        out: list = []
        self.value(side, scope, ctx, DIRECT, (), None, out)
        for contribution in out:
            self.join_columns[contribution[0]] = None


#: where a join condition decides a read's columns (`join_decisions`)
_JOIN = "decides:join"
#: join decision paths a SELECT may hold (the most joined TPC-DS query holds under 2,000)
_MAX_JOIN_DECISIONS = 20_000

#: Hive's partial masks: they hide a few characters and show the rest
_PARTIAL_MASKS = frozenset({"mask_first_n", "mask_last_n", "mask_show_first_n", "mask_show_last_n"})


def _partial_name(node: exp.Expression) -> str | None:
    """`name:part` for a call whose arguments keep part of its input where the effect table's
    entry for `name` assumes the whole is hidden or passed on: a trim with a character set
    (`trim(BOTH '1' FROM phone)` takes out the digits it names; as the set, the column is
    compared with the trimmed value), Spark's `mask` with a replacement that is not a
    non-NULL literal (NULL keeps that class of characters), Hive's partial masks."""
    if type(node) is exp.Trim:
        return "trim:part" if node.args.get("expression") is not None else None
    if type(node) is not exp.Anonymous:
        return None
    name = function_name(node)
    if name in _PARTIAL_MASKS:
        return f"{name}:part"
    if name == "btrim" and len(node.expressions) > 1:
        return "btrim:part"
    if name == "mask":
        # mask(input, upperChar, lowerChar, digitChar, otherChar): otherChar NULL is its default
        replacements = node.expressions[1:4]
        if any(type(r) is not exp.Literal or not r.is_string for r in replacements):
            return "mask:part"
    return None


def _reads_columns(node: exp.Expression) -> bool:
    """Whether `node` reads a column outside any subquery (a subquery side is left to the
    subquery's own walk)."""
    if isinstance(node, exp.Column):
        return not isinstance(node.this, exp.Star)
    stack = list(node.iter_expressions())
    while stack:
        current = stack.pop()
        if isinstance(current, exp.Query | exp.Subquery):
            return False
        if isinstance(current, exp.Column):
            return True
        stack.extend(current.iter_expressions())
    return False


def _limits_rows(node: exp.Expression, windows_possible: bool = True) -> bool:
    """A query whose rows depend on rows an outer filter would remove: a window function, a
    LIMIT/OFFSET/FETCH, a TABLESAMPLE. `windows_possible` False: its text holds no window, so
    its select items are not walked for one."""
    args = node.args
    if args.get("limit") is not None or args.get("offset") is not None or args.get("fetch") is not None:
        return True
    if type(node) is not exp.Select:
        return False
    if args.get("qualify") is not None or args.get("sample") is not None:
        return True
    if windows_possible:
        for item in node.expressions:
            inner = item.args.get("this") if type(item) is exp.Alias else item
            # most items are columns: no walk for them (this runs on every query of a check)
            if type(inner) not in _PLAIN_ITEMS and inner.find(exp.Window) is not None:
                return True
    from_ = args.get("from_")
    items = ([from_.this] if from_ is not None else []) + [j.this for j in args.get("joins") or []]
    return any(item.args.get("sample") is not None for item in items if isinstance(item, exp.Expression))


def _nulled(node: exp.Expression, columns: list[exp.Column]) -> exp.Expression:
    """`node` with `columns` (nodes inside it, none inside a subquery) as NULL, for the resolver
    to value: only the nodes above those columns are new; every other subtree is the original
    one, shared (the resolver reads no node's parent) unless it holds a subquery, which is
    copied as `Expression.copy` copies it (the resolver keeps what it found per subquery node).
    Copying the whole condition for each read it relates cost more than valuing it."""
    nulled = {id(c) for c in columns}
    if id(node) in nulled:
        return exp.Null()
    #: the nodes on the way from `node` down to a nulled column
    above: set[int] = set()
    for column in columns:
        current = column.parent
        while current is not None and id(current) not in above:
            above.add(id(current))
            if current is node:
                break
            current = current.parent
    root = node.__class__()
    stack = [(node, root)]
    while stack:
        original, copy = stack.pop()
        for key, value in original.args.items():
            if isinstance(value, exp.Expr):
                copy.args[key] = _kept(value, nulled, above, stack)
            elif type(value) is list:
                copy.args[key] = [
                    _kept(item, nulled, above, stack) if isinstance(item, exp.Expr) else item
                    for item in value
                ]
            else:
                copy.args[key] = value
    return root


def _kept(node: exp.Expr, nulled: set[int], above: set[int], stack: list) -> exp.Expr:
    if id(node) in nulled:
        return exp.Null()
    if id(node) in above:
        copy = node.__class__()
        stack.append((node, copy))
        return copy
    if node.find(exp.Query, exp.Subquery) is not None:
        return node.copy()
    return node


def _occurrence_ids(sources) -> set[int]:
    found: set[int] = set()
    for source in sources:
        if source.occurrence is not None:
            found.add(id(source.occurrence))
        if source.relation is not None:
            for column in source.relation.contribs:
                for contribution in column:
                    if contribution[4] is not None:
                        found.add(id(contribution[4]))
            found |= _occurrence_ids(source.relation.passthrough)
    return found


def _is_item_of(source: Source, join: exp.Join) -> bool:
    item = join.this
    names = {item.alias_or_name.lower()}
    if isinstance(item, exp.Table):
        names.add(item.name.lower())
    return source.alias in names


# -------------------------------------------------------------------- entry points


#: a `${name}` variable reference (ingest/variables.py), left when no value was given
_VARIABLE = re.compile(r"\$\{[^}]*\}")

#: where `parse_query` keeps the text a statement was parsed from (Spark names unaliased
#: outputs by their written text); sqlglot renders nothing from `meta`
_TEXT = "watershed_sql"


def parse_query(sql: str, *, dialect: str = "spark") -> exp.Expression:
    """`sql` parsed as exactly one statement, for `tables_named`, `catalog_for`, `query_points`
    and `rewrite.masked_query` to share (one parse per check). None of them changes it."""
    variable = _VARIABLE.search(sql)
    if variable is not None:
        # Spark substitutes session variables before parsing: what it reads is unknown here
        name = variable.group(0) if len(variable.group(0)) <= 64 else variable.group(0)[:60] + "...}"
        raise QueryError(f"unsubstituted variable {name}: give its value")
    try:
        _dialect, tokenizer, parser = dialect_tools(dialect.strip().lower())
        statements = [s for s in parser.parse(checked_tokens(tokenizer, sql), sql) if s is not None]
    except (ParseError, TokenError) as exc:
        raise QueryError(f"cannot parse the query: {_parse_message(exc, sql)}") from None
    except SqlglotError as exc:
        raise QueryError(f"cannot parse the query: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise QueryError("cannot parse the query: it is nested too deeply") from None
    except ValueError as exc:
        # sqlglot's `Unknown dialect 'x'.` (the text itself is never in it)
        if "dialect" in str(exc).lower():
            raise QueryError(f"cannot parse the query: unknown dialect {dialect!r}") from None
        raise QueryError(f"cannot parse the query: {type(exc).__name__}") from None
    if not statements:
        raise QueryError("the query holds no statement")
    if len(statements) > 1:
        raise QueryError(f"the query holds {len(statements)} statements; expected one")
    statement = statements[0]
    statement.meta[_TEXT] = sql
    return statement


def _statement(sql: str | exp.Expression, dialect: str) -> exp.Expression:
    if isinstance(sql, exp.Expression):
        return sql
    return parse_query(sql, dialect=dialect)


def tables_named(
    sql: str | exp.Expression, *, dialect: str = "spark", default_database: str = "default"
) -> list[str]:
    """Every table id the statement names, written or read (not CTE names), sorted. `sql` is
    the text or the statement `parse_query` returned."""
    return _tables_of(_statement(sql, dialect), default_database)


def _tables_of(node: exp.Expression, default_database: str) -> list[str]:
    # one walk for both, the CTE names a table may be and the tables, which does not enter
    # what holds no table (a column's identifiers, a type): a check's select list is mostly those
    ctes: set[str] = set()
    tables: list[exp.Table] = []
    stack: list[exp.Expr] = [node]
    while stack:
        current = stack.pop()
        cls = type(current)
        if cls is exp.Table:
            tables.append(cast(exp.Table, current))
        elif cls is exp.CTE:
            ctes.add(current.alias_or_name.lower())
        elif cls in _HOLD_NO_TABLE:
            continue
        for value in current.args.values():
            if type(value) is list:
                stack.extend(v for v in value if isinstance(v, exp.Expr))
            elif isinstance(value, exp.Expr):
                stack.append(value)
    found: dict[str, None] = {}
    for table in tables:
        if not isinstance(table.this, exp.Identifier):
            continue  # a table function
        if table.args.get("db") is None and table.name.lower() in ctes:
            continue
        location = file_source(table)
        try:
            tid = ids.path_table(location) if location is not None else table_id(table, default_database)
        except (WatershedError, StatementError) as exc:
            raise QueryError(f"table {table.sql()}: {exc}") from None
        found[tid] = None
    return sorted(found)


def catalog_for(
    sql: str | exp.Expression,
    fetch: Callable[[list[str]], dict[str, CatalogTable]],
    *,
    dialect: str = "spark",
    default_database: str = "default",
    max_depth: int = 20,
) -> Catalog:
    """The catalog `query_points` needs for `sql`: the tables it names and, through every
    view's definition, the tables views name, fetched level by level until closed. `sql` is
    the text or the statement `parse_query` returned."""
    tables: dict[str, CatalogTable] = {}
    #: what each view names, for the cycle check
    names: dict[str, list[str]] = {}
    pending = tables_named(sql, dialect=dialect, default_database=default_database)
    asked: set[str] = set()
    depth = 0
    while pending:
        wanted = [t for t in dict.fromkeys(pending) if t not in asked]
        if not wanted:
            break
        if depth > max_depth:
            raise QueryError(f"views nested deeper than {max_depth} levels: {', '.join(sorted(names))}")
        asked.update(wanted)
        fetched = fetch(wanted)
        pending = []
        for tid in wanted:
            entry = fetched.get(tid)
            if entry is None:
                continue
            tables[tid] = entry
            if entry.view_sql:
                view_dialect = entry.view_dialect or dialect
                definition = _parse_view(tid, entry.view_sql, view_dialect)
                names[tid] = _tables_of(definition, ids.split(tid)[0])
                pending.extend(names[tid])
        depth += 1
    cycle = _cycle(names)
    if cycle:
        raise QueryError(f"views refer to themselves: {' -> '.join(cycle)}")
    return Catalog(default_database=default_database, tables=tables)


def _cycle(edges: dict[str, list[str]]) -> list[str]:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in edges.get(node, []):
            if nxt not in edges:
                continue
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return []

    for start in sorted(edges):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return []


def query_points(
    sql: str | exp.Expression,
    catalog: Catalog,
    *,
    dialect: str = "spark",
    default_database: str = "default",
    variables: dict[str, str] | None = None,
) -> QueryPoints:
    """The permission points of one statement that reads (see the module docstring).

    `sql` is the text or the statement `parse_query` returned (parsed from the text with its
    variables already substituted: `variables` applies to text only); the statement is not
    changed, so the caller can hand it on to the rewrite. `query_hash` is of the text.
    """
    if isinstance(sql, exp.Expression):
        if variables:
            raise QueryError("variables apply to the query's text, not to a parsed statement")
        node = sql
        text = node.meta.get(_TEXT)
        if not isinstance(text, str):
            raise QueryError("the statement was not parsed by parse_query: its text is unknown")
        sql = text
    else:
        text = substitute(sql, variables) if variables else sql
        node = parse_query(text, dialect=dialect)
    # INSERT … SELECT and CREATE … AS: the points come from the query, so the target's column
    # lineage (a fifth of an INSERT's analysis) is skipped; when the statement turns out to
    # have no single outermost query, it is analysed again in full
    lean = isinstance(node, exp.Create) or (
        isinstance(node, exp.Insert) and node.args.get("conflict") is None
    )
    lineage, resolver = _extract(node, text, catalog, default_database, dialect, lean)
    if lean and not (lineage.kind in _QUERY_KINDS and len(resolver.top) == 1):
        lineage, resolver = _extract(node, text, catalog, default_database, dialect, False)
    if resolver.view_cycles:
        raise QueryError(f"views refer to themselves: {', '.join(dict.fromkeys(resolver.view_cycles))}")
    if not resolver.top and not lineage.reads and not lineage.writes:
        raise QueryError(f"a {lineage.kind} statement reads nothing")

    problems: dict[str, None] = dict.fromkeys(lineage.unresolved)
    # the answer is built as plain data and validated once, nested models and all: a model
    # per item (some fifty a query) cost a fifth of the analysis
    columns: list[dict] = []
    #: base columns a statement without one outermost query reads (UPDATE, DELETE, MERGE, a
    #: multi-insert): every column its lineage names, and its rows without conditions
    extra: list[str] = []
    rows: list[dict]
    #: the outputs' distinct sources (`_source_keys`)
    made: dict[tuple, dict | OutputSource] = {}
    if lineage.kind in _QUERY_KINDS and len(resolver.top) == 1:
        relation, ctx = resolver.top[0]
        problems.update(ctx.unresolved)
        rows = [{"table": o.table, "conditions": _conditions(o)} for o in ctx.occurrences]
        by_id: dict[int, tuple[object, tuple]] = {}
        by_value: dict[tuple, tuple] = {}
        for position, (name, contribs) in enumerate(zip(relation.names, relation.contribs, strict=False)):
            columns.append(
                {"position": position, "name": name, "sources": _source_keys(contribs, made, by_id, by_value)}
            )
        _built(made)
        for column in columns:
            column["sources"] = [made[key] for key in column["sources"]]
    else:
        rows = [{"table": r.table, "conditions": []} for r in lineage.reads]
        extra = [w.column for w in lineage.weak_references]
        # a UDF's own value (`<name>()`) is no column of a table
        extra.extend(s.column for c in lineage.columns for s in c.sources if not s.column.endswith("()"))
        # the written table's own columns read (`SET a = b WHERE c = 1`): a read of it
        read = {r["table"] for r in rows}
        for table in dict.fromkeys(ids.parent(c) for c in [*extra, *resolver.join_columns]):
            if table not in read:
                read.add(table)
                rows.append({"table": table, "conditions": []})

    tables = sorted({r["table"] for r in rows})
    join_columns = sorted(resolver.join_columns)
    # the outputs' base columns, each once (a read's join decisions stand on all its outputs)
    read_columns = dict.fromkeys(cast(OutputSource, s).column for s in made.values())
    cells = _cells(rows, [*read_columns, *join_columns, *extra, *resolver.deciding])
    return QueryPoints.model_validate(
        {
            "query_hash": hashlib.sha256(sql.encode("utf-8")).hexdigest(),
            "dialect": dialect,
            "kind": lineage.kind,
            "tables": tables,
            "writes": list(lineage.writes),
            "columns": columns,
            "join_columns": join_columns,
            "rows": rows,
            "cells": cells,
            "unknown_tables": [t for t in tables if catalog.get(t) is None],
            "problems": list(problems),
        }
    )


class _PointsExtractor(StatementExtractor):
    """The statement extractor, without the written columns' lineage when `lean`."""

    lean = False

    def _column_lineage(self, tid, names, relation):
        return [] if self.lean else super()._column_lineage(tid, names, relation)


def _extract(
    node: exp.Expression, text: str, catalog: Catalog, default_database: str, dialect: str, lean: bool
) -> tuple[StatementLineage, PointsResolver]:
    extractor = _PointsExtractor(catalog, default_database, frozenset(), frozenset(), dialect, None)
    extractor.lean = lean
    # the gateway's strict question: whatever decides an output is a source of it (a CASE/IF
    # condition, a subscript, a window's spec, a scalar subquery's clauses), marked where it decides
    extractor.env.conditions_as_lineage = True
    extractor.env.decisions = True
    resolver = PointsResolver(extractor.env)
    resolver.windows_possible = may_hold_windows(text)
    extractor.resolver = resolver
    extractor.env.sql_text = text
    try:
        return extractor.extract(node, 0, 1), resolver
    except StatementError as exc:
        raise QueryError(f"cannot analyse the query: {exc}") from None
    except (SqlglotError, RecursionError, ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
        raise QueryError(f"cannot analyse the query: {type(exc).__name__}: {exc}") from None


def _conditions(occurrence: Occurrence) -> list[dict]:
    found: dict[str, dict] = {}
    for column, op, values, text in occurrence.predicates:
        if op == "is null":
            # null-accepting: on an outer join's null-supplying side it keeps the rows that
            # found no match, which says something about the rows that did
            continue
        if text not in found:
            found[text] = {"column": column, "op": op, "values": [str(v) for v in values], "text": text}
    return [found[text] for text in sorted(found)]


def _source_keys(
    contribs: list,
    made: dict[tuple, dict | OutputSource],
    by_id: dict[int, tuple[object, tuple]],
    by_value: dict[tuple, tuple],
) -> list[tuple]:
    """An output's sources as (column, kind, path) keys, each once; `made` gathers every key of
    the query with its fields, for `_built` to make each once. A key holds its path as the id
    of one tuple per distinct path (`by_value`; `by_id`: by the id of each path object met, the
    object, kept alive, and that tuple), so the hundreds of join decisions a TPC-DS output
    stands on, each with a path of dozens of steps, are not hashed step by step per output."""
    found: dict[tuple, None] = {}
    for column_id, _key, kind, functions, _occurrence in contribs:
        known = by_id.get(id(functions))
        if known is None:
            path = tuple(functions)
            known = by_id[id(functions)] = (functions, by_value.setdefault(path, path))
        path = known[1]
        key = (column_id, kind, id(path))
        if key not in found:
            found[key] = None
            if key not in made:
                made[key] = {"column": column_id, "kind": KINDS[kind], "functions": list(path)}
    return list(found)


#: a query's distinct sources, validated as one list
_SOURCE_LIST = TypeAdapter(list[OutputSource])


def _built(made: dict[tuple, dict | OutputSource]) -> None:
    """Every source of `made` validated once, in place: a read's join decisions are on every
    output of it, so one object serves them all (validated per output, a TPC-DS query's
    thousands of paths cost as much as finding them)."""
    for key, source in zip(made, _SOURCE_LIST.validate_python(list(made.values())), strict=True):
        made[key] = source


def _cells(rows: list[dict], column_ids: list[str]) -> list[dict]:
    read: dict[str, dict[str, None]] = {}
    for column_id in dict.fromkeys(column_ids):
        read.setdefault(ids.parent(column_id), {})[column_id] = None
    cells: dict[tuple[str, tuple[str, ...]], dict] = {}
    for scope in rows:
        texts = tuple(c["text"] for c in scope["conditions"])
        key = (scope["table"], texts)
        if key not in cells:
            cells[key] = {
                "table": scope["table"],
                "columns": sorted(read.get(scope["table"], {})),
                "conditions": list(scope["conditions"]),
            }
    return [cells[key] for key in sorted(cells)]
