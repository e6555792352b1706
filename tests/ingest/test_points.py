"""Permission points of a query (ingest/points.py): tables, output columns, join columns,
row scopes and cells, exact, including the cases where a row condition would be unsound."""

from __future__ import annotations

import pytest

from watershed.graph.catalog import Catalog, CatalogTable
from watershed.ingest.limits import AnalysisLimitError
from watershed.ingest.points import QueryError, catalog_for, parse_query, query_points, tables_named

CATALOG = {
    "default_database": "db",
    "tables": {
        "db.t1": {"columns": ["column1", "column2", "column3"], "partitioned_by": ["dt"]},
        "db.t2": {"columns": ["column1", "column2", "column3"], "partitioned_by": ["dt"]},
        "db.t3": {"columns": ["column1", "name", "dt"]},
        "db.users": {"columns": ["uid", "email", "app"], "partitioned_by": ["dt"]},
        "db.orders": {"columns": ["oid", "uid", "amount"], "partitioned_by": ["dt"]},
    },
}


def _catalog(**views: tuple[str, str]) -> Catalog:
    catalog = Catalog.from_dict(CATALOG)
    for name, (sql, columns) in views.items():
        catalog.with_table(
            CatalogTable(name=name, columns=columns.split(","), view_sql=sql, view_dialect="spark")
        )
    return catalog


def points(sql: str, catalog: Catalog | None = None, **kwargs):
    return query_points(sql, catalog or _catalog(), default_database="db", **kwargs)


def rows(p) -> list[tuple[str, list[str]]]:
    return [(r.table, [c.text for c in r.conditions]) for r in p.rows]


def cells(p) -> list[tuple[str, list[str], list[str]]]:
    return [(c.table, c.columns, [x.text for x in c.conditions]) for c in p.cells]


def outputs(p) -> list[tuple[str, list[tuple[str, str, list[str]]]]]:
    return [(c.name, [(s.column, s.kind, s.functions) for s in c.sources]) for c in p.columns]


# ---------------------------------------------------------------- seed 004


SEED_004 = """
SELECT u.column1, u.column2, u.column3, s.name
FROM (
    SELECT column1, column2, column3, dt FROM t1
    UNION ALL
    SELECT column1, column2, column3, dt FROM t2
) u
JOIN (SELECT column1, name FROM t3 WHERE dt = '2024-01-01') s ON u.column1 = s.column1
WHERE u.dt = '2024-01-01' AND u.column2 = 'zhangsan'
"""


def test_seed_004_example():
    p = points(SEED_004)
    assert p.kind == "select"
    assert p.tables == ["db.t1", "db.t2", "db.t3"]
    assert p.writes == []
    both = ["column2 = 'zhangsan'", "dt = '2024-01-01'"]
    # the join chooses each side's rows by the other side's column1 (the gateway's strict
    # question: masking leaves that out when the two are equally protected)
    by_t3 = (
        "db.t3.column1",
        "conditional-value",
        ["decides:join", "against:db.t1.column1", "against:db.t2.column1"],
    )
    by_u = [
        (f"db.{t}.column1", "conditional-value", ["decides:join", "against:db.t3.column1"])
        for t in ("t1", "t2")
    ]
    assert outputs(p) == [
        ("column1", [("db.t1.column1", "direct", []), ("db.t2.column1", "direct", []), by_t3]),
        ("column2", [("db.t1.column2", "direct", []), ("db.t2.column2", "direct", []), by_t3]),
        ("column3", [("db.t1.column3", "direct", []), ("db.t2.column3", "direct", []), by_t3]),
        ("name", [("db.t3.name", "direct", []), *by_u]),
    ]
    assert p.join_columns == ["db.t1.column1", "db.t2.column1", "db.t3.column1"]
    assert rows(p) == [("db.t1", both), ("db.t2", both), ("db.t3", ["dt = '2024-01-01'"])]
    assert cells(p) == [
        ("db.t1", ["db.t1.column1", "db.t1.column2", "db.t1.column3"], both),
        ("db.t2", ["db.t2.column1", "db.t2.column2", "db.t2.column3"], both),
        ("db.t3", ["db.t3.column1", "db.t3.name"], ["dt = '2024-01-01'"]),
    ]
    condition = p.rows[0].conditions[0]
    assert (condition.column, condition.op, condition.values) == ("column2", "=", ["zhangsan"])
    assert p.unknown_tables == [] and p.problems == []
    assert len(p.query_hash) == 64


# ---------------------------------------------------------------- bad input


def test_parse_error_names_line_and_column():
    with pytest.raises(QueryError, match=r"line 2, column \d+"):
        points("SELECT a\nFROM t1 WHERE (")


def test_two_statements_are_refused():
    with pytest.raises(QueryError, match="2 statements"):
        points("SELECT 1; SELECT 2")


def test_no_statement_is_refused():
    with pytest.raises(QueryError, match="no statement"):
        points("  ;  ")


def test_set_reads_nothing():
    with pytest.raises(QueryError, match="reads nothing"):
        points("SET spark.sql.shuffle.partitions=10")


def test_unknown_table_is_listed():
    p = points("SELECT a FROM nowhere.t WHERE a = 1")
    assert p.tables == ["nowhere.t"]
    assert p.unknown_tables == ["nowhere.t"]
    assert rows(p) == [("nowhere.t", ["a = 1"])]
    assert outputs(p) == [("a", [("nowhere.t.a", "direct", [])])]


def test_unknown_column_is_a_problem():
    p = points("SELECT nope FROM t1")
    assert p.problems == ["unknown column nope (not in db.t1)"]


# ---------------------------------------------------------------- projection


def test_star_expands_in_catalog_order_partition_last():
    p = points("SELECT * FROM t1")
    assert [c.name for c in p.columns] == ["column1", "column2", "column3", "dt"]
    assert [c.position for c in p.columns] == [0, 1, 2, 3]
    assert cells(p) == [("db.t1", ["db.t1.column1", "db.t1.column2", "db.t1.column3", "db.t1.dt"], [])]


def test_functions_and_spark_names():
    p = points("SELECT upper(column1), sha2(column2, 256) AS h, column3 + 1 FROM t1")
    assert outputs(p) == [
        ("upper(column1)", [("db.t1.column1", "expression", ["upper"])]),
        ("h", [("db.t1.column2", "expression", ["sha2"])]),
        ("(column3 + 1)", [("db.t1.column3", "expression", ["add"])]),
    ]


def test_hive_names_unaliased_items_by_position():
    p = query_points("SELECT upper(column1), column2 FROM db.t1", _catalog(), dialect="hive")
    assert [c.name for c in p.columns] == ["_c0", "column2"]
    assert p.dialect == "hive"


def test_a_join_decides_each_read_by_the_other_side_and_keeps_outer_filters():
    # strict mode: each read's columns are decided by what its ON compares them with, through
    # a derived table too; a filter outside on such a column is still a row condition of its read
    p = points(
        "SELECT t.email, t.amount FROM (SELECT u.email, o.amount FROM users u "
        "JOIN orders o ON o.uid = upper(u.uid)) t WHERE t.amount > 5 AND t.email = 'a'"
    )
    assert outputs(p) == [
        (
            "email",
            [
                ("db.users.email", "direct", []),
                ("db.orders.uid", "conditional-value", ["decides:join", "against:db.users.uid via upper"]),
            ],
        ),
        (
            "amount",
            [
                ("db.orders.amount", "direct", []),
                ("db.users.uid", "conditional-value", ["upper", "decides:join", "against:db.orders.uid"]),
            ],
        ),
    ]
    assert rows(p) == [("db.users", ["email = 'a'"]), ("db.orders", ["amount > 5"])]


def test_count_star_gives_a_cell_without_columns():
    p = points("SELECT count(*) FROM t1 WHERE dt = '2024-01-01'")
    assert outputs(p) == [("count(1)", [])]
    assert cells(p) == [("db.t1", [], ["dt = '2024-01-01'"])]


def test_aggregate_kind_and_group_key():
    p = points("SELECT app, sum(amount) AS total FROM users u JOIN orders o ON u.uid = o.uid GROUP BY app")
    assert outputs(p) == [
        (
            "app",
            [
                ("db.users.app", "direct", []),
                ("db.orders.uid", "conditional-value", ["decides:join", "against:db.users.uid"]),
            ],
        ),
        (
            "total",
            [
                ("db.orders.amount", "aggregate", ["sum"]),
                ("db.users.uid", "aggregate", ["decides:join", "against:db.orders.uid", "sum"]),
            ],
        ),
    ]
    assert p.join_columns == ["db.orders.uid", "db.users.uid"]
    assert cells(p) == [
        ("db.orders", ["db.orders.amount", "db.orders.uid"], []),
        ("db.users", ["db.users.app", "db.users.uid"], []),
    ]


def test_union_traces_both_branches_and_filters_both():
    p = points("SELECT c FROM (SELECT column1 AS c FROM t1 UNION SELECT column1 FROM t2) x WHERE c = 'v'")
    assert outputs(p) == [("c", [("db.t1.column1", "direct", []), ("db.t2.column1", "direct", [])])]
    assert rows(p) == [("db.t1", ["column1 = 'v'"]), ("db.t2", ["column1 = 'v'"])]


def test_cte_and_subquery():
    p = points(
        "WITH c AS (SELECT uid, email FROM users WHERE app = 'douyin') "
        "SELECT x.email FROM (SELECT * FROM c) x WHERE x.uid > 10"
    )
    assert outputs(p) == [("email", [("db.users.email", "direct", [])])]
    assert rows(p) == [("db.users", ["app = 'douyin'", "uid > 10"])]
    assert cells(p) == [("db.users", ["db.users.email"], ["app = 'douyin'", "uid > 10"])]


def test_cte_read_twice_under_different_filters_gives_two_cells():
    p = points(
        "WITH c AS (SELECT uid, app FROM users) "
        "SELECT a.uid FROM c a JOIN c b ON a.uid = b.uid WHERE a.app = 'x' AND b.app = 'y'"
    )
    assert rows(p) == [("db.users", ["app = 'x'"]), ("db.users", ["app = 'y'"])]
    assert cells(p) == [
        ("db.users", ["db.users.uid"], ["app = 'x'"]),
        ("db.users", ["db.users.uid"], ["app = 'y'"]),
    ]


def test_self_join_gives_one_scope_per_read():
    p = points(
        "SELECT a.email, b.email FROM users a JOIN users b ON a.uid = b.uid WHERE a.app = 'x' AND b.dt = '2024-01-01'"
    )
    assert rows(p) == [("db.users", ["app = 'x'"]), ("db.users", ["dt = '2024-01-01'"])]
    assert p.join_columns == ["db.users.uid"]
    assert cells(p) == [
        ("db.users", ["db.users.email", "db.users.uid"], ["app = 'x'"]),
        ("db.users", ["db.users.email", "db.users.uid"], ["dt = '2024-01-01'"]),
    ]


def test_same_table_once_filtered_once_not():
    p = points("SELECT email FROM users WHERE app = 'x' UNION ALL SELECT email FROM users")
    assert rows(p) == [("db.users", ["app = 'x'"]), ("db.users", [])]
    assert cells(p) == [("db.users", ["db.users.email"], []), ("db.users", ["db.users.email"], ["app = 'x'"])]


def test_window_function_kind():
    p = points(
        "SELECT uid, row_number() OVER (PARTITION BY app ORDER BY dt) AS rn, sum(uid) OVER () AS s FROM users"
    )
    assert outputs(p) == [
        ("uid", [("db.users.uid", "direct", [])]),
        # the window's spec decides the numbering: a source, marked where it decides
        (
            "rn",
            [
                ("db.users.app", "window", ["decides:window", "row_number"]),
                ("db.users.dt", "window", ["decides:window", "row_number"]),
            ],
        ),
        ("s", [("db.users.uid", "window", ["sum"])]),
    ]


def test_hash_function_kept_in_sources():
    p = points("SELECT md5(email) AS h, sha2(cast(uid AS string), 256) AS k FROM users")
    assert outputs(p) == [
        ("h", [("db.users.email", "expression", ["md5"])]),
        ("k", [("db.users.uid", "expression", ["cast", "sha2"])]),
    ]


def test_constant_compared_with_constant_is_ignored():
    p = points("SELECT email FROM users WHERE 1 = 1 AND 'a' = 'a' AND app IN ('x', 'y')")
    assert rows(p) == [("db.users", ["app IN ('x', 'y')"])]
    assert p.rows[0].conditions[0].values == ["x", "y"]


def test_or_on_one_column_is_an_in_or_across_columns_nothing():
    assert rows(points("SELECT uid FROM users WHERE app = 'a' OR app = 'b'")) == [
        ("db.users", ["app IN ('a', 'b')"])
    ]
    assert rows(points("SELECT uid FROM users WHERE app = 'a' OR uid = 1")) == [("db.users", [])]


def test_variables_are_substituted():
    p = points("SELECT uid FROM users WHERE dt = '${day}'", variables={"day": "2024-02-02"})
    assert rows(p) == [("db.users", ["dt = '2024-02-02'"])]


# ---------------------------------------------------------------- writes


def test_insert_select_writes_and_reads():
    p = points(
        "INSERT OVERWRITE TABLE t2 PARTITION (dt) SELECT column1, column2, column3, dt FROM t1 WHERE dt >= '2024-01-01'"
    )
    assert p.kind == "insert"
    assert p.writes == ["db.t2"]
    assert p.tables == ["db.t1"]
    assert [c.name for c in p.columns] == ["column1", "column2", "column3", "dt"]
    assert rows(p) == [("db.t1", ["dt >= '2024-01-01'"])]


def test_create_table_as_select():
    p = points("CREATE TABLE db.copy AS SELECT uid, email FROM users")
    assert (p.kind, p.writes, p.tables) == ("create-table-as", ["db.copy"], ["db.users"])
    assert outputs(p) == [
        ("uid", [("db.users.uid", "direct", [])]),
        ("email", [("db.users.email", "direct", [])]),
    ]


# ---------------------------------------------------------------- soundness


def test_left_join_on_filter_of_preserved_side_is_dropped():
    p = points(
        "SELECT u.email, o.amount FROM users u LEFT JOIN orders o "
        "ON u.uid = o.uid AND u.app = 'x' AND o.dt = '2024-01-01'"
    )
    assert rows(p) == [("db.users", []), ("db.orders", ["dt = '2024-01-01'"])]


def test_right_and_full_join_on_filters():
    right = points(
        "SELECT u.email FROM users u RIGHT JOIN orders o ON u.uid = o.uid AND u.app = 'x' AND o.amount > 5"
    )
    assert rows(right) == [("db.users", ["app = 'x'"]), ("db.orders", [])]
    full = points(
        "SELECT u.email FROM users u FULL JOIN orders o ON u.uid = o.uid AND u.app = 'x' AND o.amount > 5"
    )
    assert rows(full) == [("db.users", []), ("db.orders", [])]


def test_outer_join_where_filter_is_kept():
    p = points(
        "SELECT u.email FROM users u LEFT JOIN orders o ON u.uid = o.uid WHERE u.app = 'x' AND o.amount > 5"
    )
    assert rows(p) == [("db.users", ["app = 'x'"]), ("db.orders", ["amount > 5"])]


def test_inner_join_on_filters_are_kept():
    p = points("SELECT u.email FROM users u JOIN orders o ON u.uid = o.uid AND u.app = 'x' AND o.amount > 5")
    assert rows(p) == [("db.users", ["app = 'x'"]), ("db.orders", ["amount > 5"])]


def test_outer_filter_does_not_pass_into_window_subquery():
    p = points(
        "SELECT uid, rn FROM (SELECT uid, app, row_number() OVER (ORDER BY dt) AS rn FROM users WHERE dt = 'd') x "
        "WHERE x.app = 'a'"
    )
    assert rows(p) == [("db.users", ["dt = 'd'"])]


def test_outer_filter_does_not_pass_into_oracle_keep_subquery():
    # Oracle's KEEP (...) parses as a window without the word OVER
    p = points(
        "SELECT uid, m FROM (SELECT uid, app, max(dt) KEEP (DENSE_RANK FIRST ORDER BY dt) AS m FROM users "
        "WHERE dt = 'd') x WHERE x.app = 'a'",
        dialect="oracle",
    )
    assert rows(p) == [("db.users", ["dt = 'd'"])]


def test_outer_filter_does_not_pass_into_limit_subquery():
    p = points("SELECT email FROM (SELECT email, app FROM users LIMIT 10) x WHERE app = 'a'")
    assert rows(p) == [("db.users", [])]
    p = points("SELECT email FROM (SELECT email, app FROM users) x WHERE app = 'a' LIMIT 10")
    assert rows(p) == [("db.users", ["app = 'a'"])]


def test_outer_filter_does_not_pass_into_sampled_subquery():
    p = points("SELECT email FROM (SELECT email, app FROM users TABLESAMPLE (10 PERCENT)) x WHERE app = 'a'")
    assert rows(p) == [("db.users", [])]


def test_outer_filter_passes_into_group_by_key():
    p = points("SELECT app, n FROM (SELECT app, count(*) AS n FROM users GROUP BY app) x WHERE app = 'a'")
    assert rows(p) == [("db.users", ["app = 'a'"])]
    assert cells(p) == [("db.users", ["db.users.app"], ["app = 'a'"])]


def test_correlated_filter_on_outer_table_is_dropped():
    p = points(
        "SELECT email FROM users u WHERE NOT EXISTS "
        "(SELECT 1 FROM orders o WHERE o.uid = u.uid AND u.app = 'x' AND o.amount > 5)"
    )
    assert rows(p) == [("db.users", []), ("db.orders", ["amount > 5"])]
    assert p.join_columns == ["db.orders.uid", "db.users.uid"]


def test_in_subquery_gives_join_columns():
    p = points("SELECT email FROM users WHERE uid IN (SELECT uid FROM orders WHERE amount > 5)")
    assert p.join_columns == ["db.orders.uid", "db.users.uid"]
    assert cells(p) == [
        ("db.orders", ["db.orders.uid"], ["amount > 5"]),
        ("db.users", ["db.users.email", "db.users.uid"], []),
    ]


def test_using_join_columns():
    p = points("SELECT email FROM users JOIN orders USING (uid)")
    assert p.join_columns == ["db.orders.uid", "db.users.uid"]


def test_expression_comparison_gives_join_columns_not_filters():
    p = points("SELECT email FROM users u, orders o WHERE upper(u.email) = o.oid AND o.amount > u.uid")
    assert p.join_columns == ["db.orders.amount", "db.orders.oid", "db.users.email", "db.users.uid"]
    assert rows(p) == [("db.users", []), ("db.orders", [])]


# ---------------------------------------------------------------- views


def test_temporary_view_statement():
    p = points("CREATE TEMPORARY VIEW tv AS SELECT email FROM users WHERE app = 'x'")
    assert (p.kind, p.writes, p.tables) == ("temporary-view", [], ["db.users"])
    assert rows(p) == [("db.users", ["app = 'x'"])]
    assert outputs(p) == [("email", [("db.users.email", "direct", [])])]


def test_persistent_view_reads_through_with_its_filter():
    catalog = _catalog(**{"db.v": ("SELECT uid, email FROM db.users WHERE app = 'douyin'", "uid,email")})
    p = points("SELECT email FROM v WHERE uid = 3", catalog)
    assert p.tables == ["db.users"]
    assert outputs(p) == [("email", [("db.users.email", "direct", [])])]
    assert rows(p) == [("db.users", ["app = 'douyin'", "uid = 3"])]


def test_persistent_view_with_declared_names_and_other_database():
    catalog = _catalog(**{"rpt.v": ("SELECT uid, upper(email) FROM users", "id,mail")})
    p = points("SELECT mail FROM rpt.v", catalog)
    # the view's own unqualified names read in its database: `rpt.users` is unknown
    assert p.unknown_tables == ["rpt.users"]
    catalog = _catalog(**{"rpt.v": ("SELECT uid, upper(email) FROM db.users", "id,mail")})
    p = points("SELECT mail FROM rpt.v", catalog)
    assert outputs(p) == [("mail", [("db.users.email", "expression", ["upper"])])]


def test_view_over_view_and_window_view():
    catalog = _catalog(
        **{
            "db.v1": ("SELECT uid, app, rank() OVER (ORDER BY uid) AS r FROM db.users", "uid,app,r"),
            "db.v2": ("SELECT uid, app FROM db.v1", "uid,app"),
        }
    )
    p = points("SELECT uid FROM v2 WHERE app = 'a'", catalog)
    assert p.tables == ["db.users"]
    assert rows(p) == [("db.users", [])]


def test_view_cycle_is_an_error():
    catalog = _catalog(
        **{"db.va": ("SELECT uid FROM db.vb", "uid"), "db.vb": ("SELECT uid FROM db.va", "uid")}
    )
    with pytest.raises(QueryError, match="refer to themselves"):
        points("SELECT uid FROM va", catalog)


# ---------------------------------------------------------------- tables_named, catalog_for


def test_tables_named_skips_ctes_and_keeps_targets():
    sql = "WITH c AS (SELECT * FROM a.x) INSERT INTO t SELECT * FROM c JOIN y ON c.k = y.k"
    assert tables_named(sql) == ["a.x", "default.t", "default.y"]
    with pytest.raises(QueryError):
        tables_named("SELECT FROM WHERE (")


def test_catalog_for_follows_views_until_closed():
    full = _catalog(
        **{
            "db.v1": ("SELECT uid FROM db.v2", "uid"),
            "db.v2": ("SELECT uid FROM db.users JOIN db.orders USING (uid)", "uid"),
        }
    )
    asked: list[list[str]] = []

    def fetch(names: list[str]) -> dict[str, CatalogTable]:
        asked.append(names)
        return {n: full.tables[n] for n in names if n in full.tables}

    catalog = catalog_for("SELECT * FROM v1 JOIN t1 ON 1 = 1 JOIN missing.m", fetch, default_database="db")
    assert asked == [["db.t1", "db.v1", "missing.m"], ["db.v2"], ["db.orders", "db.users"]]
    assert sorted(catalog.tables) == ["db.orders", "db.t1", "db.users", "db.v1", "db.v2"]


def test_catalog_for_cycle_and_depth():
    full = _catalog(**{"db.va": ("SELECT uid FROM db.vb", "uid"), "db.vb": ("SELECT uid FROM db.va", "uid")})

    def fetch(names):
        return {n: full.tables[n] for n in names if n in full.tables}

    with pytest.raises(QueryError, match=r"db.va -> db.vb -> db.va"):
        catalog_for("SELECT * FROM db.va", fetch)
    chain = _catalog(**{f"db.v{i}": (f"SELECT uid FROM db.v{i + 1}", "uid") for i in range(5)})

    def fetch_chain(names):
        return {n: chain.tables[n] for n in names if n in chain.tables}

    with pytest.raises(QueryError, match="deeper than 3"):
        catalog_for("SELECT * FROM db.v0", fetch_chain, max_depth=3)
    assert "db.v4" in catalog_for("SELECT * FROM db.v0", fetch_chain).tables


def test_is_null_on_null_supplying_side_is_no_condition():
    p = points("SELECT u.email FROM users u LEFT JOIN orders o ON u.uid = o.uid WHERE o.oid IS NULL")
    assert rows(p) == [("db.users", []), ("db.orders", [])]
    assert rows(points("SELECT uid FROM users WHERE email IS NOT NULL")) == [
        ("db.users", ["email IS NOT NULL"])
    ]


def test_semi_and_anti_join_on_filters():
    semi = points("SELECT u.email FROM users u LEFT SEMI JOIN orders o ON u.uid = o.uid AND u.app = 'x'")
    assert rows(semi) == [("db.users", ["app = 'x'"]), ("db.orders", [])]
    anti = points(
        "SELECT u.email FROM users u LEFT ANTI JOIN orders o ON u.uid = o.uid AND u.app = 'x' AND o.amount > 1"
    )
    assert rows(anti) == [("db.users", []), ("db.orders", ["amount > 1"])]


def test_insert_values_writes_only():
    p = points("INSERT INTO t1 VALUES ('a', 'b', 'c', 'd')")
    assert (p.kind, p.writes, p.tables, p.rows, p.cells, p.columns) == ("insert", ["db.t1"], [], [], [], [])


def test_update_reads_its_target_without_conditions():
    p = points("UPDATE t1 SET column1 = column2 WHERE column3 = 'x'")
    assert (p.kind, p.writes) == ("update", ["db.t1"])
    assert rows(p) == [("db.t1", [])]
    assert cells(p) == [("db.t1", ["db.t1.column2", "db.t1.column3"], [])]


def test_merge_reads_source_and_target():
    p = points(
        "MERGE INTO t1 USING (SELECT * FROM t2 WHERE dt = 'x') s ON t1.column1 = s.column1 "
        "WHEN MATCHED THEN UPDATE SET column3 = s.column3"
    )
    assert (p.kind, p.writes, p.columns) == ("merge", ["db.t1"], [])
    assert rows(p) == [("db.t2", []), ("db.t1", [])]
    assert cells(p) == [
        ("db.t1", ["db.t1.column1"], []),
        ("db.t2", ["db.t2.column1", "db.t2.column3", "db.t2.dt"], []),
    ]


def test_other_dialects():
    p = query_points(
        "SELECT \"email\", length(app) AS n FROM db.users WHERE dt BETWEEN '2024-01-01' AND '2024-01-31'",
        _catalog(),
        dialect="trino",
    )
    assert outputs(p) == [
        ("email", [("db.users.email", "direct", [])]),
        ("n", [("db.users.app", "expression", ["length"])]),
    ]
    assert rows(p) == [("db.users", ["dt BETWEEN '2024-01-01' AND '2024-01-31'"])]
    assert p.rows[0].conditions[0].values == ["2024-01-01", "2024-01-31"]


def test_cte_with_limit_stops_outer_filter():
    p = points(
        "WITH top AS (SELECT uid, app FROM users ORDER BY uid LIMIT 5) SELECT uid FROM top WHERE app = 'a'"
    )
    assert rows(p) == [("db.users", [])]


def test_view_filter_and_outer_join_on_the_view():
    catalog = _catalog(**{"db.dy": ("SELECT uid, email FROM db.users WHERE app = 'douyin'", "uid,email")})
    p = points(
        "SELECT o.amount, v.email FROM orders o LEFT JOIN dy v ON o.uid = v.uid AND v.email LIKE '%@x'",
        catalog,
    )
    assert p.tables == ["db.orders", "db.users"]
    assert rows(p) == [("db.orders", []), ("db.users", ["app = 'douyin'", "email LIKE '%@x'"])]
    assert p.join_columns == ["db.orders.uid", "db.users.uid"]


def test_outer_join_item_not_told_apart_drops_every_on_filter():
    p = points(
        "SELECT * FROM t3 RIGHT JOIN t1 PIVOT (max(column2) FOR column3 IN ('a', 'b')) p "
        "ON t3.column1 = p.column1 AND p.dt = 'x' AND t3.name = 'n'"
    )
    assert rows(p) == [("db.t3", []), ("db.t1", [])]


def test_multi_insert_reads_every_column_without_conditions():
    p = points(
        "FROM users u INSERT INTO t1 SELECT uid, email, app, dt WHERE app = 'a' "
        "INSERT INTO t2 SELECT uid, email, app, dt WHERE app = 'b'"
    )
    assert (p.kind, p.writes, p.columns) == ("multi-insert", ["db.t1", "db.t2"], [])
    assert cells(p) == [("db.users", ["db.users.app", "db.users.dt", "db.users.email", "db.users.uid"], [])]


# ---------------------------------------------------------------- one parse per check


PARSED_CASES = [
    "SELECT nvl(u.email, 'x'), count(1) FROM users u JOIN orders o ON u.uid = o.uid "
    "WHERE u.dt = '2024-01-01' AND u.app IN ('a', 'b') GROUP BY 1",
    "WITH c AS (SELECT uid, email FROM users WHERE app = 'a') SELECT * FROM c "
    "UNION ALL SELECT uid, email FROM users",
    "INSERT OVERWRITE TABLE t3 SELECT column1, upper(column2), dt FROM t1 WHERE column2 = 'zhangsan'",
    "SELECT uid, row_number() OVER (PARTITION BY app ORDER BY dt) FROM (SELECT * FROM vu LIMIT 5) s "
    "WHERE uid IN (SELECT uid FROM orders WHERE amount > 3)",
]


@pytest.mark.parametrize("sql", PARSED_CASES)
def test_parsed_statement_gives_the_same_answers_and_is_not_changed(sql):
    catalog = _catalog(**{"db.vu": ("SELECT uid, app, dt FROM db.users WHERE app = 'a'", "uid,app,dt")})
    statement = parse_query(sql)
    before = statement.sql()
    assert query_points(statement, catalog, default_database="db") == points(sql, catalog)
    assert tables_named(statement, default_database="db") == tables_named(sql, default_database="db")

    def fetch(names):
        return {n: catalog.tables[n] for n in names if n in catalog.tables}

    assert catalog_for(statement, fetch, default_database="db") == catalog_for(
        sql, fetch, default_database="db"
    )
    assert statement.sql() == before
    # twice on the same statement: nothing of the first analysis stays on it
    assert query_points(statement, catalog, default_database="db") == points(sql, catalog)


def test_parse_query_errors_are_the_text_forms():
    with pytest.raises(QueryError, match=r"cannot parse the query: line 2, column \d+"):
        parse_query("SELECT a\nFROM t1 WHERE (")
    with pytest.raises(QueryError, match="2 statements"):
        parse_query("SELECT 1; SELECT 2")
    with pytest.raises(QueryError, match="no statement"):
        parse_query("  ;  ")


def test_parsed_statement_keeps_the_written_names_and_the_text_hash():
    sql = "SELECT ucase(email), nvl(app, 'x') FROM users"
    p = query_points(parse_query(sql), _catalog(), default_database="db")
    assert [c.name for c in p.columns] == ["ucase(email)", "nvl(app, x)"]
    assert p.query_hash == points(sql).query_hash


def test_parsed_statement_refuses_variables_and_foreign_trees():
    import sqlglot

    with pytest.raises(QueryError, match="variables apply to the query's text"):
        query_points(parse_query("SELECT uid FROM users"), _catalog(), variables={"d": "1"})
    with pytest.raises(QueryError, match="not parsed by parse_query"):
        query_points(sqlglot.parse_one("SELECT uid FROM users"), _catalog())


def test_insert_without_one_outermost_query_is_analysed_in_full():
    # the lean pass (no target column lineage) finds no outermost query: a full pass answers
    p = points("INSERT INTO t3 VALUES (1, 'a', '2024-01-01')")
    assert (p.kind, p.writes, p.rows, p.columns, p.cells) == ("insert", ["db.t3"], [], [], [])
    p = points("INSERT INTO t3 SELECT column1, upper(column2), dt FROM t1 WHERE dt = '1'")
    assert cells(p) == [("db.t1", ["db.t1.column1", "db.t1.column2", "db.t1.dt"], ["dt = '1'"])]


# ------------------------------------------------- column order unknown (review 15)


def _unordered(catalog: Catalog, name: str, columns: list[str], **kwargs) -> Catalog:
    # what GraphStore.catalog_entries gives for a Table node without column_order: by name
    catalog.with_table(CatalogTable(name=name, columns=sorted(columns), columns_ordered=False, **kwargs))
    return catalog


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM db.p",
        "SELECT p.* FROM db.p JOIN users u ON p.id = u.uid",
        "SELECT * FROM (SELECT * FROM db.p) q",
        "WITH c AS (SELECT * FROM db.p) SELECT * FROM c",
        "SELECT * FROM db.pv",
    ],
)
def test_star_over_a_table_of_unknown_column_order_is_a_problem(sql):
    catalog = _unordered(_catalog(**{"db.pv": ("SELECT * FROM db.p", "id,ssn")}), "db.p", ["ssn", "id"])
    assert any("db.p.*: its column order is unknown" in problem for problem in points(sql, catalog).problems)


def test_named_columns_of_a_table_of_unknown_order_are_fine():
    catalog = _unordered(_catalog(), "db.p", ["ssn", "id"])
    p = points("SELECT id, ssn FROM db.p", catalog)
    assert p.problems == []
    assert [c.name for c in p.columns] == ["id", "ssn"]


def test_view_of_unknown_column_order_keeps_its_definitions_names():
    # the review's t7: the view's columns listed by name must not rename its outputs by position
    catalog = _unordered(
        _catalog(),
        "db.v",
        ["a_ssn", "z_id"],
        view_sql="SELECT uid AS z_id, email AS a_ssn FROM db.users",
        view_dialect="spark",
    )
    p = points("SELECT a_ssn FROM db.v", catalog)
    assert outputs(p) == [("a_ssn", [("db.users.email", "direct", [])])]
    p = points("SELECT * FROM db.v", catalog)
    assert outputs(p) == [
        ("z_id", [("db.users.uid", "direct", [])]),
        ("a_ssn", [("db.users.email", "direct", [])]),
    ]


# ------------------------------------- columns that decide values, order or groups (review 15)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT uid, if(email LIKE '1%', 1, 0) AS f FROM users",
        "SELECT uid, CASE WHEN email > '5' THEN 1 ELSE 0 END AS f FROM users",
        "SELECT uid, sum(CASE WHEN email LIKE '1%' THEN 1 ELSE 0 END) AS n FROM users GROUP BY uid",
        "SELECT uid, row_number() OVER (ORDER BY email) AS rn FROM users",
        "SELECT uid FROM users ORDER BY email",
        "SELECT uid FROM users CLUSTER BY email",
        "SELECT uid, count(*) AS n FROM users GROUP BY uid, email WITH ROLLUP",
        "SELECT uid FROM users GROUP BY uid HAVING max(email) > '5'",
        "SELECT uid FROM users QUALIFY row_number() OVER (PARTITION BY email ORDER BY uid) = 1",
        "SELECT uid FROM users EXCEPT SELECT email FROM users",
        "SELECT x.uid FROM (SELECT uid FROM users ORDER BY email LIMIT 5) x",
    ],
)
def test_columns_deciding_values_order_or_groups_are_cell_columns(sql):
    p = points(sql)
    assert p.columns[0].name == "uid"
    for cell in p.cells:
        assert "db.users.email" in cell.columns, cell
    assert "db.users.email" not in p.join_columns


def test_where_filters_stay_row_conditions_only():
    p = points("SELECT uid FROM users WHERE email = 'a@b' AND dt = '2024-01-01'")
    assert cells(p) == [("db.users", ["db.users.uid"], ["dt = '2024-01-01'", "email = 'a@b'"])]


# ------------------------------------------------------ variables and parse errors (review 15)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT uid, ${col} FROM users",
        "SELECT uid FROM users WHERE dt = '${day}' AND app = ${app}",
        "SELECT uid FROM users WHERE email = '${hiveconf:x}'",
    ],
)
def test_a_variable_left_unsubstituted_is_an_error(sql):
    with pytest.raises(QueryError, match=r"unsubstituted variable \$\{"):
        points(sql, variables={"day": "2024-02-02"})
    with pytest.raises(QueryError, match=r"unsubstituted variable \$\{"):
        parse_query(sql)
    with pytest.raises(QueryError, match=r"unsubstituted variable \$\{app\}"):
        points("SELECT uid FROM users WHERE dt = '${day}' AND app = ${app}", variables={"day": "x"})


def test_tokenizer_error_names_the_place_never_the_text():
    with pytest.raises(QueryError) as caught:
        parse_query("SELECT uid FROM users\nWHERE email = 'secret@x.com")
    message = str(caught.value)
    assert "secret" not in message and "email" not in message
    assert message.startswith("cannot parse the query: line 2, column ")
    catalog = _catalog(**{"db.bad": ("SELECT 'secret", "a")})
    with pytest.raises(QueryError) as caught:
        points("SELECT a FROM db.bad", catalog)
    assert "secret" not in str(caught.value) and "line 1, column" in str(caught.value)


def test_deep_nesting_and_unknown_dialect_are_query_errors():
    # refused by the analysis limits before sqlglot's parser recurses into it (422, not 400)
    with pytest.raises(AnalysisLimitError, match="more than 100 deep"):
        parse_query("SELECT " + "(" * 5000 + "1" + ")" * 5000)
    with pytest.raises(QueryError, match="unknown dialect 'nosuch'"):
        parse_query("SELECT 1", dialect="nosuch")
    with pytest.raises(QueryError, match="unknown dialect 'nosuch'"):
        points("SELECT uid FROM users", dialect="nosuch")


def test_view_of_unknown_dialect_is_a_query_error():
    catalog = _catalog()
    catalog.with_table(
        CatalogTable(name="db.v", columns=["uid"], view_sql="SELECT uid FROM users", view_dialect="x1")
    )
    with pytest.raises(QueryError, match=r"view db\.v: cannot parse its definition in dialect 'x1'"):
        points("SELECT uid FROM db.v", catalog)


def test_reads_joined_every_way_are_refused_not_walked():
    # every simple chain of joins between 12 reads: the join decisions stop at their bound
    tables = {f"db.t{i}": {"columns": ["k", "v"]} for i in range(12)}
    catalog = Catalog.from_dict({"default_database": "db", "tables": tables})
    reads = ", ".join(f"t{i}" for i in range(12))
    conditions = " AND ".join(f"t{i}.k = t{j}.v" for i in range(12) for j in range(12) if i != j)
    p = points(f"SELECT t0.v FROM {reads} WHERE {conditions}", catalog)
    assert any("joins too entangled" in problem for problem in p.problems)
