"""Query-time authorization on a real local Spark: the 43-query suite of tests/api/service/authz_queries.py.

Raw and guarded results of every query are compared in Spark: unmasked outputs identical, masked
ones equal to the ORC mask (orc_crypto/masking) of the raw value's text, same row counts,
so aggregates and filters still ran on raw values. One Spark session (the `spark` fixture), three
small tables.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.api.service.authz_queries import (
    DB,
    PII,
    QUERIES,
    TABLES,
    Query,
    event_rows,
    order_rows,
    sensitive_values,
    user_rows,
)
from watershed.api.service.accounts.rights import Me
from watershed.api.service.authz import AuthzService
from watershed.api.service.authz.spark import QueryDeniedError, guarded
from watershed.graph.authz import Grant
from watershed.graph.catalog import Catalog, CatalogColumn, CatalogTable
from watershed.ingest.points import query_points
from watershed.ingest.rewrite import masked_query
from watershed.orc_crypto.codec import kinds
from watershed.orc_crypto.masking.values import SubtreeMasker
from watershed.orc_crypto.options import parse_mask
from watershed.orc_crypto.proto import orc_proto_pb2 as pb
from watershed.propagation.engine import local_batches, propagate_full
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy

#: the default protection policy's masks (graph/protection.py): pii L4/L3 nullify, L2 sha256
MASK_OF_LEVEL = {"L4": "nullify", "L3": "nullify", "L2": "sha256"}
IDS = [f"q{i:02d}" for i in range(len(QUERIES))]


def catalog() -> Catalog:
    return Catalog(
        tables={
            f"{DB}.{name}": CatalogTable(
                name=f"{DB}.{name}",
                columns=[CatalogColumn(name=c, type=t) for c, t in columns.items()],
                partitioned_by=[CatalogColumn(name="dt", type="string")],
            )
            for name, columns in TABLES.items()
        }
    )


@pytest.fixture(scope="module")
def warehouse(spark):
    spark.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")
    spark.sql(f"CREATE DATABASE {DB}")
    for name, rows in (("users", user_rows()), ("orders", order_rows()), ("events", event_rows())):
        schema = ", ".join(f"{c} {t}" for c, t in {**TABLES[name], "dt": "string"}.items())
        frame = spark.createDataFrame([tuple(r[c] for c in [*TABLES[name], "dt"]) for r in rows], schema)
        frame.write.partitionBy("dt").format("orc").saveAsTable(f"{DB}.{name}")
    yield spark
    spark.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")


def _rows(spark, sql: str) -> tuple[list[str], list[tuple]]:
    frame = spark.sql(sql)
    return frame.columns, [tuple(row) for row in frame.collect()]


_RAW: dict[str, tuple[list[str], list[tuple]]] = {}


def _raw(spark, sql: str) -> tuple[list[str], list[tuple]]:
    """The unguarded result, run once per query for all users (the tables never change)."""
    if sql not in _RAW:
        _RAW[sql] = _rows(spark, sql)
    return _RAW[sql]


def _mask(value, mask: str):
    if value is None or mask == "nullify":
        return None
    types = [pb.Type(kind=kinds.STRUCT, subtypes=[1], fieldNames=["v"]), pb.Type(kind=kinds.STRING)]
    return SubtreeMasker(types, 1, {1: parse_mask(mask)}).mask(pa.array([str(value)])).to_pylist()[0]


def _sorted(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=repr)


def expected_after_masks(names: list[str], raw: list[tuple], masks: dict[int, str]) -> list[tuple]:
    return [tuple(_mask(v, masks[i]) if i in masks else v for i, v in enumerate(row)) for row in raw]


def assert_masked_result(
    query: Query, raw: tuple[list[str], list[tuple]], got: tuple[list[str], list[tuple]], masks
):
    raw_names, raw_rows = raw
    names, rows = got
    assert names == raw_names, "a rewrite keeps the output names and order"
    assert len(rows) == len(raw_rows)
    expected = expected_after_masks(names, raw_rows, masks)
    if query.ordered:
        assert rows == expected
    else:
        assert _sorted(rows) == _sorted(expected)


def masks_without_unmask(query: Query, names: list[str]) -> dict[int, str]:
    """The masks a user with select on everything and no unmask must get (the query's statement)."""
    return {names.index(out): MASK_OF_LEVEL[PII[column][0]] for out, column in query.sensitive.items()}


def leaks(rows: list[tuple]) -> list[str]:
    """Raw ssn/email/phone values found anywhere in the output values (as text, also inside)."""
    secrets = sensitive_values()
    return [s for row in rows for v in row if v is not None for s in secrets if s in str(v)]


# ------------------------------------------------------------------ points and rewrite, no grants


@pytest.mark.parametrize("query", QUERIES, ids=IDS)
def test_points_name_the_sensitive_cells_the_query_states(query):
    points = query_points(query.sql, catalog())
    names = [c.name for c in points.columns]
    for out, column in query.sensitive.items():
        assert out in names
        sources = {s.column for s in points.columns[names.index(out)].sources}
        assert f"{DB}.users.{column}" in sources
    in_cells = {
        c.rsplit(".", 1)[1] for cell in points.cells if cell.table == f"{DB}.users" for c in cell.columns
    } & set(PII)
    assert in_cells == set(query.cells)


def test_the_suite_covers_the_shapes_the_issue_names():
    text = " ".join(q.sql.upper() for q in QUERIES)
    assert len(QUERIES) >= 40
    for shape in (
        "JOIN",
        "UNION",
        "WITH ",
        "OVER (",
        "GROUP BY",
        "ORDER BY",
        "SHA2(",
        "MD5(",
        "SUM(",
        "AVG(",
        "COUNT(",
    ):
        assert shape in text, shape


@pytest.mark.parametrize("query", QUERIES, ids=IDS)
def test_masked_rewrite_matches_the_raw_result_with_masks_applied(warehouse, query):
    raw = _raw(warehouse, query.sql)
    points = query_points(query.sql, catalog())
    masks = masks_without_unmask(query, raw[0])
    got = _rows(warehouse, masked_query(query.sql, points.columns, masks))
    assert_masked_result(query, raw, got, masks)
    assert not leaks(got[1])


# ------------------------------------------------------------------ users, grants, guarded sessions

ADMIN = Me(name="root", role="admin")
#: user -> the grants of their one data role
USERS = {
    "full": [dict(database=DB, actions=["select", "unmask"])],
    "cols": [
        dict(
            table=f"{DB}.users",
            columns=["user_id", "name", "app", "city", "dt"],
            actions=["select", "unmask"],
        ),
        dict(table=f"{DB}.orders", actions=["select", "unmask"]),
        dict(table=f"{DB}.events", actions=["select", "unmask"]),
    ],
    "rows": [
        dict(table=f"{DB}.{t}", condition="app = 'douyin'", actions=["select", "unmask"]) for t in TABLES
    ],
    "tags": [dict(database=DB, actions=["select"]), dict(tag="pii<=L2", actions=["unmask"])],
    "masked": [dict(database=DB, actions=["select"])],
    "nobody": [],
}


@pytest.fixture(scope="module")
def service(falkordb_server):
    from watershed.graph.falkordb_store import FalkorDBStore

    graph = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph="authz_spark")
    graph.clear()
    graph.ensure_schema()
    graph.upsert_catalog(catalog())
    policy = default_policy()
    tags = GraphTagStore(graph, policy)
    for column, (level, kind) in PII.items():
        tags.set_tag(f"{DB}.users.{column}", "pii", [level], by="steward")
        tags.set_tag(f"{DB}.users.{column}", "pii_type", [kind], by="steward")
    # effective tags are what a propagation run computes from the stewards' ones
    tags.raise_fence(1)
    propagate_full(tags, local_batches(tags, policy, "r1", 1), run_id="r1", token=1)
    authz = AuthzService(graph, policy)
    for user, grants in USERS.items():
        authz.grants.add_role(ADMIN, f"r_{user}")
        authz.grants.assign(ADMIN, f"r_{user}", "user", user)
        for grant in grants:
            authz.grants.grant(ADMIN, Grant(id="", role=f"r_{user}", **grant))
    yield authz
    graph.clear()
    graph.close()


def expected_masks(user: str, query: Query, names: list[str]) -> dict[int, str]:
    if user in ("full", "cols", "rows"):
        return {}
    masks = masks_without_unmask(query, names)
    if user == "tags":
        # unmask on pii<=L2: phone (L2) in clear
        masks = {
            names.index(out): mask
            for out, column in query.sensitive.items()
            if PII[column][0] > "L2"
            for mask in [masks[names.index(out)]]
        }
    return masks


def expected_allowed(user: str, query: Query) -> bool:
    return {"cols": not query.cells, "rows": query.douyin, "nobody": False}.get(user, True)


@pytest.mark.parametrize("user", list(USERS))
@pytest.mark.parametrize("query", QUERIES, ids=IDS)
def test_guarded_session_decides_and_masks_as_the_query_states(warehouse, service, query, user):
    session = guarded(warehouse, user, service)
    if not expected_allowed(user, query):
        with pytest.raises(QueryDeniedError) as denied:
            session.sql(query.sql)
        decision = denied.value.rewrite.decision
        assert not decision.allowed and decision.error is None
        if user == "cols":
            missing = {
                c.rsplit(".", 1)[1] for m in decision.missing if m.table == f"{DB}.users" for c in m.columns
            }
            assert missing == set(query.cells)
            assert all(m.table == f"{DB}.users" for m in decision.missing)
            assert f"{DB}.users" in str(denied.value)
        return
    raw = _raw(warehouse, query.sql)
    masks = expected_masks(user, query, raw[0])
    rewrite = session.explain(query.sql)
    assert {o.position: o.mask for o in rewrite.outputs if o.masked} == masks
    got = session.sql(query.sql)
    got = (got.columns, [tuple(r) for r in got.collect()])
    assert_masked_result(query, raw, got, masks)
    if user == "masked":
        assert not leaks(got[1])


def test_an_unparseable_query_is_denied_with_the_parse_error(warehouse, service):
    with pytest.raises(QueryDeniedError) as denied:
        guarded(warehouse, "full", service).sql(f"SELECT ssn FROM {DB}.users WHERE")
    assert denied.value.rewrite.decision.error
    assert "line" in str(denied.value).lower()


def test_an_unknown_table_is_denied_naming_it(warehouse, service):
    with pytest.raises(QueryDeniedError) as denied:
        guarded(warehouse, "full", service).sql(f"SELECT * FROM {DB}.nowhere")
    assert f"{DB}.nowhere" in str(denied.value)


def test_a_denial_lists_missing_cells_bounded_and_never_the_query_text(warehouse, service):
    secret = "123-45-6789"
    parts = [
        f"SELECT ssn, email, phone FROM {DB}.users WHERE ssn = '{secret}' AND dt = '2024-01-3{i % 2}'"
        for i in range(2)
    ]
    sql = " UNION ALL ".join([*parts, f"SELECT 'x', item, item FROM {DB}.orders"])
    with pytest.raises(QueryDeniedError) as denied:
        guarded(warehouse, "nobody", service).sql(sql)
    message = str(denied.value)
    assert isinstance(denied.value, PermissionError)
    assert f"{DB}.users" in message and f"{DB}.orders" in message
    assert sql not in message
    assert len(message) < 2000


def test_explain_returns_the_rewrite_without_running(warehouse, service):
    rewrite = guarded(warehouse, "masked", service).explain(f"SELECT user_id, email FROM {DB}.users")
    assert rewrite.decision.allowed and rewrite.sql is not None
    assert [o.mask for o in rewrite.outputs] == [None, "nullify"]


def test_a_query_spark_reads_otherwise_than_the_check_is_denied(warehouse, service):
    """The binding compares Spark's own reading of an allowed query's outputs with the checked
    ones before running it: a text two parsers read differently never runs on the check's word."""
    sql = f"SELECT user_id, ssn FROM {DB}.users"
    honest = service.rewrite("full", sql)
    assert honest.decision.allowed and honest.decision.points is not None

    class MisreadingService:
        """Answers for a reading that saw only user_id (as a parser differential would)."""

        def rewrite(self, user, query, dialect="spark"):
            points = honest.decision.points.model_copy(update={"columns": honest.decision.points.columns[:1]})
            return honest.model_copy(
                update={"decision": honest.decision.model_copy(update={"points": points}), "sql": query}
            )

    with pytest.raises(QueryDeniedError, match=r"Spark reads the query's outputs as \['user_id', 'ssn'\]"):
        guarded(warehouse, "full", MisreadingService()).sql(sql)
    assert guarded(warehouse, "full", service).sql(sql).columns == ["user_id", "ssn"]
