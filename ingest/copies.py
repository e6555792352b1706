"""Statements that copy a whole table: CREATE TABLE … CLONE, Snowflake's SWAP, Hive's EXCHANGE
PARTITION, and the RENAME of a table from before the script."""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from watershed.graph import ids
from watershed.graph.catalog import CatalogColumn, CatalogTable
from watershed.graph.lineage import ColumnLineage
from watershed.ingest.errors import StatementError
from watershed.ingest.resolve import ReadContext, Scope, table_id
from watershed.ingest.writes import Write, sources_of

# Hive's `ALTER TABLE dest EXCHANGE PARTITION (spec) WITH TABLE src`, which sqlglot keeps as a Command.
EXCHANGE = re.compile(
    r"\s*TABLE\s+(?P<dest>[^\s(]+)\s+EXCHANGE\s+PARTITION\s*\((?P<spec>.*)\)\s*WITH\s+TABLE\s+(?P<src>[^\s;]+)\s*$",
    re.IGNORECASE | re.DOTALL,
)


class CopyStatements:
    """The table copies of `StatementExtractor` (it provides `env`, `catalog` and `resolver`)."""

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
            ColumnLineage(target=ids.child(tid, name), sources=sources_of(c))
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
