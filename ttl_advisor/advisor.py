"""Column TTL recommendations from downstream partition windows.

The recommended TTL of a column is the widest window its first-level
downstream uses read it over, plus a margin, never longer than the table's own
TTL. A use without a partition bound keeps the column (`keep`); so does a table the catalog
says is read outside the warehouse (`external_readers`, a BI tool: no task shows the read); a
column nobody reads is `unused`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from watershed.graph import ids
from watershed.graph.catalog import Catalog
from watershed.ttl_advisor.model import ColumnUse, Recommendation, Savings
from watershed.ttl_advisor.settings import AdvisorSettings
from watershed.ttl_advisor.uses import UsageIndex

SizeEstimator = Callable[[str, str, int | None], Savings | None]


def recommend(
    column: str,
    uses: list[ColumnUse],
    *,
    table_ttl_days: int | None,
    margin_days: int,
    last_seen_use: str | None = None,
    read_outside_by: list[str] | None = None,
) -> Recommendation:
    if margin_days < 0:
        # a negative margin would cut a TTL below the windows the evidence lists
        raise ValueError(f"margin_days must be 0 or more, not {margin_days}")
    table = ids.parent(column)
    evidence = sorted(uses, key=lambda u: (u.window_days is not None, -(u.window_days or 0), u.task_id))
    base = {
        "column": column,
        "table": table,
        "table_ttl_days": table_ttl_days,
        "margin_days": margin_days,
        "evidence": evidence,
    }
    if not uses and read_outside_by:
        # how far back a dashboard reads is not in the lineage: keep it all
        return Recommendation(status="keep", read_outside_by=list(read_outside_by), **base)
    if not uses:
        return Recommendation(status="unused", last_seen_use=last_seen_use, **base)
    unbounded = [u.task_id for u in evidence if u.window_days is None]
    if unbounded:
        return Recommendation(status="keep", keep_for=sorted(set(unbounded)), **base)
    widest = max(u.window_days for u in uses if u.window_days is not None)
    ttl = widest + margin_days
    capped = table_ttl_days is not None and ttl > table_ttl_days
    if capped:
        ttl = table_ttl_days
    return Recommendation(
        status="ttl",
        ttl_days=ttl,
        max_window_days=widest,
        capped=capped,
        shorter_than_table=table_ttl_days is not None and ttl < table_ttl_days,
        **base,
    )


def advise(
    index: UsageIndex,
    catalog: Catalog,
    *,
    settings: AdvisorSettings | None = None,
    table: str | None = None,
    estimate: SizeEstimator | None = None,
    last_seen: dict[str, str] | None = None,
) -> list[Recommendation]:
    """Recommendations for every column of the catalog's tables and every column the lineage mentions."""
    settings = settings or AdvisorSettings()
    last_seen = last_seen or {}
    recommendations: list[Recommendation] = []
    for column in _columns(index, catalog, table):
        table_id = ids.parent(column)
        entry = catalog.get(table_id)
        table_ttl = entry.ttl_days if entry is not None else None
        rec = recommend(
            column,
            index.uses(column),
            table_ttl_days=table_ttl,
            margin_days=settings.ttl_margin_days,
            last_seen_use=last_seen.get(column),
            read_outside_by=entry.external_readers if entry is not None else None,
        )
        if estimate is not None and rec.status in ("ttl", "unused"):
            keep_days = rec.ttl_days if rec.status == "ttl" else 0
            rec.savings = estimate(table_id, ids.name(column), keep_days)
        recommendations.append(rec)
    return recommendations


def _columns(index: UsageIndex, catalog: Catalog, table: str | None) -> Iterable[str]:
    seen: dict[str, None] = {}
    for table_id, entry in catalog.tables.items():
        if table is None or table_id == table:
            for name in entry.all_columns:
                if name not in entry.partition_column_names:
                    seen[ids.child(table_id, name)] = None
    for column in [*index.used_columns(), *index.columns_seen]:
        table_id, name = ids.split_last(column)
        if table is not None and table_id != table:
            continue
        entry = catalog.get(table_id)
        if entry is not None and name in entry.partition_column_names:
            continue
        seen[column] = None
    return seen


def top_by_savings(
    recommendations: list[Recommendation], n: int, min_savings: int = 0
) -> list[Recommendation]:
    """The `n` recommendations that free the most bytes; those of unknown size come last, widest gap first."""

    def key(rec: Recommendation):
        known = rec.savings is not None
        gap = (rec.table_ttl_days or 0) - (rec.ttl_days or 0) if rec.status == "ttl" else 0
        return (known, rec.savings.bytes if known else 0, gap)

    candidates = [
        r
        for r in recommendations
        if r.status in ("ttl", "unused") and (r.savings is None or r.savings.bytes >= min_savings)
    ]
    if min_savings > 0:
        candidates = [r for r in candidates if r.savings is not None]
    return sorted(candidates, key=key, reverse=True)[:n]
