"""Scopes and column resolution: the single walk over one query.

`QueryResolver.query` walks a parsed query once, builds the scope of every
SELECT (its FROM items, joins and lateral views), resolves each column
reference to the base-table columns it comes from, and returns a `Relation`:
the ordered output columns, each with its contributions. While walking it
records, in a `ReadContext`, the base tables read (one `Occurrence` per
appearance, with the filters on it) and the weak references.

A contribution is a plain tuple, for speed:
`(column_id, key, kind, functions, occurrence)` where `kind` indexes `KINDS`,
`functions` runs from the source outward, and `occurrence` is kept only while
the value is a bare copy, so a filter on a subquery's column can still be
traced to the base table it filters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol, cast

from sqlglot import exp

from watershed.graph import ids
from watershed.graph.catalog import DEFAULT_CATALOG, CatalogTable
from watershed.graph.errors import WatershedError
from watershed.graph.lineage import Kind
from watershed.ingest.dates import DayRange, hull
from watershed.ingest.errors import StatementError
from watershed.ingest.functions import function_name, spark_column_name
from watershed.ingest.limits import check_deadline, check_nesting, current_limits
from watershed.ingest.predicates import RawPredicate, conjuncts, day_range, disjuncts, normalise, render_value

DIRECT, EXPRESSION, CONDITIONAL, AGGREGATE, WINDOW, SCRIPT = range(6)
#: by strength: when several lie on one path the strongest wins. `script` (TRANSFORM ... USING)
#: is the strongest: what an opaque program does with its input is unknown.
KINDS: tuple[Kind, ...] = ("direct", "expression", "conditional-value", "aggregate", "window", "script")

Contribution = tuple  # (column_id, key, kind, functions, occurrence)
_NO_FUNCS: tuple[str, ...] = ()


@dataclass(eq=False, slots=True)
class Occurrence:
    """One appearance of a base table in a FROM or JOIN, with the filters on it."""

    table: str
    partition_columns: frozenset[str]
    predicates: list[tuple[str, str, list[str], str]] = field(default_factory=list)
    ranges: list[DayRange | None] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ReadContext:
    """What one write (or one query) reads: table occurrences, weak references, problems."""

    occurrences: list[Occurrence] = field(default_factory=list)
    weak: dict[tuple[str, str], None] = field(default_factory=dict)
    unresolved: dict[str, None] = field(default_factory=dict)

    def problem(self, message: str) -> None:
        self.unresolved[message] = None


@dataclass(slots=True)
class Relation:
    names: list[str]
    contribs: list[list[Contribution]]
    #: sources whose columns are unknown (a star over a table missing from the
    #: catalog); a name not in `names` is looked up in them
    passthrough: list[Source] = field(default_factory=list)
    _index: dict[str, int] | None = None

    def lookup(self, name: str) -> list[Contribution] | None:
        if self._index is None:
            index: dict[str, int] = {}
            for position, column in enumerate(self.names):
                index.setdefault(column, position)
            self._index = index
        found = self._index.get(name)
        return None if found is None else self.contribs[found]


@dataclass(slots=True)
class Source:
    """A FROM item of a scope: a base table or a derived relation."""

    alias: str
    table: str | None = None
    columns: list[str] | None = None
    occurrence: Occurrence | None = None
    relation: Relation | None = None
    _column_set: frozenset[str] | None = None
    #: a base table's contributions by column name (`base_column`), built once per name
    _base: dict[str, list[Contribution]] | None = None

    def base_column(self, name: str, ctx: ReadContext) -> list[Contribution]:
        """The contributions of column `name` of this base table: itself, a direct copy."""
        base = self._base
        if base is None:
            base = self._base = {}
        found = base.get(name)
        if found is not None:
            return found
        column_set = self._column_set
        # a base table's source always has its table
        found = [(ids.child(self.table, name), None, DIRECT, _NO_FUNCS, self.occurrence)]  # type: ignore[arg-type]
        if column_set is not None:
            # only a known column is kept: an unknown one is reported at every reference
            if name in column_set:
                base[name] = found
            else:
                ctx.problem(f"unknown column {name} (not in {self.table})")
        return found

    def known_columns(self) -> frozenset[str] | None:
        if self._column_set is None:
            if self.relation is not None:
                if self.relation.passthrough:
                    return None
                self._column_set = frozenset(self.relation.names)
            elif self.columns is not None:
                self._column_set = frozenset(self.columns)
        return self._column_set


class Scope:
    """The names a SELECT sees: its FROM items, the scope around it, its select list's aliases.

    A plain class rather than a dataclass: one is built for every SELECT, and the generated
    `__init__` calls a factory for each of its dicts.
    """

    __slots__ = (
        "_unqualified",
        "_windowed",
        "ctes",
        "lambda_names",
        "lateral",
        "parent",
        "projections",
        "sources",
        "using",
        "windows",
    )

    def __init__(
        self,
        sources: dict[str, Source] | None = None,
        parent: Scope | None = None,
        projections: dict[str, exp.Expression] | None = None,
        lambda_names: frozenset[str] = frozenset(),
        ctes: dict[str, exp.CTE] | None = None,
        lateral: dict[str, list[Contribution]] | None = None,
        windows: dict[str, exp.Window] | None = None,
    ) -> None:
        self.sources: dict[str, Source] = {} if sources is None else sources
        self.parent = parent
        self.projections = projections
        self.lambda_names = lambda_names
        #: the CTEs visible here: a subquery in any clause of this SELECT sees them too
        self.ctes: dict[str, exp.CTE] = {} if ctes is None else ctes
        #: the aliases of the select list read so far, with their contributions: Spark 3.4's
        #: lateral column aliases (`SELECT a + 1 AS b, b * 2 AS c`)
        self.lateral = lateral
        #: the named windows of the SELECT (`WINDOW w AS (...)`), used as `OVER w`
        self.windows = windows
        #: the merged columns of its `JOIN … USING (k)` joins, by name (`_merge_using`)
        self.using: dict[str, list[Contribution]] | None = None
        #: `_find_unqualified` answers by column name; a TPC-DS scope joins many
        #: tables and names the same column in several clauses. Cleared by `add`.
        self._unqualified: dict[str, Source | Literal[False] | None] = {}
        #: whether the select item of a name computes a window (`_window_alias`), asked for
        #: every unqualified column of GROUP BY, HAVING, QUALIFY and ORDER BY
        self._windowed: dict[str, bool] = {}

    def add(self, alias: str, source: Source) -> None:
        self.sources[alias] = source
        self._unqualified.clear()


class TableLookup(Protocol):
    """What the resolver reads of a catalog: a `Catalog`, or a script's own tables laid over one."""

    def get(self, name: str, /) -> CatalogTable | None: ...


class ResolverEnv:
    """What the resolver needs from the script around the query."""

    def __init__(
        self,
        catalog: TableLookup,
        default_database: str,
        partition_columns: frozenset[str],
        sub_day_columns: frozenset[str],
        dialect: str,
        temp_views: dict[str, tuple[exp.Expression, str]],
        default_catalog: str = DEFAULT_CATALOG,
        conditions_as_lineage: bool = False,
    ) -> None:
        self.catalog = catalog
        self.default_database = default_database
        self.partition_columns = partition_columns
        self.sub_day_columns = sub_day_columns
        self.dialect = dialect
        self.temp_views = temp_views
        #: the session's catalog: a three-part name in it reads as `db.table`
        self.default_catalog = default_catalog
        #: the text the current statement was parsed from, when the caller gives it: unaliased
        #: Spark items are then named with their functions' written names (`nvl`, not `coalesce`)
        self.sql_text: str | None = None
        #: CASE/IF conditions and window PARTITION BY/ORDER BY columns are value sources too
        #: (IngestSettings.conditions_as_lineage)
        self.conditions_as_lineage = conditions_as_lineage
        #: with conditions_as_lineage, the query gateway's strict question (ingest.points): a
        #: subscript's key, a column-free UDF argument (a salt) and every column a scalar
        #: subquery's clauses read decide too, and a deciding path records where it decides
        #: (`decides:case`, ...), so a function above the choice is known to take a chosen value
        self.decisions = False


def table_name(table: exp.Table) -> str:
    """The table's own name, lower case; T-SQL's temporary `#t` and global `##t` keep their `#`
    (sqlglot strips it into a flag), so a session's temporary table never reads as the table `t`."""
    this = table.args.get("this")
    name = table.name.lower()
    if type(this) is exp.Identifier and this.args:
        if this.args.get("temporary"):
            return "#" + name
        if this.args.get("global_"):
            return "##" + name
    return name


def table_id(table: exp.Table, default_database: str, default_catalog: str = DEFAULT_CATALOG) -> str:
    args = table.args
    this = args.get("this")
    catalog = args.get("catalog")
    db = args.get("db")
    if (
        catalog is None
        and type(this) is exp.Identifier
        and (db is None or type(db) is exp.Identifier)
        and not this.args.get("temporary")
        and not this.args.get("global_")
    ):
        # The common `db.t` or `t`: one dict lookup instead of building the id again.
        key = (this.this, db.this if db is not None else None, default_database)
        found = _TABLE_IDS.get(key)
        if found is None:
            if len(_TABLE_IDS) > 65536:
                _TABLE_IDS.clear()
            found = _TABLE_IDS[key] = ids.join(
                db.this.lower() if db is not None else default_database, key[0].lower()
            )
        return found
    for part in (catalog, db, this):
        if isinstance(part, exp.Parameter):
            # `${x}` left in a table name: the variable was never given.
            raise StatementError(f"unsubstituted variable ${{{part.name}}} in table name {table.sql()}")
    name = table_name(table)
    db = table.args.get("db")
    database = db.name.lower() if db is not None else default_database
    catalog = table.args.get("catalog")
    if catalog is not None and db is not None:
        catalog_name = catalog.name.lower()
        if catalog_name != default_catalog:
            return ids.join(ids.qualify(catalog_name, database), name)
    return ids.join(database, name)


#: `table_id` of the plain `db.t` and `t` forms, by (name, database as written, default database)
_TABLE_IDS: dict[tuple[str, str | None, str], str] = {}


def _join_key(inner: str | None, outer: str | None) -> str | None:
    if outer is None:
        return inner
    if inner is None:
        return outer
    return inner + outer[1:]


def _key_from_json_path(path: exp.Expression) -> str | None:
    if isinstance(path, exp.JSONPath):
        parts = ["$"]
        for part in path.expressions:
            if isinstance(part, exp.JSONPathRoot):
                continue
            if isinstance(part, exp.JSONPathKey):
                parts.append(f".{part.this}")
            elif isinstance(part, exp.JSONPathSubscript):
                parts.append(f"[{part.this}]")
            else:
                parts.append(f".{part.sql()}")
        return "".join(parts)
    if isinstance(path, exp.Literal) and path.is_string:
        text = path.this
        return text if text.startswith("$") else f"$.{text}"
    return None


def _key_from_bracket(index: exp.Expression) -> str | None:
    if isinstance(index, exp.Literal):
        return f"$.{index.this}" if index.is_string else f"$[{index.this}]"
    return None


class QueryResolver:
    """Resolves queries of one statement against a `ResolverEnv`."""

    def __init__(self, env: ResolverEnv) -> None:
        self.env = env
        self._depth = 0
        #: CTEs and temporary views being expanded (by definition node): a
        #: definition met again inside itself is a cycle, never walked twice
        self._expanding: set[int] = set()
        #: CTE walks of the current statement, by CTE and the conditions they ran under
        #: (see `_add_source`); the ReadContext is kept so its id is not reused
        self._cte_walks: dict[tuple, tuple[ReadContext, Relation, list]] = {}
        #: recursive CTEs being resolved (by definition node): what their self-reference reads
        #: so far (`_recursive_cte`)
        self._recursion: dict[int, Relation] = {}
        #: whether the text being resolved can hold a window at all (`may_hold_windows`): when
        #: not, no select item is searched for one (GROUP BY and ORDER BY ask for each name)
        self.windows_possible = True
        #: levels open now (a `value` call one, a `query` call two), and how many may be
        #: (analysis_max_nesting): the resolver recurses per level, so a statement nested past
        #: it is refused by its named limit, not by a RecursionError
        self._nesting = 0
        self._max_nesting = current_limits().analysis_max_nesting

    def new_statement(self) -> None:
        self._cte_walks.clear()
        # the limits in force where this statement is analysed (an `analysis_limits` block)
        self._max_nesting = current_limits().analysis_max_nesting

    # ----------------------------------------------------------------- queries

    def query(
        self,
        node: exp.Expression,
        ctx: ReadContext,
        ctes: dict[str, exp.CTE] | None = None,
        parent: Scope | None = None,
    ) -> Relation:
        check_deadline()
        self._depth += 1
        # a query level takes about twice the stack of an expression level
        self._nesting += 2
        try:
            if self._nesting > self._max_nesting:
                check_nesting(self._nesting)
            if self._depth > 200:
                raise StatementError("query nesting deeper than 200 levels")
            with_ = node.args.get("with_")
            if with_ is not None:
                ctes = dict(ctes or {})
                for cte in with_.expressions:
                    ctes[cte.alias_or_name.lower()] = cte
            if isinstance(node, exp.Select):
                return self._select(node, ctx, ctes or {}, parent)
            if isinstance(node, exp.SetOperation):
                return self._set_operation(node, ctx, ctes or {}, parent)
            if isinstance(node, exp.Subquery | exp.Paren):
                return self._renamed(self.query(node.this, ctx, ctes, parent), node)
            if isinstance(node, exp.Values):
                return self._values(node, ctx, ctes or {}, parent)
            ctx.problem(f"unsupported query form {node.key}")
            return Relation([], [])
        finally:
            self._depth -= 1
            self._nesting -= 2

    def _values(
        self, node: exp.Values, ctx: ReadContext, ctes: dict[str, exp.CTE], parent: Scope | None
    ) -> Relation:
        """`VALUES (…), (…) [AS t(a, b)]`: columns `col1`, … (or the alias's names), each with the
        sources of its position over every row; a literal has none, a scalar subquery its own."""
        scope = Scope(parent=parent, ctes=ctes)
        contribs: list[list[Contribution]] = []
        for row in node.expressions:
            items = row.expressions if type(row) is exp.Tuple else [row]
            if contribs and len(items) != len(contribs):
                ctx.problem(f"VALUES rows have {len(contribs)} and {len(items)} columns")
            for position, item in enumerate(items):
                if position == len(contribs):
                    contribs.append([])
                if type(item) not in _LEAF_SET:
                    self.value(item, scope, ctx, DIRECT, _NO_FUNCS, None, contribs[position])
        return self._renamed(Relation([f"col{i + 1}" for i in range(len(contribs))], contribs), node)

    def _renamed(self, relation: Relation, node: exp.Expression) -> Relation:
        alias = node.args.get("alias")
        columns = alias.args.get("columns") if isinstance(alias, exp.TableAlias) else None
        if not columns:
            return relation
        names = [c.name.lower() for c in columns]
        names += relation.names[len(names) :]
        return Relation(names, relation.contribs, relation.passthrough)

    def _set_operation(
        self, node: exp.SetOperation, ctx: ReadContext, ctes: dict[str, exp.CTE], parent: Scope | None
    ) -> Relation:
        left = self.query(node.this, ctx, ctes, parent)
        right = self.query(node.expression, ctx, ctes, parent)
        if isinstance(node, exp.Except):
            for contribs in right.contribs:
                self._add_weak(ctx, contribs, "filter")
            return left
        if len(left.names) != len(right.names) and not (left.passthrough or right.passthrough):
            ctx.problem(f"{node.key.upper()} branches have {len(left.names)} and {len(right.names)} columns")
        merged = []
        for position, contribs in enumerate(left.contribs):
            other = right.contribs[position] if position < len(right.contribs) else []
            merged.append(contribs + other)
        return Relation(list(left.names), merged, left.passthrough + right.passthrough)

    # ------------------------------------------------------------------ select

    def _select(
        self, node: exp.Select, ctx: ReadContext, ctes: dict[str, exp.CTE], parent: Scope | None
    ) -> Relation:
        scope = Scope(parent=parent, ctes=ctes)
        args = node.args
        windows = args.get("windows")
        if windows:
            scope.windows = {w.name.lower(): w for w in windows}
        from_ = args.get("from_")
        if from_ is not None:
            self._add_source(scope, from_.this, ctx, ctes)
        joins = args.get("joins") or []
        # the sources each join added, for the sides of its USING columns
        added: list[list[str]] = []
        for join in joins:
            before = len(scope.sources)
            self._add_source(scope, join.this, ctx, ctes)
            added.append(list(scope.sources)[before:])
        for lateral in args.get("laterals") or []:
            self._add_lateral(scope, lateral, ctx)

        for join, right in zip(joins, added, strict=True):
            self._join_condition(join, scope, ctx)
            if join.args.get("using"):
                self._merge_using(join, scope, ctx, right)
        where = args.get("where")
        if where is not None:
            self.filters(where.this, scope, ctx, "filter")
        if self.env.decisions:
            self.join_decisions(node, scope, ctx)

        relation = self._projections(node.expressions, scope, ctx)

        scope.projections = dict(zip(relation.names, node.expressions, strict=False))
        group = args.get("group")
        if group is not None:
            for item in group.expressions:
                self.weak(item, scope, ctx, "group", aliases=True)
        having = args.get("having")
        if having is not None:
            self.weak(having.this, scope, ctx, "filter", aliases=True)
        qualify = args.get("qualify")
        if qualify is not None:
            self.weak(qualify.this, scope, ctx, "filter", aliases=True)
        for key in ("order", "sort", "cluster", "distribute"):
            clause = args.get(key)
            if clause is not None:
                for item in clause.expressions:
                    self.weak(item, scope, ctx, "order", aliases=True)
        return relation

    def _projections(self, projections: list[exp.Expression], scope: Scope, ctx: ReadContext) -> Relation:
        names: list[str] = []
        contribs: list[list[Contribution]] = []
        passthrough: list[Source] = []
        lateral_aliases = self.env.dialect in _LATERAL_ALIAS_DIALECTS
        if projections and type(projections[0].unalias()) is exp.QueryTransform:
            return self._transform(projections, scope, ctx)
        for position, proj in enumerate(projections):
            proj_type = type(proj)
            if proj_type is exp.Alias:
                pass  # the most common item: neither star form
            elif proj_type is exp.Star:
                self._expand_star(
                    scope.sources.values(), cast(exp.Star, proj), ctx, names, contribs, passthrough
                )
                continue
            elif isinstance(proj, exp.Column) and type(proj.this) is exp.Star:
                alias = proj.table.lower()
                source = scope.sources.get(alias)
                if source is None:
                    ctx.problem(f"unknown table alias in {alias}.*")
                    continue
                self._expand_star([source], proj.this, ctx, names, contribs, passthrough)
                continue
            if proj_type is exp.Column:
                # a plain column, the most common item: `_value_column` without the dispatch
                found, column_key = self.resolve_column(
                    cast(exp.Column, proj), scope, ctx, scope.projections is not None
                )
                if column_key is None:
                    out = list(found)
                else:
                    out = []
                    self._compose(found, DIRECT, _NO_FUNCS, column_key, out)
            else:
                out = []
                self.value(proj, scope, ctx, DIRECT, _NO_FUNCS, None, out)
            if proj_type is exp.Alias:
                name = proj.args["alias"].this.lower()
            elif proj_type is exp.Column:
                name = proj.args["this"].this.lower()
            elif isinstance(proj, exp.Alias | exp.Column):
                name = proj.alias_or_name.lower()
            elif isinstance(proj, exp.Dot):
                name = proj.name.lower()
            else:
                name = self._engine_name(proj, position)
            names.append(name)
            contribs.append(out)
            if proj_type is exp.Alias and lateral_aliases:
                if scope.lateral is None:
                    scope.lateral = {}
                scope.lateral.setdefault(name, out)
        return Relation(names, contribs, passthrough)

    def _engine_name(self, proj: exp.Expression, position: int) -> str:
        """The name the engine gives an unaliased expression, so that a CTAS or view column id
        matches the table the engine creates: Spark the expression's text (`upper(name)`,
        `(a + 1)`), Hive and the others `_c<n>` by position in the select list as written (a
        star counts one: `SELECT *, key + 1` names `_c1`)."""
        if self.env.dialect in _SPARK_NAMING_DIALECTS:
            name = spark_column_name(proj, self.env.sql_text)
            if name is not None:
                return name.lower()
        return f"_c{position}"

    def _transform(self, projections: list[exp.Expression], scope: Scope, ctx: ReadContext) -> Relation:
        """`SELECT TRANSFORM (cols) USING 'script' [AS (outs)]`: the script is opaque, so every
        input flows to every output with kind `script`. Without AS the outputs are `key` and
        `value` (Hive and Spark); `AS a, b` without parentheses parses as an aliased TRANSFORM
        followed by bare names, which are its outputs too (TRANSFORM is the whole select list)."""
        first = projections[0]
        transform = first.unalias()
        schema = transform.args.get("schema")
        if schema is not None:
            names = [e.name.lower() for e in schema.expressions]
        elif type(first) is exp.Alias:
            names = [first.alias.lower(), *(p.alias_or_name.lower() for p in projections[1:])]
        else:
            names = ["key", "value"]
        out: list[Contribution] = []
        for item in transform.expressions:
            if type(item) is exp.Star:
                # `TRANSFORM(*)`: every column of the FROM items is an input
                star_names: list[str] = []
                star_contribs: list[list[Contribution]] = []
                self._expand_star(scope.sources.values(), item, ctx, star_names, star_contribs, [])
                for contribs in star_contribs:
                    self._compose(contribs, SCRIPT, ("transform",), None, out)
            else:
                self.value(item, scope, ctx, SCRIPT, ("transform",), None, out)
        return Relation(names, [list(out) for _ in names])

    def _expand_star(
        self,
        sources,
        star: exp.Star,
        ctx: ReadContext,
        names: list[str],
        contribs: list[list[Contribution]],
        passthrough: list[Source],
    ) -> None:
        excluded = {c.name.lower() for c in (star.args.get("except_") or [])}
        for source in sources:
            if source.relation is not None:
                if source.relation.passthrough:
                    passthrough.extend(source.relation.passthrough)
                for name, column_contribs in zip(
                    source.relation.names, source.relation.contribs, strict=False
                ):
                    if name not in excluded:
                        names.append(name)
                        contribs.append(column_contribs)
            elif source.columns is not None:
                for name in source.columns:
                    if name not in excluded:
                        names.append(name)
                        contribs.append(
                            [(ids.child(source.table, name), None, DIRECT, _NO_FUNCS, source.occurrence)]
                        )
            else:
                ctx.problem(f"{source.table}.*: columns unknown without a catalog")
                passthrough.append(source)

    # ----------------------------------------------------------------- sources

    def _join_condition(self, join: exp.Join, scope: Scope, ctx: ReadContext) -> None:
        on = join.args.get("on")
        if on is not None:
            self.filters(on, scope, ctx, "join")
        for ident in join.args.get("using") or []:
            self._using_column(ident.name.lower(), scope, ctx)

    def _merge_using(self, join: exp.Join, scope: Scope, ctx: ReadContext, right: list[str]) -> None:
        """`a JOIN b USING (k)`: an unqualified `k` is the join's one merged column, not an
        ambiguous name. As the engine plans it, that is the left side's `k` for an inner, left,
        semi or anti join, the right side's for a right join, and `coalesce(a.k, b.k)` for a full
        join. The left side of a later `USING (k)` is this merged column."""
        using = scope.using if scope.using is not None else {}
        side = join.side.upper()
        lefts = [source for alias, source in scope.sources.items() if alias not in right]
        rights = [scope.sources[alias] for alias in right if alias in scope.sources]
        for ident in join.args["using"]:
            name = ident.name.lower()
            left_value = using.get(name)
            if left_value is None:
                left_value = self._column_of_first(name, lefts, ctx)
            right_value = self._column_of_first(name, rights, ctx)
            if side == "RIGHT":
                value = right_value
            elif side == "FULL":
                value = []
                self._compose(left_value + right_value, EXPRESSION, ("coalesce",), None, value)
            else:
                value = left_value
            if value:
                using[name] = value
        scope.using = using

    def _column_of_first(self, name: str, sources: list[Source], ctx: ReadContext) -> list[Contribution]:
        """Column `name` of the first of `sources` known to have it, else of the first whose
        columns are unknown; none when no source can have it."""
        unknown = None
        for source in sources:
            known = source.known_columns()
            if known is None:
                unknown = unknown or source
            elif name in known:
                return self._source_column(source, name, ctx, name)
        return self._source_column(unknown, name, ctx, name) if unknown is not None else []

    def _add_source(
        self, scope: Scope, item: exp.Expression, ctx: ReadContext, ctes: dict[str, exp.CTE]
    ) -> None:
        # A join group in parentheses, `(a JOIN b ON ...)`, parses as a FROM item carrying
        # its own `joins`; its tables and aliases belong to the enclosing scope, and its ON
        # conditions can only name tables of the group, all added before they are read.
        group_joins = item.args.get("joins")
        if type(item) is exp.Subquery and _is_join_group(item):
            alias = item.alias.lower()
            if not alias:
                self._add_source(scope, item.this, ctx, ctes)
            elif type(item.this) is exp.Table and not item.this.args.get("joins"):
                # `(t) AS x`: the table under another name
                self._add_item(scope, item.this, ctx, ctes)
                scope.add(alias, scope.sources.pop((item.this.alias or item.this.name).lower()))
            else:
                # `(a JOIN b ...) AS x` is a derived table: outside it only `x` is visible,
                # with the columns of the group's items in order.
                inner = Scope(parent=scope.parent, ctes=scope.ctes)
                self._add_source(inner, item.this, ctx, ctes)
                names: list[str] = []
                contribs: list[list[Contribution]] = []
                passthrough: list[Source] = []
                self._expand_star(inner.sources.values(), exp.Star(), ctx, names, contribs, passthrough)
                relation = self._renamed(Relation(names, contribs, passthrough), item)
                scope.add(alias, Source(alias, relation=relation))
        else:
            self._add_item(scope, item, ctx, ctes)
            pivots = item.args.get("pivots")
            if pivots:
                self._apply_pivots(scope, pivots, ctx)
        if group_joins:
            for join in group_joins:
                self._add_source(scope, join.this, ctx, ctes)
            for join in group_joins:
                self._join_condition(join, scope, ctx)

    def _add_item(
        self, scope: Scope, item: exp.Expression, ctx: ReadContext, ctes: dict[str, exp.CTE]
    ) -> None:
        if type(item) is exp.Table:
            this = item.this
            if type(this) is not exp.Identifier and isinstance(this, exp.Expression):
                if isinstance(this, _GENERATORS):
                    # `FROM t, explode(arr) AS x(e)`: a generator in FROM, as a lateral view
                    self._add_lateral(scope, exp.Lateral(this=item.this, alias=item.args.get("alias")), ctx)
                    return
                # Another table-valued function in FROM.
                relation = Relation([], [])
                ctx.problem(f"table function {item.this.sql(dialect=self.env.dialect)} is not resolved")
                scope.add(item.alias_or_name.lower(), Source(item.alias_or_name.lower(), relation=relation))
                return
            name = table_name(item)
            alias = (item.alias or item.name).lower()
            if item.args.get("db") is None:
                cte = ctes.get(name)
                if cte is not None and id(cte) not in self._expanding:
                    recursive = self._is_recursive(cte, name)
                    # a recursive CTE sees itself (its self-reference); any other does not
                    visible = {k: v for k, v in ctes.items() if k != name or recursive}
                    # A CTE read again under the same conditions resolves the same way:
                    # its walk is replayed (TPC-DS reads one CTE up to six times).
                    key = (
                        id(cte),
                        id(ctx),
                        self.env.default_database,
                        frozenset(self._expanding),
                        tuple((k, id(v)) for k, v in visible.items()),
                    )
                    cached = self._cte_walks.get(key)
                    if cached is not None and cached[0] is ctx:
                        relation = _replay(cached[1], cached[2], ctx)
                    else:
                        start = len(ctx.occurrences)
                        self._expanding.add(id(cte))
                        try:
                            if recursive:
                                relation = self._recursive_cte(cte, name, ctx, visible)
                            else:
                                relation = self._renamed(self.query(cte.this, ctx, visible), cte)
                        finally:
                            self._expanding.discard(id(cte))
                        self._cte_walks[key] = (ctx, relation, _snapshot(ctx.occurrences[start:]))
                    scope.add(alias, Source(alias, relation=self._renamed(relation, item)))
                    return
                bound = self._recursion.get(id(cte)) if cte is not None else None
                if bound is not None:
                    # a recursive CTE's self-reference: the rows it has produced so far
                    scope.add(alias, Source(alias, relation=self._renamed(bound, item)))
                    return
                view = self.env.temp_views.get(name)
                if view is not None and id(view[0]) not in self._expanding:
                    definition, database = view
                    # the definition came from another statement, whose text was not looked at
                    saved = self.env.default_database, self.windows_possible
                    self.env.default_database, self.windows_possible = database, True
                    self._expanding.add(id(definition))
                    try:
                        relation = self.query(definition, ctx)
                    finally:
                        self.env.default_database, self.windows_possible = saved
                        self._expanding.discard(id(definition))
                    scope.add(alias, Source(alias, relation=self._renamed(relation, item)))
                    return
                if cte is not None or view is not None:
                    # Met inside its own definition (mutually referring CTEs, a view
                    # redefined over itself): the name can only mean a table.
                    ctx.problem(
                        f"{name} refers to itself; read as table {table_id(item, self.env.default_database, self.env.default_catalog)}"
                    )
            location = file_source(item) if item.args.get("db") is not None else None
            if location is not None:
                try:
                    tid = ids.path_table(location)
                except WatershedError as exc:
                    raise StatementError(f"bad file location {location!r}: {exc}") from None
            else:
                tid = table_id(item, self.env.default_database, self.env.default_catalog)
            entry = self.env.catalog.get(tid)
            if entry is not None:
                # A table the catalog describes is partitioned exactly as it says.
                partitions = entry.partition_set
                occurrence = Occurrence(tid, partitions)
                source = Source(alias, table=tid, columns=entry.all_columns, occurrence=occurrence)
                source._column_set = entry.column_set
            else:
                occurrence = Occurrence(tid, self.env.partition_columns)
                source = Source(alias, table=tid, occurrence=occurrence)
            ctx.occurrences.append(occurrence)
            scope.add(alias, source)
            return
        if isinstance(item, exp.Subquery):
            relation = self._renamed(self.query(item.this, ctx, ctes), item)
            alias = item.alias.lower() or f"_subquery{len(scope.sources)}"
            scope.add(alias, Source(alias, relation=relation))
            return
        if isinstance(item, exp.Lateral):
            self._add_lateral(scope, item, ctx)
            return
        if isinstance(item, exp.Values):
            relation = self._values(item, ctx, ctes, scope.parent)
            alias = item.alias.lower() or f"_values{len(scope.sources)}"
            scope.add(alias, Source(alias, relation=relation))
            return
        if isinstance(item, exp.Unnest):
            alias = item.alias.lower() or f"_unnest{len(scope.sources)}"
            out: list[Contribution] = []
            for expression in item.expressions:
                self.value(expression, scope, ctx, EXPRESSION, ("explode",), None, out)
            table_alias = item.args.get("alias")
            columns = table_alias.args.get("columns") if table_alias else None
            names = [c.name.lower() for c in columns] if columns else ["col"]
            scope.add(alias, Source(alias, relation=Relation(names, [list(out) for _ in names])))
            return
        ctx.problem(f"unsupported FROM item {item.key}")

    # ---------------------------------------------------------- pivot, unpivot

    def _is_recursive(self, cte: exp.CTE, name: str) -> bool:
        """A CTE whose UNION reads itself, under `WITH RECURSIVE` or in a dialect that recurses
        without the word (T-SQL, Oracle, Snowflake). Elsewhere its name inside its own definition
        is another table."""
        with_ = cte.parent
        declared = isinstance(with_, exp.With) and bool(with_.args.get("recursive"))
        if not declared and self.env.dialect not in _IMPLICIT_RECURSION_DIALECTS:
            return False
        return isinstance(cte.this, exp.Union) and any(
            _reads_table(branch, name) for branch in _union_branches(cte.this)
        )

    def _recursive_cte(
        self, cte: exp.CTE, name: str, ctx: ReadContext, visible: dict[str, exp.CTE]
    ) -> Relation:
        """`WITH RECURSIVE r AS (anchor UNION [ALL] step)`: `r` holds the anchor's rows, then the
        step's over the rows so far. So its columns take the anchor's sources, then the step's,
        its self-reference reading what the columns hold so far, until no column gains a source
        (column, key, kind): a column reached through another one (`SELECT r.b AS a, e.x AS b`)
        takes the other's sources a pass later. The self-reference is no table read."""
        branches = _union_branches(cte.this)
        steps = [branch for branch in branches if _reads_table(branch, name)]
        anchors = [branch for branch in branches if not _reads_table(branch, name)]
        if not anchors:
            ctx.problem(f"recursive {name} has no branch that does not read it")
            return self._renamed(self.query(cte.this, ctx, visible), cte)
        relation = self._renamed(self.query(anchors[0], ctx, visible), cte)
        for anchor in anchors[1:]:
            relation = self._grown(relation, self.query(anchor, ctx, visible), ctx)[0]
        # A pass adds sources or ends the walk. A source reaches a column directly or through
        # the other columns, so one pass per column and one to see nothing change suffice.
        for _ in range(len(relation.names) + 1):
            grew = False
            for step in steps:
                stepped = self._bound_query(cte, relation, step, ctx, visible)
                relation, more = self._grown(relation, stepped, ctx)
                grew = grew or more
            if not grew:
                break
        return relation

    def _bound_query(
        self,
        cte: exp.CTE,
        rows: Relation,
        branch: exp.Expression,
        ctx: ReadContext,
        visible: dict[str, exp.CTE],
    ) -> Relation:
        # the self-reference reads `rows` without their table occurrences: a filter on it
        # narrows the recursion, not the anchor's read
        self._recursion[id(cte)] = Relation(
            rows.names, [[(*c[:4], None) for c in contribs] for contribs in rows.contribs], rows.passthrough
        )
        try:
            return self.query(branch, ctx, visible)
        finally:
            del self._recursion[id(cte)]

    @staticmethod
    def _grown(relation: Relation, other: Relation, ctx: ReadContext) -> tuple[Relation, bool]:
        """`relation` with the sources `other` adds by position (as UNION merges), and whether it
        gained any."""
        if len(other.names) != len(relation.names) and not (relation.passthrough or other.passthrough):
            ctx.problem(f"UNION branches have {len(relation.names)} and {len(other.names)} columns")
        contribs = [list(c) for c in relation.contribs]
        grew = False
        for position, found in enumerate(other.contribs[: len(contribs)]):
            seen = {c[:3] for c in contribs[position]}
            for contribution in found:
                if contribution[:3] not in seen:
                    seen.add(contribution[:3])
                    contribs[position].append(contribution)
                    grew = True
        passthrough = relation.passthrough + [s for s in other.passthrough if s not in relation.passthrough]
        return Relation(list(relation.names), contribs, passthrough), grew

    def _apply_pivots(self, scope: Scope, pivots: list[exp.Pivot], ctx: ReadContext) -> None:
        """`FROM t PIVOT (…) [AS p]` / `UNPIVOT (…)`: the FROM item just added becomes the pivoted
        relation, under the pivot's alias if it has one."""
        name = next(reversed(scope.sources))
        source = scope.sources.pop(name)
        scope._unqualified.clear()
        for pivot in pivots:
            inner = Scope(parent=scope.parent, ctes=scope.ctes)
            inner.add(name, source)
            if pivot.args.get("unpivot"):
                relation = self._unpivot(pivot, source, inner, ctx)
            else:
                relation = self._pivot(pivot, source, inner, ctx)
            name = pivot.alias.lower() or name
            source = Source(name, relation=relation)
        scope.add(name, source)

    def _remaining(
        self, source: Source, used: set[str], ctx: ReadContext
    ) -> tuple[list[str], list[list[Contribution]], list[Source]]:
        """The columns of a pivoted source that the pivot does not name: they pass through (and
        group the pivot); unknown without a catalog, then looked up in the source by name."""
        if source.relation is not None and not source.relation.passthrough:
            ordered = source.relation.names
        elif source.columns is not None:
            ordered = source.columns
        else:
            return [], [], [source]
        names = [n for n in ordered if n not in used]
        return names, [self._source_column(source, n, ctx, n) for n in names], []

    def _pivot(self, pivot: exp.Pivot, source: Source, scope: Scope, ctx: ReadContext) -> Relation:
        # Each pivot column is an aggregate over the rows whose FOR columns hold its value: the
        # FOR columns decide like a CASE condition, the other columns group.
        aggregates = pivot.expressions
        fields = pivot.args.get("fields") or []
        used: set[str] = set()
        for node in [*aggregates, *(f.this for f in fields)]:
            used.update(c.name.lower() for c in node.find_all(exp.Column))
            if type(node) is exp.Identifier:
                used.add(node.name.lower())
        condition: list[Contribution] = []
        for field_ in fields:
            self.weak(field_.this, scope, ctx, "condition")
            if self.env.conditions_as_lineage:
                self.value(field_.this, scope, ctx, CONDITIONAL, _NO_FUNCS, None, condition)
        per_aggregate: list[list[Contribution]] = []
        for aggregate in aggregates:
            out: list[Contribution] = []
            self.value(aggregate.unalias(), scope, ctx, DIRECT, _NO_FUNCS, None, out)
            per_aggregate.append(out + condition)
        values: list[str] = [""]
        for field_ in fields:
            values = [
                f"{prefix}_{text}" if prefix else text
                for prefix in values
                for text in (_pivot_value_name(v) for v in field_.expressions)
            ]
        names = [c.name.lower() for c in pivot.args.get("columns") or []]
        if len(names) != len(values) * len(aggregates):
            names = [
                value if len(aggregates) == 1 else f"{value}_{_aggregate_name(aggregate)}"
                for value in values
                for aggregate in aggregates
            ]
        group_names, group_contribs, passthrough = self._remaining(source, used, ctx)
        for contribs in group_contribs:
            self._add_weak(ctx, contribs, "group")
        pivoted = [list(per_aggregate[i % len(aggregates)]) for i in range(len(names))] if aggregates else []
        return Relation(group_names + names, group_contribs + pivoted, passthrough)

    def _unpivot(self, unpivot: exp.Pivot, source: Source, scope: Scope, ctx: ReadContext) -> Relation:
        # `UNPIVOT (v FOR n IN (a, b AS x))`: the value column(s) take every listed column (one
        # per tuple position for `(v1, v2) FOR n IN ((a, b), (c, d))`); the name column holds
        # the listed names, literals; the other columns pass through.
        value_names: list[str] = []
        for node in unpivot.expressions:
            items = node.expressions if type(node) is exp.Tuple else [node]
            value_names.extend(i.name.lower() for i in items)
        fields = unpivot.args.get("fields") or []
        name_columns = [f.this.name.lower() for f in fields]
        used: set[str] = set()
        values: list[list[Contribution]] = [[] for _ in value_names]
        for field_ in fields:
            for entry in field_.expressions:
                if type(entry) is exp.PivotAlias:
                    entry = entry.this
                columns = entry.expressions if type(entry) is exp.Tuple else [entry]
                for position, column in enumerate(columns):
                    used.update(c.name.lower() for c in column.find_all(exp.Column))
                    if position < len(values):
                        self.value(column, scope, ctx, DIRECT, _NO_FUNCS, None, values[position])
        rest_names, rest_contribs, passthrough = self._remaining(source, used, ctx)
        return Relation(
            rest_names + name_columns + value_names,
            rest_contribs + [[] for _ in name_columns] + values,
            passthrough,
        )

    def _add_lateral(self, scope: Scope, lateral: exp.Lateral, ctx: ReadContext) -> None:
        alias_node = lateral.args.get("alias")
        alias = alias_node.name.lower() if alias_node is not None else f"_lateral{len(scope.sources)}"
        columns = [c.name.lower() for c in (alias_node.args.get("columns") or [])] if alias_node else []
        function = lateral.this
        names = columns
        contribs: list[list[Contribution]] = []
        if isinstance(function, exp.Anonymous) and str(function.this).lower() == "json_tuple":
            source, *keys = function.expressions
            for position, _name in enumerate(names):
                out: list[Contribution] = []
                key = _key_from_bracket(keys[position]) if position < len(keys) else None
                self.value(source, scope, ctx, DIRECT, ("json_tuple",), key, out)
                contribs.append(out)
        elif type(function) is exp.Stack:
            # `stack(n, v1, v2, ...)` spreads its values over the columns in turn: with two
            # columns, the first takes v1, v3, ... It only moves values (Hive's unpivot idiom
            # `stack(2, 'a', a, 'b', b)`), so they are direct, as UNPIVOT's.
            values = function.expressions
            if not names:
                names = [f"col{i}" for i in range(max(1, len(values) // max(1, _int(function.this))))]
            contribs = []
            for position in range(len(names)):
                out = []
                for value in values[position :: len(names)]:
                    self.value(value, scope, ctx, DIRECT, _NO_FUNCS, None, out)
                contribs.append(out)
        elif isinstance(function, exp.Posexplode):
            out = []
            self.value(function.this, scope, ctx, EXPRESSION, ("posexplode",), None, out)
            if not names:
                names = ["pos", "col"]
            # strict: a position counts the elements before it, so what the array holds decides it
            position = (
                [(c[0], None, max(c[2], CONDITIONAL), (*c[3], "decides:position"), None) for c in out]
                if self.env.decisions
                else []
            )
            contribs = [position if n == 0 else list(out) for n in range(len(names))]
        else:
            out = []
            fname = function_name(function)
            for child in function.iter_expressions():
                self.value(child, scope, ctx, EXPRESSION, (fname,), None, out)
            if not names:
                names = ["col"]
            contribs = [list(out) for _ in names]
        scope.add(alias, Source(alias, relation=Relation(names, contribs)))

    def join_decisions(self, node: exp.Select, scope: Scope, ctx: ReadContext) -> None:
        """Strict mode (`ResolverEnv.decisions`), once a SELECT's joins and WHERE are read: the
        gateway's resolver (ingest.points) makes the columns a join condition compares a read
        with decide that read's columns. The lineage resolver records nothing more."""

    def _using_column(self, name: str, scope: Scope, ctx: ReadContext) -> None:
        for source in scope.sources.values():
            known = source.known_columns()
            if known is not None and name not in known:
                continue
            self._add_weak(ctx, self._source_column(source, name, ctx, name), "join")

    # ----------------------------------------------------------------- columns

    def _source_column(self, source: Source, name: str, ctx: ReadContext, shown: str) -> list[Contribution]:
        if source.relation is not None:
            found = source.relation.lookup(name)
            if found is not None:
                return found
            for inner in source.relation.passthrough:
                return self._source_column(inner, name, ctx, shown)
            ctx.problem(f"unknown column {shown}")
            return []
        if shown == name:
            return source.base_column(name, ctx)
        column_set = source._column_set
        if column_set is not None and name not in column_set:
            ctx.problem(f"unknown column {shown} (not in {source.table})")
        return [(ids.child(source.table, name), None, DIRECT, _NO_FUNCS, source.occurrence)]  # type: ignore[arg-type]

    def _find_unqualified(self, name: str, scope: Scope, ctx: ReadContext) -> Source | bool | None:
        """The one source of `scope` that has column `name`; False when ambiguous."""
        memo = scope._unqualified
        if name in memo:
            return memo[name]
        found = memo[name] = self._find_unqualified_in(name, scope.sources)
        return found

    @staticmethod
    def _find_unqualified_in(name: str, sources: dict[str, Source]) -> Source | Literal[False] | None:
        if len(sources) == 1:
            only = next(iter(sources.values()))
            known = only.known_columns()
            if known is None or name in known:
                return only
            return None
        # The first source having the column, False once a second has it; likewise for
        # sources whose columns are unknown, which only count when none has it.
        having: Source | Literal[False] | None = None
        unknown: Source | Literal[False] | None = None
        for source in sources.values():
            known = source._column_set
            if known is None:
                known = source.known_columns()
                if known is None:
                    unknown = source if unknown is None else False
                    continue
            if name in known:
                if having is not None:
                    return False
                having = source
        return having if having is not None else unknown

    def resolve_column(
        self, node: exp.Column, scope: Scope, ctx: ReadContext, aliases: bool = False
    ) -> tuple[list[Contribution], str | None]:
        """Contributions of a column reference and the nested key it selects."""
        args = node.args
        qualifier = args.get("table")
        if qualifier is not None and args.get("db") is None and type(qualifier) is exp.Identifier:
            # The common `alias.column` form, without building the parts list.
            alias = qualifier.this.lower()
            current: Scope | None = scope
            while current is not None:
                source = current.sources.get(alias)
                if source is not None:
                    name = args["this"].this.lower()
                    if source.relation is None:
                        base = source._base
                        if base is not None:
                            hit = base.get(name)
                            if hit is not None:
                                return hit, None
                        return source.base_column(name, ctx), None
                    return self._source_column(source, name, ctx, name), None
                current = current.parent
        if qualifier is None:
            return self._resolve_name(args["this"].name.lower(), scope, ctx, aliases)
        parts = [p.name.lower() for p in node.parts]
        if len(parts) == 1:
            return self._resolve_name(parts[0], scope, ctx, aliases)
        # qualified: alias.col[.field...], db.table.col, or struct.field[...]
        current = scope
        while current is not None:
            source = current.sources.get(parts[0])
            if source is not None:
                return self._source_column(source, parts[1], ctx, ".".join(parts[:2])), _path(parts[2:])
            if len(parts) >= 4:
                # catalog.db.table.column
                catalog = None if parts[0] == self.env.default_catalog else parts[0]
                qualified = ids.join(ids.qualify(catalog, parts[1]), parts[2])
                for source in current.sources.values():
                    if source.table == qualified:
                        return self._source_column(source, parts[3], ctx, ".".join(parts[:4])), _path(
                            parts[4:]
                        )
            if len(parts) >= 3:
                qualified = ids.join(parts[0], parts[1])
                for source in current.sources.values():
                    if source.table == qualified or (
                        source.table is not None
                        and source.alias == parts[1]
                        and parts[0] == ids.split(source.table)[0]
                    ):
                        return self._source_column(source, parts[2], ctx, ".".join(parts[:3])), _path(
                            parts[3:]
                        )
            current = current.parent
        # not an alias: a struct column accessed by field
        return self._unqualified(parts[0], parts[1:], scope, ctx)

    def _resolve_name(
        self, name: str, scope: Scope, ctx: ReadContext, aliases: bool
    ) -> tuple[list[Contribution], str | None]:
        """An unqualified column: a lambda parameter, a select item's alias, or a FROM item's column."""
        if scope.lambda_names and name in scope.lambda_names:
            return [], None
        if aliases and scope.projections is not None and name in scope.projections:
            found_in = self._find_unqualified(name, scope, ctx)
            if not isinstance(found_in, Source):
                # The select list is evaluated in the FROM scope, where its own
                # aliases are not visible: resolving `c0 AS c0` (or an
                # ambiguous `c0`) must not come back to this alias.
                from_scope = self._from_scope(scope)
                out: list[Contribution] = []
                self.value(scope.projections[name], from_scope, ctx, DIRECT, _NO_FUNCS, None, out)
                return out, None
        return self._unqualified(name, [], scope, ctx)

    @staticmethod
    def _from_scope(scope: Scope) -> Scope:
        """`scope` without its select list's aliases: where a select item is evaluated."""
        found = Scope(
            sources=scope.sources,
            parent=scope.parent,
            lambda_names=scope.lambda_names,
            ctes=scope.ctes,
            lateral=scope.lateral,
            windows=scope.windows,
        )
        found.using = scope.using
        return found

    def _window_alias(self, name: str, scope: Scope, ctx: ReadContext) -> exp.Expression | None:
        """The select item `name` names when it computes a window and no FROM column has the name."""
        if not self.windows_possible:
            return None
        projection = scope.projections.get(name) if scope.projections is not None else None
        if projection is None:
            return None
        windowed = scope._windowed.get(name)
        if windowed is None:
            windowed = scope._windowed[name] = projection.find(exp.Window) is not None
        if not windowed:
            return None
        if isinstance(self._find_unqualified(name, scope, ctx), Source):
            return None
        return cast(exp.Expression, projection.unalias())

    def _unqualified(
        self, name: str, rest: list[str], scope: Scope, ctx: ReadContext
    ) -> tuple[list[Contribution], str | None]:
        current: Scope | None = scope
        while current is not None:
            using = current.using
            if using is not None and name in using:
                # a USING join's merged column (`_merge_using`)
                return using[name], _path(rest)
            memo = current._unqualified
            if name in memo:
                found = memo[name]
            else:
                found = memo[name] = self._find_unqualified_in(name, current.sources)
            lateral = current.lateral
            if (
                lateral is not None
                and name in lateral
                and found is not False
                and (found is None or found.known_columns() is None)
                and self.env.dialect in _LATERAL_ALIAS_DIALECTS
            ):
                # An earlier alias of the select list, in a dialect that has lateral aliases (Hive
                # has none). A column the FROM items are known to have wins, as in Spark; with their
                # columns unknown the alias is taken; an ambiguous name stays ambiguous.
                return lateral[name], _path(rest)
            if found is False:
                ctx.problem(f"ambiguous column {name}")
                return [], None
            if found is not None:
                if not rest:
                    base = found._base
                    if base is not None:
                        # a known column of a base table read before: the common case
                        hit = base.get(name)
                        if hit is not None:
                            return hit, None
                    return self._source_column(found, name, ctx, name), None
                return self._source_column(found, name, ctx, name), _path(rest)
            current = current.parent
        bases = [source for source in scope.sources.values() if source.table is not None]
        if len(scope.sources) == 1 and bases:
            ctx.problem(f"unknown column {name} (not in {bases[0].table})")
        elif scope.sources:
            ctx.problem(f"unknown column {name}")
        return [], None

    # --------------------------------------------------------------- values

    def value(
        self,
        node: exp.Expression,
        scope: Scope,
        ctx: ReadContext,
        kind: int,
        funcs: tuple[str, ...],
        key: str | None,
        out: list[Contribution],
    ) -> None:
        """Append to `out` the contributions of `node`'s value.

        `kind` and `funcs` describe the path from the output down to `node`
        (functions outermost first); `key` is a nested key selected above it.
        Dispatch is by exact class through a table, because this is the
        hottest function of the extractor.
        """
        cls = type(node)
        while cls is exp.Alias or cls is exp.Paren:
            node = node.args["this"]
            cls = type(node)
        if cls is exp.Column:
            self._value_column(node, scope, ctx, kind, funcs, key, out)
            return
        self._nesting += 1
        try:
            if self._nesting > self._max_nesting:
                check_nesting(self._nesting)
            handler = _HANDLERS.get(cls)
            if handler is not None:
                handler(self, node, scope, ctx, kind, funcs, key, out)
            elif isinstance(node, exp.Query):
                self._value_subquery(node, scope, ctx, kind, funcs, key, out)
            else:
                self._value_function(node, scope, ctx, kind, funcs, key, out)
        finally:
            self._nesting -= 1

    def _value_leaf(self, node, scope, ctx, kind, funcs, key, out) -> None:
        return None

    def _value_next_value_for(self, node, scope, ctx, kind, funcs, key, out) -> None:
        # T-SQL `NEXT VALUE FOR Sequences.InvoiceID`: a sequence's next number, read from no
        # column (the dotted name is the sequence's); `OVER (ORDER BY c)` only orders the numbering.
        order = node.args.get("order")
        if isinstance(order, exp.Order):
            for item in order.expressions:
                self.weak(item, scope, ctx, "order")

    def _value_column(self, node, scope, ctx, kind, funcs, key, out) -> None:
        if type(node.args["this"]) is exp.Star:
            return
        found, column_key = self.resolve_column(node, scope, ctx, scope.projections is not None)
        if not funcs and key is None and column_key is None and kind == DIRECT:
            out.extend(found)
            return
        full_key = _join_key(column_key, key)
        path = tuple(reversed(funcs))
        for column_id, inner_key, inner_kind, inner_funcs, _occurrence in found:
            out.append(
                (
                    column_id,
                    _join_key(inner_key, full_key),
                    inner_kind if inner_kind > kind else kind,
                    inner_funcs + path if path else inner_funcs,
                    None,
                )
            )

    def _value_wrapper(self, node, scope, ctx, kind, funcs, key, out) -> None:
        self.value(node.args["this"], scope, ctx, kind, funcs, key, out)

    def _value_distinct(self, node, scope, ctx, kind, funcs, key, out) -> None:
        for child in node.expressions:
            self.value(child, scope, ctx, kind, funcs, key, out)

    def _value_cast(self, node, scope, ctx, kind, funcs, key, out) -> None:
        name = "cast"
        to = node.args.get("to")
        if self.env.decisions and isinstance(to, exp.DataType) and not to.is_type(*exp.DataType.TEXT_TYPES):
            # strict: a cast to another type than text may lose part of the value (a leading
            # zero, a format), so it is no whole-value pass: `cast:<type>`
            name = f"cast:{to.this.value.lower()}"
        self.value(node.args["this"], scope, ctx, kind, (*funcs, name), key, out)

    def _value_json(self, node, scope, ctx, kind, funcs, key, out) -> None:
        path_key = _key_from_json_path(node.expression)
        self.value(node.this, scope, ctx, kind, (*funcs, "get_json_object"), _join_key(path_key, key), out)

    def _value_bracket(self, node, scope, ctx, kind, funcs, key, out) -> None:
        index = node.expressions[0] if len(node.expressions) == 1 else None
        bracket_key = _key_from_bracket(index) if index is not None else None
        if bracket_key is None:
            for child in node.expressions:
                self.weak(child, scope, ctx, "condition")
                if self.env.decisions:
                    decided = (*funcs, "decides:subscript")
                    self.value(child, scope, ctx, max(kind, CONDITIONAL), decided, None, out)
            self.value(node.this, scope, ctx, max(kind, EXPRESSION), funcs, key, out)
        else:
            self.value(node.this, scope, ctx, kind, funcs, _join_key(bracket_key, key), out)

    def _value_dot(self, node, scope, ctx, kind, funcs, key, out) -> None:
        field_name = node.expression.name.lower()
        self.value(node.this, scope, ctx, kind, funcs, _join_key(f"$.{field_name}", key), out)

    def _window_spec(
        self,
        node: exp.Window,
        scope: Scope,
        ctx: ReadContext,
        group: str = "group",
        order: str = "order",
        out: list[Contribution] | None = None,
        path: tuple[str, ...] = _NO_FUNCS,
    ) -> None:
        """Weak references of a window's PARTITION BY (`group`) and ORDER BY (`order`) columns,
        those of the named window it names (`OVER w`, `OVER (w ORDER BY ...)`) included; with
        `out`, also value sources of kind `window` through `path` (conditions as lineage)."""
        seen: set[str] = set()
        current: exp.Window | None = node
        while current is not None:
            for item in current.args.get("partition_by") or []:
                self.weak(item, scope, ctx, group)
                if out is not None:
                    self.value(item, scope, ctx, WINDOW, path, None, out)
            order_by = current.args.get("order")
            if order_by is not None:
                for item in order_by.expressions:
                    self.weak(item, scope, ctx, order)
                    if out is not None:
                        self.value(
                            item.this if type(item) is exp.Ordered else item,
                            scope,
                            ctx,
                            WINDOW,
                            path,
                            None,
                            out,
                        )
            base = current.args.get("alias")
            if base is None:
                return
            name = base.name.lower()
            if name in seen:
                return
            seen.add(name)
            current = self._named_window(name, scope, ctx)

    @staticmethod
    def _named_window(name: str, scope: Scope, ctx: ReadContext) -> exp.Window | None:
        current: Scope | None = scope
        while current is not None:
            if current.windows is not None and name in current.windows:
                return current.windows[name]
            current = current.parent
        ctx.problem(f"unknown window {name}")
        return None

    def _value_window(self, node, scope, ctx, kind, funcs, key, out) -> None:
        function = node.this
        path = (*funcs, function_name(function))
        if self.env.conditions_as_lineage:
            decided = (*path, "decides:window") if self.env.decisions else path
            self._window_spec(node, scope, ctx, out=out, path=decided)
        else:
            self._window_spec(node, scope, ctx)
        for child in function.iter_expressions():
            self.value(child, scope, ctx, WINDOW, path, key, out)

    def _value_case(self, node, scope, ctx, kind, funcs, key, out) -> None:
        operand = node.args.get("this")
        branch_kind = kind if kind > CONDITIONAL else CONDITIONAL
        as_lineage = self.env.conditions_as_lineage
        decided = (*funcs, "decides:case") if self.env.decisions else funcs
        if operand is not None:
            self.weak(operand, scope, ctx, "condition")
            if as_lineage:
                self.value(operand, scope, ctx, branch_kind, decided, None, out)
        for branch in node.args.get("ifs") or []:
            self.weak(branch.this, scope, ctx, "condition")
            if as_lineage:
                self.value(branch.this, scope, ctx, branch_kind, decided, None, out)
            true = branch.args.get("true")
            if true is not None:
                self.value(true, scope, ctx, branch_kind, funcs, key, out)
        default = node.args.get("default")
        if default is not None:
            self.value(default, scope, ctx, branch_kind, funcs, key, out)

    def _value_if(self, node, scope, ctx, kind, funcs, key, out) -> None:
        self.weak(node.this, scope, ctx, "condition")
        branch_kind = kind if kind > CONDITIONAL else CONDITIONAL
        if self.env.conditions_as_lineage:
            decided = (*funcs, "decides:if") if self.env.decisions else funcs
            self.value(node.this, scope, ctx, branch_kind, decided, None, out)
        for arg in ("true", "false"):
            branch = node.args.get(arg)
            if branch is not None:
                self.value(branch, scope, ctx, branch_kind, funcs, key, out)

    def _value_subquery(self, node, scope, ctx, kind, funcs, key, out) -> None:
        if not self.env.decisions:
            relation = self.query(node, ctx, scope.ctes, scope)
        else:
            # what the subquery's clauses read (a correlated WHERE, EXISTS) decides its value
            outer, ctx.weak = ctx.weak, {}
            try:
                relation = self.query(node, ctx, scope.ctes, scope)
            finally:
                inner, ctx.weak = ctx.weak, outer
                outer.update(inner)
            path = ("decides:subquery", *reversed(funcs))
            decided = max(kind, CONDITIONAL)
            out.extend(
                (column_id, None, decided, path, None) for column_id in dict.fromkeys(c for c, _ in inner)
            )
        if relation.contribs:
            self._compose(relation.contribs[0], kind, funcs, key, out)

    def _value_lambda(self, node, scope, ctx, kind, funcs, key, out) -> None:
        names = frozenset(e.name.lower() for e in node.expressions)
        inner = Scope(
            sources=scope.sources,
            parent=scope.parent,
            projections=scope.projections,
            lambda_names=scope.lambda_names | names,
            ctes=scope.ctes,
            lateral=scope.lateral,
            windows=scope.windows,
        )
        self.value(node.this, inner, ctx, kind, funcs, key, out)

    def _value_function(self, node, scope, ctx, kind, funcs, key, out) -> None:
        cls = type(node)
        family = _CHAIN_FAMILIES.get(cls)
        if family is not None and _CHAIN_FAMILIES.get(type(node.args.get("this"))) == family:
            self._value_chain(node, family, scope, ctx, kind, funcs, out)
            return
        if isinstance(node, exp.AggFunc):
            inner_kind = kind if kind > AGGREGATE else AGGREGATE
        else:
            inner_kind = kind if kind > EXPRESSION else EXPRESSION
        path = (*funcs, function_name(node))
        if self.env.decisions:
            # `sha2(concat(salt(), x))`: a column-free UDF beside x on its path, before the
            # function (the policy tells a secret function's salt from any other)
            salts = [
                function_name(child)
                for child in node.iter_expressions()
                if type(child) is exp.Anonymous and child.find(exp.Column) is None
            ]
            path = (*path, *salts)
        for child in node.iter_expressions():
            if type(child) not in _LEAF_SET:
                self.value(child, scope, ctx, inner_kind, path, None, out)

    def _value_chain(self, node, family, scope, ctx, kind, funcs, out) -> None:
        # `a + b - c + ...` parses left-deep: one level per term. Walking its left spine as
        # a loop keeps a generated thousand-term sum from exhausting the stack. The chain is
        # one n-ary application of its family's operators, so each operand gets each operator
        # above it once: one per level made a term's path as long as the terms before it, the
        # analysis quadratic in the terms (issue 35 item 7), and a function's effect (keep,
        # drop, downgrade, retype) is the same applied once or many times. A path changes only
        # where an operator not yet above appears, so the work stays linear.
        inner_kind = kind if kind > EXPRESSION else EXPRESSION
        levels: list[tuple[exp.Expression | None, str]] = []
        while _CHAIN_FAMILIES.get(type(node)) == family:
            levels.append((node.args.get("expression"), function_name(node)))
            node = node.args.get("this")
        salts: tuple[str, ...] = ()
        if self.env.decisions:
            # a column-free UDF among the operands is beside every other one, as in
            # `_value_function`'s `concat(salt(), x)`
            salts = tuple(
                dict.fromkeys(
                    function_name(operand)
                    for operand in (node, *(right for right, _ in levels))
                    if type(operand) is exp.Anonymous and operand.find(exp.Column) is None
                )
            )
        operands: list[tuple[exp.Expression | None, tuple[str, ...]]] = []
        names: tuple[str, ...] = ()
        path = (*funcs, *salts)
        for right, name in levels:
            if name not in names:
                names = (*names, name)
                path = (*funcs, *names, *salts)
            operands.append((right, path))
        operands.append((node, path))
        for child, child_path in reversed(operands):
            if child is not None and type(child) not in _LEAF_SET:
                self.value(child, scope, ctx, inner_kind, child_path, None, out)

    def _compose(
        self,
        found: list[Contribution],
        kind: int,
        funcs: tuple[str, ...],
        key: str | None,
        out: list[Contribution],
    ) -> None:
        path = tuple(reversed(funcs))
        for column_id, inner_key, inner_kind, inner_funcs, _occurrence in found:
            out.append(
                (column_id, _join_key(inner_key, key), max(inner_kind, kind), inner_funcs + path, None)
            )

    # ------------------------------------------------------------ weak refs

    def weak(
        self, node: exp.Expression, scope: Scope, ctx: ReadContext, role: str, aliases: bool = False
    ) -> None:
        """Record every column under `node` as a weak reference with `role`.

        Only which columns occur matters here, not how they are transformed,
        so this walks the tree without the bookkeeping of `value`; subqueries
        and lambdas, which need scoping, go through `value`.
        """
        weak = ctx.weak
        # select-list aliases are only looked at with `aliases` (restored by the scoped branch)
        projections = scope.projections if aliases else None
        stack = [node]
        while stack:
            current = stack.pop()
            cls = type(current)
            if cls is exp.Column:
                args = current.args
                if type(args["this"]) is exp.Star:
                    continue
                if projections is not None and args.get("table") is None:
                    window = self._window_alias(current.name.lower(), scope, ctx)
                    if window is not None:
                        # `QUALIFY rn = 1` with `row_number() OVER (...) AS rn`: the window itself
                        self.weak(window, self._from_scope(scope), ctx, role)
                        continue
                found, _key = self.resolve_column(cast(exp.Column, current), scope, ctx, aliases=aliases)
                for contribution in found:
                    weak[(contribution[0], role)] = None
            elif cls in _LEAF_SET:
                continue
            elif cls is exp.Window:
                # A window only QUALIFY (or ORDER BY) computes is never written: its spec, named
                # or inline, only decides rows as the clause does (`QUALIFY row_number() OVER
                # (PARTITION BY k ORDER BY t DESC) = 1` keeps rows by k and t: filter).
                self._window_spec(cast(exp.Window, current), scope, ctx, role, role)
                stack.append(current.this)
            elif cls in _SCOPED or (cls not in _UNSCOPED and _is_scoped(cls)):
                out: list[Contribution] = []
                saved = scope.projections
                if not aliases:
                    scope.projections = None
                try:
                    self.value(current, scope, ctx, DIRECT, _NO_FUNCS, None, out)
                finally:
                    scope.projections = saved
                for contribution in out:
                    weak[(contribution[0], role)] = None
            else:
                stack.extend(current.iter_expressions())

    @staticmethod
    def _add_weak(ctx: ReadContext, contribs: list[Contribution], role: str) -> None:
        weak = ctx.weak
        for contribution in contribs:
            weak[(contribution[0], role)] = None

    # -------------------------------------------------------------- filters

    def filters(self, condition: exp.Expression, scope: Scope, ctx: ReadContext, role: str) -> None:
        """Record the columns of a WHERE or ON condition as weak references with `role`,
        and attach its column-versus-literal filters to the table occurrences they filter.

        A predicate's only column is resolved once for both purposes.
        """
        weak = ctx.weak
        for conjunct in conjuncts(condition):
            cls = type(conjunct)
            if cls in _JOIN_KEY_OPERATORS:
                left, right = conjunct.args.get("this"), conjunct.args.get("expression")
                if (
                    type(left) is exp.Column
                    and type(right) is exp.Column
                    and type(left.args["this"]) is not exp.Star
                    and type(right.args["this"]) is not exp.Star
                ):
                    # `a.k = b.k`, most of a TPC-DS WHERE: both columns weak, never a filter
                    # (what `weak` would do, in its order: the right side first)
                    for column in (right, left):
                        found, _key = self.resolve_column(column, scope, ctx)
                        for contribution in found:
                            weak[(contribution[0], role)] = None
                    continue
            branches = disjuncts(conjunct) if cls is exp.Or else [conjunct]
            if len(branches) == 1:
                raw = normalise(conjunct)
                if raw is None:
                    self.weak(conjunct, scope, ctx, role)
                    continue
                for occurrence, column_name in self._occurrences_of(raw.column, scope, ctx, weak, role):
                    self._record(occurrence, column_name, raw)
                continue
            self.weak(conjunct, scope, ctx, role)
            maybe_raws = [normalise(branch) for branch in branches]
            raws = [r for r in maybe_raws if r is not None]
            if len(raws) != len(maybe_raws):
                continue
            targets = [self._occurrences_of(r.column, scope, ctx) for r in raws]
            first = targets[0]
            if not first or any(
                [(id(o), c) for o, c in t] != [(id(o), c) for o, c in first] for t in targets
            ):
                continue
            for occurrence, column_name in first:
                if all(r.op in ("=", "in") for r in raws):
                    merged = RawPredicate(raws[0].column, "in", [v for r in raws for v in r.values])
                    self._record(occurrence, column_name, merged)
                elif self._is_day_column(occurrence, column_name):
                    occurrence.ranges.append(hull([day_range(r) or DayRange() for r in raws]))

    def _occurrences_of(
        self,
        column: exp.Column,
        scope: Scope,
        ctx: ReadContext,
        weak: dict[tuple[str, str], None] | None = None,
        role: str = "",
    ) -> list[tuple[Occurrence, str]]:
        """The table occurrences and columns a filter column is a bare copy of (several through a UNION)."""
        found, key = self.resolve_column(column, scope, ctx)
        if weak is not None:
            for contribution in found:
                weak[(contribution[0], role)] = None
        if key is not None or not found:
            return []
        targets = []
        for column_id, inner_key, kind, funcs, occurrence in found:
            if occurrence is None or inner_key is not None or kind != DIRECT or funcs:
                return []
            targets.append((occurrence, ids.name(column_id)))
        return targets

    def _is_day_column(self, occurrence: Occurrence, column: str) -> bool:
        return column in occurrence.partition_columns and column not in self.env.sub_day_columns

    def _record(self, occurrence: Occurrence, column: str, raw: RawPredicate) -> None:
        dialect = self.env.dialect
        if raw.points is not None:
            rendered = [(p.value(), p.render()) for p in raw.points]
        else:
            rendered = [render_value(v, dialect) for v in raw.values]
        values = [r[0] for r in rendered]
        texts = [r[1] for r in rendered]
        op = raw.op
        if op in ("in", "not in"):
            text = f"{column} {op.upper()} ({', '.join(texts)})"
        elif op == "between":
            text = f"{column} BETWEEN {texts[0]} AND {texts[1]}"
        elif op in ("is null", "is not null"):
            text = f"{column} {op.upper()}"
        else:
            text = f"{column} {op.upper()} {texts[0]}"
        occurrence.predicates.append((column, op, values, text))
        if self._is_day_column(occurrence, column):
            bounds = day_range(raw)
            occurrence.ranges.append(bounds)
            if bounds is None:
                occurrence.unparsed.append(text)


def may_hold_windows(text: str) -> bool:
    """Whether SQL `text` can parse into a window function: sqlglot makes one only after the word
    OVER (or Oracle's KEEP), never inside a longer name such as OVERWRITE. A comment or a string
    holding the word only costs the search it would have spared. (`str.find` rather than a
    regular expression: a word-bounded, case-blind pattern costs as much as the search.)"""
    lowered = text.lower()
    end = len(lowered)
    for word in ("over", "keep"):
        at = lowered.find(word)
        while at != -1:
            after = at + len(word)
            if (at == 0 or not _is_word_char(lowered[at - 1])) and (
                after == end or not _is_word_char(lowered[after])
            ):
                return True
            at = lowered.find(word, after)
    return False


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


#: dialects whose select items may name an earlier item's alias (Spark 3.4+, Databricks, ...)
_LATERAL_ALIAS_DIALECTS = frozenset({"spark", "databricks", "snowflake", "redshift", "duckdb"})

#: dialects where a CTE reading itself is recursive without `WITH RECURSIVE`
_IMPLICIT_RECURSION_DIALECTS = frozenset({"tsql", "fabric", "oracle", "snowflake"})

#: dialects whose engine names an unaliased select item after its text
_SPARK_NAMING_DIALECTS = frozenset({"spark", "spark2", "databricks"})

#: binary operators written as long chains in generated SQL, by family (see `_value_chain`):
#: a left-deep chain mixing the operators of one family is walked as one loop
_CHAIN_FAMILIES: dict[type, int] = {
    cls: family
    for family, members in enumerate(
        (
            (exp.Add, exp.Sub),
            (exp.Mul, exp.Div, exp.IntDiv, exp.Mod),
            (exp.DPipe,),
            (exp.And, exp.Or, exp.Xor),
            (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.NullSafeNEQ, exp.GT, exp.GTE, exp.LT, exp.LTE),
            (
                exp.BitwiseAnd,
                exp.BitwiseOr,
                exp.BitwiseXor,
                exp.BitwiseLeftShift,
                exp.BitwiseRightShift,
            ),
        )
    )
    for cls in members
}

_LEAVES = (exp.Literal, exp.Null, exp.Boolean, exp.Star, exp.Var, exp.Identifier, exp.DataType)
_LEAF_SET = frozenset(_LEAVES)

#: comparisons whose two sides, when both plain columns, make a join key (`filters`)
_JOIN_KEY_OPERATORS = frozenset({exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE})


#: node classes `weak` hands to `value`, because they need scoping (subqueries, lambdas) or
#: name no column (`NEXT VALUE FOR seq`), and those it walks itself; filled as classes are met
_SCOPED: set[type] = {exp.Subquery, exp.Lambda, exp.NextValueFor}
_UNSCOPED: set[type] = set()


def _is_scoped(cls: type) -> bool:
    if issubclass(cls, exp.Query):
        _SCOPED.add(cls)
        return True
    _UNSCOPED.add(cls)
    return False


#: `QueryResolver.value` dispatch by exact class; anything else is a function or operator.
_HANDLERS: dict[type, Callable[..., None]] = {
    exp.Column: QueryResolver._value_column,
    exp.Alias: QueryResolver._value_wrapper,
    exp.Paren: QueryResolver._value_wrapper,
    exp.Distinct: QueryResolver._value_distinct,
    exp.Cast: QueryResolver._value_cast,
    exp.TryCast: QueryResolver._value_cast,
    exp.JSONExtractScalar: QueryResolver._value_json,
    exp.JSONExtract: QueryResolver._value_json,
    exp.Bracket: QueryResolver._value_bracket,
    exp.Dot: QueryResolver._value_dot,
    exp.Window: QueryResolver._value_window,
    exp.Case: QueryResolver._value_case,
    exp.If: QueryResolver._value_if,
    exp.Subquery: QueryResolver._value_subquery,
    exp.Lambda: QueryResolver._value_lambda,
    exp.NextValueFor: QueryResolver._value_next_value_for,
    **dict.fromkeys(_LEAVES, QueryResolver._value_leaf),
}


#: Spark's file sources read in FROM as ``format.`location` ``
_FILE_FORMATS = frozenset({"parquet", "orc", "csv", "json", "delta", "avro", "text", "binaryfile", "hudi"})


#: generator functions that may stand in FROM like a lateral view
_GENERATORS = (exp.Explode, exp.Posexplode, exp.Inline, exp.Stack)


def _int(node: exp.Expression | None) -> int:
    return (
        int(node.this) if type(node) is exp.Literal and not node.is_string and str(node.this).isdigit() else 1
    )


def _pivot_value_name(node: exp.Expression) -> str:
    """The name a PIVOT value gives its column: its alias, else its text."""
    if type(node) is exp.PivotAlias:
        return node.alias.lower()
    if type(node) is exp.Literal:
        return str(node.this).lower()
    return node.sql().lower()


def _aggregate_name(node: exp.Expression) -> str:
    if type(node) is exp.Alias:
        return node.alias.lower()
    return (spark_column_name(node) or node.sql()).lower()


def file_source(table: exp.Table) -> str | None:
    """The location of ``parquet.`/data/x` `` (Spark reads the files directly), else None. The
    back-quoted name must look like a location (a `/` or a scheme's `:`), so a database that
    happens to be named `parquet` still holds tables."""
    db = table.args.get("db")
    name = table.this
    if (
        db is None
        or table.args.get("catalog") is not None
        or type(name) is not exp.Identifier
        or not name.quoted
        or db.name.lower() not in _FILE_FORMATS
    ):
        return None
    location = name.this
    return location if "/" in location or ":" in location else None


def _union_branches(node: exp.Expression) -> list[exp.Expression]:
    """The queries a chain of UNIONs joins, in order."""
    if isinstance(node, exp.Union):
        return [*_union_branches(node.this), *_union_branches(node.expression)]
    return [node]


def _reads_table(query: exp.Expression, name: str) -> bool:
    """Whether `query` names an unqualified table `name` anywhere."""
    return any(
        table.args.get("db") is None and table.name.lower() == name for table in query.find_all(exp.Table)
    )


def _is_join_group(item: exp.Subquery) -> bool:
    """`(t)`, `(a JOIN b ...)`, `((SELECT ...) x JOIN b ...)`: parentheses around FROM items,
    not a derived table (`(SELECT ...)`, `((SELECT ...))`)."""
    inner = item.this
    while True:
        if type(inner) is exp.Table:
            return True
        if type(inner) is not exp.Subquery:
            return False
        if inner.args.get("joins"):
            return True
        inner = inner.this


def _snapshot(occurrences: list[Occurrence]) -> list[tuple[Occurrence, int, int, int]]:
    """Each occurrence a CTE walk added, with how many predicates, ranges and unparsed texts it
    had when the walk left it: filters outside the CTE attach to the original later, and its
    lists are only ever appended to, so their prefixes are the state to replay."""
    return [(o, len(o.predicates), len(o.ranges), len(o.unparsed)) for o in occurrences]


def _replay(
    relation: Relation, snapshot: list[tuple[Occurrence, int, int, int]], ctx: ReadContext
) -> Relation:
    """What walking the CTE again adds: fresh occurrences (each read of a CTE is filtered on
    its own) and its relation pointing at them. Weak references and problems recur unchanged."""
    # a CTE read by each of many others is replayed a doubling number of times
    check_deadline()
    fresh: dict[int, Occurrence] = {}
    for original, predicates, ranges, unparsed in snapshot:
        copy = Occurrence(
            original.table,
            original.partition_columns,
            original.predicates[:predicates],
            original.ranges[:ranges],
            original.unparsed[:unparsed],
        )
        fresh[id(original)] = copy
        ctx.occurrences.append(copy)
    contribs = [
        [c if c[4] is None else (c[0], c[1], c[2], c[3], fresh.get(id(c[4]), c[4])) for c in column]
        for column in relation.contribs
    ]
    passthrough = [
        source
        if source.occurrence is None
        else Source(
            source.alias,
            table=source.table,
            columns=source.columns,
            occurrence=fresh.get(id(source.occurrence), source.occurrence),
            relation=source.relation,
            _column_set=source._column_set,
        )
        for source in relation.passthrough
    ]
    return Relation(list(relation.names), contribs, passthrough)


def _path(rest: list[str]) -> str | None:
    return "$." + ".".join(rest) if rest else None
