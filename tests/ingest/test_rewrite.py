"""Post-compute masking on a real local Spark: the masks equal ORC's, and a rewritten query returns
the raw query's rows, in its order, under its column names, with only the masked values changed."""

from __future__ import annotations

import hashlib

import pyarrow as pa
import pytest

from watershed.graph.authz import OutputColumn
from watershed.graph.errors import WatershedError
from watershed.ingest.rewrite import MASKS, RewriteError, mask_expression, masked_query
from watershed.orc_crypto.codec import kinds
from watershed.orc_crypto.masking.values import SubtreeMasker
from watershed.orc_crypto.options import parse_mask
from watershed.orc_crypto.proto import orc_proto_pb2 as pb

STRINGS = [
    "Alice Smith",
    "bob.jones@example.com",
    "+1 (555) 010-9999",
    "Ünïcödé ΩMEGA ǅ ٣٤ ½ 漢字",
    "",
    None,
    "MiXeD123_ab-CD",
]
INTEGERS = [0, 7, -123, 2147483647, None]

PEOPLE = [
    (1, "Alice", "alice@x.org", "eng", 30),
    (2, "Bob", "bob@y.com", "ops", 25),
    (3, "Carol", "carol@x.org", "eng", 41),
    (4, "Dan", "dan@z.net", "ops", 35),
    (5, "Eve", "eve@x.org", "sec", 29),
]
ORDERS = [(10, 1, 100), (11, 1, 50), (12, 2, 75), (13, 3, 20), (14, 5, 60), (15, 5, 5)]


#: the ORC mask each gateway mask computes. The gateway's redact is ORC's redact (letters X/x,
#: digits 9) keeping every other character (`_`): ORC's default redact also replaces symbols ($),
#: punctuation (.), other letters and other numbers, which Spark's mask() cannot
GATEWAY_MASKS = {"sha256": "sha256", "redact": "redact,Xx9_______"}


def masked_values(values: pa.Array, mask: str, kind: int = kinds.STRING) -> list:
    """What ORC (orc_crypto/masking, ORC Java's masks) writes for `values`, a top-level column of
    ORC type `kind`, under the gateway mask `mask`."""
    types = [pb.Type(kind=kinds.STRUCT, subtypes=[1], fieldNames=["v"]), pb.Type(kind=kind)]
    return SubtreeMasker(types, 1, {1: parse_mask(GATEWAY_MASKS[mask])}).mask(values).to_pylist()


def orc_mask(mask: str, value):
    """What ORC writes for `value` under `mask`, as the string Spark returns."""
    if value is None or mask == "nullify":
        return None
    return masked_values(pa.array([str(value)]), mask)[0]


@pytest.fixture(scope="module")
def tables(spark):
    spark.createDataFrame(
        PEOPLE, "id INT, name STRING, email STRING, dept STRING, age INT"
    ).createOrReplaceTempView("rw_people")
    spark.createDataFrame(ORDERS, "id INT, person_id INT, amount INT").createOrReplaceTempView("rw_orders")
    yield spark
    spark.catalog.dropTempView("rw_people")
    spark.catalog.dropTempView("rw_orders")


@pytest.mark.parametrize("mask", ["sha256", "redact"])
def test_masks_equal_orc_masks_on_strings(spark, mask):
    frame = spark.createDataFrame(list(enumerate(STRINGS)), "i INT, v STRING")
    got = [r.m for r in frame.selectExpr("i", f"{mask_expression(mask, 'v')} AS m").orderBy("i").collect()]
    assert got == masked_values(pa.array(STRINGS, pa.string()), mask)
    assert got[0] != STRINGS[0]


def test_redact_on_integers_keeps_sign_and_nines(spark):
    frame = spark.createDataFrame(list(enumerate(INTEGERS)), "i INT, v BIGINT")
    got = [
        r.m for r in frame.selectExpr("i", f"{mask_expression('redact', 'v')} AS m").orderBy("i").collect()
    ]
    orc = masked_values(pa.array(INTEGERS, pa.int64()), "redact", kinds.LONG)
    assert got == [None if v is None else str(v) for v in orc]
    assert got[2] == "-999"


def test_sha256_of_non_string_hashes_its_text(spark):
    got = spark.sql(f"SELECT {mask_expression('sha256', '42')} AS m").first().m
    assert got == hashlib.sha256(b"42").hexdigest().upper()


def test_nullify_keeps_the_type(spark):
    frame = spark.sql(
        "SELECT map('a', 1) AS m, 5 AS i, array('x') AS a, named_struct('f', 1.5D) AS s, 'x' AS t"
    )
    masked = frame.selectExpr(*(f"{mask_expression('nullify', c)} AS {c}" for c in frame.columns))
    assert [f.dataType for f in masked.schema] == [f.dataType for f in frame.schema]
    assert list(masked.first()) == [None] * 5


def test_unknown_mask_is_refused_by_name():
    with pytest.raises(WatershedError, match="'md5'"):
        mask_expression("md5", "x")
    with pytest.raises(RewriteError, match="'md5' for output 0"):
        masked_query("SELECT a FROM t", [OutputColumn(position=0, name="a")], {0: "md5"})
    assert MASKS == ("nullify", "sha256", "redact")


def test_no_masks_leaves_the_sql_as_it_is():
    sql = "select  a  from t -- as written"
    assert masked_query(sql, [OutputColumn(position=0, name="a")], {}) == sql


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT a FROM t; SELECT b FROM t", "holds 2 statements"),
        ("SELECT a FROM (", "cannot parse"),
        ("DROP TABLE t", "DROP"),
    ],
)
def test_bad_statements_are_refused(sql, message):
    with pytest.raises(RewriteError, match=message):
        masked_query(sql, [OutputColumn(position=0, name="a")], {0: "nullify"})


def test_outputs_must_describe_the_masked_positions():
    with pytest.raises(RewriteError, match=r"positions \[3\]"):
        masked_query("SELECT a FROM t", [OutputColumn(position=0, name="a")], {3: "sha256"})
    with pytest.raises(RewriteError, match="repeat"):
        masked_query(
            "SELECT a, b FROM t",
            [OutputColumn(position=0, name="a"), OutputColumn(position=0, name="b")],
            {0: "sha256"},
        )


# (query, output names as Spark names them, masks by position)
QUERIES = [
    (
        "SELECT id, name, email FROM rw_people ORDER BY id",
        ["id", "name", "email"],
        {1: "redact", 2: "sha256"},
    ),
    (
        "SELECT p.id AS pid, p.name AS who, p.Email AS Mail FROM rw_people p WHERE p.email LIKE '%x.org' "
        "ORDER BY who DESC",
        ["pid", "who", "Mail"],
        {1: "nullify", 2: "redact"},
    ),
    (
        "SELECT upper(name), id + 1, email FROM rw_people ORDER BY 2",
        ["upper(name)", "(id + 1)", "email"],
        {0: "redact"},
    ),
    (
        "SELECT a.id, o.id, a.name FROM rw_people a JOIN rw_orders o ON a.id = o.person_id ORDER BY o.id",
        ["id", "id", "name"],
        {0: "sha256", 2: "redact"},
    ),
    (
        "SELECT * FROM rw_people p JOIN rw_orders o ON p.id = o.person_id ORDER BY o.id",
        ["id", "name", "email", "dept", "age", "id", "person_id", "amount"],
        {1: "sha256", 5: "redact"},
    ),
    (
        "SELECT o.*, p.name FROM rw_orders o LEFT JOIN rw_people p ON p.id = o.person_id ORDER BY 1",
        ["id", "person_id", "amount", "name"],
        {3: "redact"},
    ),
    (
        "SELECT name AS n, email AS e FROM rw_people ORDER BY e, n",
        ["n", "e"],
        {0: "sha256", 1: "sha256"},
    ),
    (
        "SELECT name, email FROM rw_people ORDER BY 2 DESC LIMIT 3",
        ["name", "email"],
        {1: "nullify"},
    ),
    (
        "SELECT dept AS d, count(*) AS n, sum(age) AS total FROM rw_people GROUP BY d ORDER BY d",
        ["d", "n", "total"],
        {0: "redact"},
    ),
    (
        "SELECT DISTINCT dept FROM rw_people ORDER BY dept",
        ["dept"],
        {0: "sha256"},
    ),
    (
        "SELECT name FROM rw_people WHERE dept = 'eng' UNION SELECT email FROM rw_people WHERE age > 30 "
        "ORDER BY name",
        ["name"],
        {0: "redact"},
    ),
    (
        "SELECT name, age FROM rw_people UNION ALL SELECT email, amount FROM rw_orders JOIN rw_people "
        "ON rw_people.id = person_id ORDER BY 2, 1 LIMIT 8",
        ["name", "age"],
        {0: "sha256"},
    ),
    (
        "SELECT name, dept, row_number() OVER (PARTITION BY dept ORDER BY age DESC) AS rn, "
        "sum(age) OVER (PARTITION BY dept) AS dept_age FROM rw_people ORDER BY dept, rn",
        ["name", "dept", "rn", "dept_age"],
        {0: "redact", 1: "nullify"},
    ),
    (
        "WITH spend AS (SELECT person_id, sum(amount) AS total FROM rw_orders GROUP BY person_id) "
        "SELECT p.name, s.total FROM rw_people p JOIN spend s ON s.person_id = p.id ORDER BY s.total DESC",
        ["name", "total"],
        {0: "sha256"},
    ),
    (
        "SELECT name, email FROM rw_people",
        ["name", "email"],
        {1: "redact"},
    ),
    (
        "(SELECT name, email FROM rw_people ORDER BY email DESC)",
        ["name", "email"],
        {0: "redact"},
    ),
]


def test_names_keep_the_case_they_are_written_in(tables):
    # Spark returns `ID` for `SELECT ID`; outputs named in lower case (as a resolver may) still give it
    spark = tables
    sql = "SELECT ID, p.Name, email AS Mail, upper(dept) FROM rw_people p UNION SELECT 0, 'Zed', 'z@q', 'X'"
    outputs = [OutputColumn(position=i, name=n) for i, n in enumerate(["id", "name", "mail", "upper(dept)"])]
    masked = spark.sql(masked_query(sql, outputs, {2: "sha256"}))
    assert masked.columns == spark.sql(sql).columns == ["ID", "Name", "Mail", "upper(dept)"]


def _check_masked(raw_rows, masked_rows, masks):
    assert len(masked_rows) == len(raw_rows)
    for raw, masked in zip(raw_rows, masked_rows, strict=True):
        assert len(raw) == len(masked)
        for position, (raw_value, masked_value) in enumerate(zip(raw, masked, strict=True)):
            if position in masks:
                assert masked_value == orc_mask(masks[position], raw_value), (position, raw)
            else:
                assert masked_value == raw_value, (position, raw)


@pytest.mark.parametrize(("sql", "names", "masks"), QUERIES, ids=[q[0][:60] for q in QUERIES])
def test_rewritten_query_masks_only_the_outermost_values(tables, sql, names, masks):
    spark = tables
    outputs = [OutputColumn(position=i, name=name) for i, name in enumerate(names)]
    rewritten = masked_query(sql, outputs, masks)
    raw, masked = spark.sql(sql), spark.sql(rewritten)
    assert masked.columns == raw.columns == names
    raw_rows, masked_rows = raw.collect(), masked.collect()
    assert raw_rows
    _check_masked(raw_rows, masked_rows, masks)
    # something was actually masked
    assert any(m[p] != r[p] for r, m in zip(raw_rows, masked_rows, strict=True) for p in masks)


@pytest.mark.parametrize("cte_first", [False, True])
def test_insert_select_writes_masked_values(tables, cte_first):
    spark = tables
    spark.sql("DROP TABLE IF EXISTS rw_target")
    spark.sql("CREATE TABLE rw_target (who STRING, spent BIGINT) USING parquet")
    try:
        query = "SELECT p.name, sum(o.amount) FROM rw_people p JOIN rw_orders o ON o.person_id = p.id GROUP BY p.name"
        outputs = [OutputColumn(position=0, name="name"), OutputColumn(position=1, name="sum(amount)")]
        statement = f"INSERT INTO rw_target {query}"
        if cte_first:
            # the CTE stays on the INSERT, which holds the query it wraps
            cte = "WITH o AS (SELECT * FROM rw_orders WHERE amount > 10)"
            query = query.replace("rw_orders o", "o")
            statement = f"{cte} INSERT INTO rw_target {query}"
            query = f"{cte} {query}"
        rewritten = masked_query(statement, outputs, {0: "sha256"})
        assert "INSERT INTO rw_target SELECT" in rewritten
        spark.sql(rewritten)
        written = sorted(tuple(r) for r in spark.sql("SELECT who, spent FROM rw_target").collect())
        expected = sorted((orc_mask("sha256", r[0]), r[1]) for r in spark.sql(query).collect())
        assert written == expected
    finally:
        spark.sql("DROP TABLE IF EXISTS rw_target")


def test_create_table_as_select_with_a_cte_writes_masked_values(tables):
    spark = tables
    spark.sql("DROP TABLE IF EXISTS rw_ctas")
    try:
        query = "WITH e AS (SELECT * FROM rw_people WHERE dept = 'eng') SELECT id, email FROM e"
        outputs = [OutputColumn(position=0, name="id"), OutputColumn(position=1, name="email")]
        spark.sql(masked_query(f"CREATE TABLE rw_ctas USING parquet AS {query}", outputs, {1: "redact"}))
        written = sorted(tuple(r) for r in spark.table("rw_ctas").collect())
        assert spark.table("rw_ctas").columns == ["id", "email"]
        assert written == sorted((r[0], orc_mask("redact", r[1])) for r in spark.sql(query).collect())
    finally:
        spark.sql("DROP TABLE IF EXISTS rw_ctas")


def test_aggregates_over_a_rewritten_query_match_the_raw_ones(tables):
    spark = tables
    sql = "SELECT p.email, o.amount FROM rw_people p JOIN rw_orders o ON o.person_id = p.id"
    outputs = [OutputColumn(position=0, name="email"), OutputColumn(position=1, name="amount")]
    rewritten = masked_query(sql, outputs, {0: "sha256"})
    totals = "SELECT count(*), count(DISTINCT email), sum(amount) FROM ({}) t"
    assert spark.sql(totals.format(rewritten)).first() == spark.sql(totals.format(sql)).first()


def test_an_insert_too_deep_to_render_is_refused_not_a_crash():
    # a 20,000-term `+ -` chain the analysis takes (its limits raised) is still too deep for
    # sqlglot's generator, which renders an INSERT's masked form: a RewriteError, never a 500
    from watershed.graph.catalog import Catalog
    from watershed.ingest.limits import AnalysisLimits, analysis_limits
    from watershed.ingest.points import parse_query, query_points

    terms = " ".join("+ uid" if i % 2 else "- uid" for i in range(20_000))
    sql = f"INSERT INTO t.o SELECT uid {terms} AS x FROM t.s"
    catalog = Catalog.from_dict({"tables": {"t.s": {"columns": ["uid"]}, "t.o": {"columns": ["x"]}}})
    raised = AnalysisLimits(analysis_max_tokens=10**6, analysis_max_chars=10**8, analysis_max_nesting=10**6)
    with analysis_limits(raised):
        statement = parse_query(sql, dialect="spark")
        points = query_points(statement, catalog, dialect="spark")
        with pytest.raises(RewriteError, match="nested too deeply"):
            masked_query(sql, points.columns, {0: "nullify"}, statement=statement)
