"""The points walk does no copying it does not need (issue 41): the sides of a condition that
relates several reads (TPC-DS 31's `CASE WHEN ws1.x > 0 THEN ws2.x / ws1.x END > CASE ...`)
are valued on a tree that is new only above the columns set to NULL, not on a whole copy of the
condition per read (`Expression.copy` copies every node's token positions: it cost more than
the valuing). Counted with cProfile's call counts, not timed; the answers themselves are
test_points_snapshot.py's."""

from __future__ import annotations

import cProfile
import json
import pstats

from bench.lineage_bench import CORPORA, read_queries
from watershed.graph.catalog import Catalog, CatalogColumn, CatalogTable
from watershed.ingest.points import parse_query, query_points


def tpcds() -> tuple[Catalog, list[str]]:
    schema = json.loads((CORPORA / "tpcds_schema.json").read_text())
    tables = {
        f"default.{t}": CatalogTable(
            name=f"default.{t}", columns=[CatalogColumn(name=c, type=k) for c, k in cols.items()]
        )
        for t, cols in schema.items()
    }
    return Catalog(tables=tables), read_queries(CORPORA / "tpcds.sql")


def copies_made(statement, catalog) -> int:
    profiler = cProfile.Profile()
    profiler.enable()
    query_points(statement, catalog)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    return sum(calls for (_file, _line, name), (calls, *_rest) in stats.items() if "__deepcopy__" in name)


def test_conditions_relating_several_reads_are_not_copied():
    catalog, queries = tpcds()
    for number in (4, 31):
        statement = parse_query(queries[number - 1])
        before = statement.sql("spark")
        # both hold CASE ... > CASE ... conditions over four reads each
        assert copies_made(statement, catalog) == 0, f"TPC-DS {number}"
        assert statement.sql("spark") == before, f"TPC-DS {number}: the statement changed"
