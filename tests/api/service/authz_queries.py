"""The Spark authorization suite's warehouse and queries (tests/api/service/test_authz_spark.py).

Three tables in database `authz_demo`, partitioned by `dt` (amounts are decimals: a sum is then
exact whatever order Spark adds in, so raw and guarded sums compare equal): `users` (ssn pii L4, email L3,
phone L2), `orders` and `events` joined to it by `user_id`; `app` is douyin or toutiao.

Each query states what a check must find, in the contract's terms (graph/authz.py):
  sensitive  output name -> the users column that can decide its value (through value-keeping
             functions, a plain hash of an enumerable type, an ORDER BY of a window: masked for a
             user without unmask on it); outputs not listed carry none (a count, a hash the
             suite's policy pseudonymises, a length)
  cells      the users sensitive columns among the query's cell columns (outputs' sources and
             join columns): a user whose select grant lacks them is denied naming them
  douyin     every table read has its own `app = 'douyin'` filter: a grant scoped to douyin rows
             covers it
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

DB = "authz_demo"
APPS = ("douyin", "toutiao")
DTS = ("2024-01-30", "2024-01-31")
USERS = 24
#: pii level and type of the users table's sensitive columns
PII = {"ssn": ("L4", "ssn"), "email": ("L3", "email"), "phone": ("L2", "phone")}

USERS_COLUMNS = {
    "user_id": "int",
    "name": "string",
    "ssn": "string",
    "email": "string",
    "phone": "string",
    "app": "string",
    "city": "string",
}
ORDERS_COLUMNS = {
    "order_id": "int",
    "user_id": "int",
    "amount": "decimal(10,2)",
    "item": "string",
    "app": "string",
}
EVENTS_COLUMNS = {"user_id": "int", "event": "string", "duration_ms": "int", "app": "string"}
TABLES = {"users": USERS_COLUMNS, "orders": ORDERS_COLUMNS, "events": EVENTS_COLUMNS}


def user_rows() -> list[dict]:
    rows = []
    for i in range(USERS):
        rows.append(
            {
                "user_id": i,
                "name": f"User {i}",
                "ssn": f"{100 + i:03d}-{10 + i % 90:02d}-{4000 + i * 37:04d}",
                "email": f"person{i}.Mail@example.com",
                "phone": f"+86 138 {i:04d} {9000 - i:04d}",
                "app": APPS[i % 2],
                "city": ["Beijing", "Shanghai", "Shenzhen"][i % 3],
                "dt": DTS[i % 2],
            }
        )
    return rows


def order_rows() -> list[dict]:
    return [
        {
            "order_id": k,
            "user_id": (k * 7) % USERS,
            "amount": Decimal(10 + (k * 13) % 97) + Decimal(k) / 100,
            "item": ["book", "phone case", "tea", "bike"][k % 4],
            "app": APPS[(k // 3) % 2],
            "dt": DTS[k % 2],
        }
        for k in range(60)
    ]


def event_rows() -> list[dict]:
    return [
        {
            "user_id": (k * 5) % USERS,
            "event": ["open", "click", "share"][k % 3],
            "duration_ms": 100 + (k * 31) % 900,
            "app": APPS[k % 2],
            "dt": DTS[(k // 2) % 2],
        }
        for k in range(80)
    ]


def sensitive_values() -> set[str]:
    """Every raw ssn/email/phone value of the warehouse (none may leak to a masked user)."""
    return {row[c] for row in user_rows() for c in PII}


@dataclass(frozen=True)
class Query:
    sql: str
    sensitive: dict[str, str] = field(default_factory=dict)
    cells: frozenset[str] = frozenset()
    douyin: bool = False
    #: ORDER BY fixes the row order: rows are compared in order, not as sets
    ordered: bool = False


U, ORD, E = f"{DB}.users", f"{DB}.orders", f"{DB}.events"


def q(sql: str, sensitive: dict[str, str] | None = None, cells: set[str] | None = None, **kw) -> Query:
    return Query(" ".join(sql.split()), sensitive or {}, frozenset(cells or ()), **kw)


QUERIES: list[Query] = [
    # plain projections and filters
    q(f"SELECT user_id, name, city FROM {U}"),
    q(
        f"SELECT user_id, ssn, email, phone FROM {U}",
        {"ssn": "ssn", "email": "email", "phone": "phone"},
        {"ssn", "email", "phone"},
    ),
    q(
        f"SELECT * FROM {U} WHERE app = 'douyin'",
        {"ssn": "ssn", "email": "email", "phone": "phone"},
        {"ssn", "email", "phone"},
        douyin=True,
    ),
    q(
        f"SELECT user_id, email FROM {U} WHERE app = 'douyin' AND dt = '2024-01-31'",
        {"email": "email"},
        {"email"},
        douyin=True,
    ),
    q(f"SELECT user_id, name FROM {U} WHERE email LIKE 'person1%'"),
    q(
        f"SELECT user_id, phone FROM {U} WHERE ssn >= '110' ORDER BY user_id",
        {"phone": "phone"},
        {"phone"},
        ordered=True,
    ),
    q(
        f"SELECT upper(email) AS e, trim(phone) AS p FROM {U}",
        {"e": "email", "p": "phone"},
        {"email", "phone"},
    ),
    q(
        f"SELECT user_id, coalesce(phone, 'none') AS phone FROM {U} WHERE app IN ('douyin')",
        {"phone": "phone"},
        {"phone"},
        douyin=True,
    ),
    q(
        f"SELECT user_id, email AS contact FROM {U} ORDER BY contact DESC LIMIT 5",
        {"contact": "email"},
        {"email"},
        ordered=True,
    ),
    q(f"SELECT DISTINCT city FROM {U} WHERE phone IS NOT NULL"),
    # a hash the suite's policy treats as pseudonymised (of an email), one of an enumerable type
    # (an ssn, a phone: reversed by hashing every candidate) kept masked, and values that carry
    # none of the text
    q(
        f"SELECT user_id, sha2(ssn, 256) AS ssn_key, md5(email) AS email_key FROM {U}",
        {"ssn_key": "ssn"},
        {"ssn", "email"},
    ),
    q(f"SELECT user_id, length(ssn) AS n FROM {U}", cells={"ssn"}),
    q(
        f"SELECT sha2(phone, 256) AS k, count(*) AS n FROM {U} GROUP BY sha2(phone, 256)",
        {"k": "phone"},
        {"phone"},
    ),
    # aggregates over sensitive and plain columns
    q(f"SELECT count(*) AS n FROM {U}"),
    q(f"SELECT count(email) AS n, count(DISTINCT ssn) AS d FROM {U}", cells={"email", "ssn"}),
    q(f"SELECT app, count(*) AS n, sum(o.amount) AS total FROM {ORD} o GROUP BY app"),
    q(
        f"SELECT avg(amount) AS a, max(amount) AS m, min(item) AS i FROM {ORD} WHERE app = 'douyin'",
        douyin=True,
    ),
    q(
        f"SELECT max(email) AS last_email, min(phone) AS first_phone FROM {U}",
        {"last_email": "email", "first_phone": "phone"},
        {"email", "phone"},
    ),
    q(f"SELECT city, collect_set(app) AS apps, count(ssn) AS n FROM {U} GROUP BY city", cells={"ssn"}),
    # GROUP BY / ORDER BY on masked columns: grouping runs on raw values
    q(
        f"SELECT email, count(*) AS n FROM {U} GROUP BY email ORDER BY email",
        {"email": "email"},
        {"email"},
        ordered=True,
    ),
    q(
        f"SELECT phone, sum(o.amount) AS spent FROM {U} u JOIN {ORD} o ON u.user_id = o.user_id GROUP BY phone ORDER BY spent DESC, phone",
        {"phone": "phone"},
        {"phone"},
        ordered=True,
    ),
    q(
        f"SELECT ssn FROM {U} WHERE app = 'toutiao' ORDER BY ssn LIMIT 3",
        {"ssn": "ssn"},
        {"ssn"},
        ordered=True,
    ),
    # joins
    q(f"SELECT o.order_id, u.name, o.amount FROM {ORD} o JOIN {U} u ON o.user_id = u.user_id"),
    q(
        f"SELECT o.order_id, u.email FROM {ORD} o JOIN {U} u ON o.user_id = u.user_id WHERE o.amount > 50",
        {"email": "email"},
        {"email"},
    ),
    q(
        f"SELECT u.user_id, u.ssn, e.event FROM {U} u LEFT JOIN {E} e ON u.user_id = e.user_id AND e.event = 'click'",
        {"ssn": "ssn"},
        {"ssn"},
    ),
    q(
        f"SELECT u.phone, o.item FROM {U} u JOIN {ORD} o ON u.user_id = o.user_id WHERE u.app = 'douyin' AND o.app = 'douyin'",
        {"phone": "phone"},
        {"phone"},
        douyin=True,
    ),
    # the email chooses each event (a lookup keyed by it: which user_id it names), so the
    # event's columns are masked as the email is (docs/authz.md, Joins); the user's are not
    q(
        f"SELECT u.name, e.duration_ms FROM {U} u JOIN {E} e ON u.email = concat('person', e.user_id, '.Mail@example.com')",
        {"duration_ms": "email"},
        cells={"email"},
    ),
    q(
        f"SELECT u.city, count(DISTINCT o.order_id) AS orders, sum(e.duration_ms) AS ms FROM {U} u JOIN {ORD} o ON u.user_id = o.user_id JOIN {E} e ON u.user_id = e.user_id GROUP BY u.city"
    ),
    # UNION
    q(
        f"SELECT user_id, email AS v FROM {U} UNION ALL SELECT user_id, item AS v FROM {ORD}",
        {"v": "email"},
        {"email"},
    ),
    q(f"SELECT app FROM {U} UNION SELECT app FROM {ORD} UNION SELECT app FROM {E}"),
    q(
        f"SELECT user_id, phone FROM {U} WHERE app = 'douyin' UNION ALL SELECT user_id, phone FROM {U} WHERE app = 'douyin' AND dt = '2024-01-30'",
        {"phone": "phone"},
        {"phone"},
        douyin=True,
    ),
    # CTEs and subqueries
    q(
        f"WITH big AS (SELECT user_id, sum(amount) AS s FROM {ORD} GROUP BY user_id) SELECT u.email, big.s FROM {U} u JOIN big ON u.user_id = big.user_id",
        {"email": "email"},
        {"email"},
    ),
    q(
        f"WITH d AS (SELECT * FROM {U} WHERE app = 'douyin') SELECT user_id, ssn FROM d WHERE dt = '2024-01-30'",
        {"ssn": "ssn"},
        {"ssn"},
        douyin=True,
    ),
    q(
        f"SELECT x.contact, x.n FROM (SELECT phone AS contact, count(*) AS n FROM {U} GROUP BY phone) x WHERE x.n >= 1",
        {"contact": "phone"},
        {"phone"},
    ),
    q(f"SELECT user_id, name FROM {U} WHERE user_id IN (SELECT user_id FROM {ORD} WHERE amount > 90)"),
    q(f"SELECT user_id, (SELECT max(amount) FROM {ORD} o WHERE o.user_id = u.user_id) AS top FROM {U} u"),
    q(
        f"SELECT user_id FROM {U} u WHERE EXISTS (SELECT 1 FROM {E} e WHERE e.user_id = u.user_id AND e.event = 'share')"
    ),
    # windows
    q(
        f"SELECT user_id, email, row_number() OVER (PARTITION BY app ORDER BY user_id) AS rn FROM {U}",
        {"email": "email"},
        {"email"},
    ),
    q(
        f"SELECT o.order_id, sum(o.amount) OVER (PARTITION BY o.user_id ORDER BY o.order_id) AS running FROM {ORD} o"
    ),
    # the rank is decided by the phone's order: masked as the phone is
    q(
        f"SELECT user_id, phone, rank() OVER (ORDER BY phone) AS r FROM {U}",
        {"phone": "phone", "r": "phone"},
        {"phone"},
    ),
    q(
        f"SELECT t.ssn, t.rn FROM (SELECT ssn, row_number() OVER (ORDER BY user_id) AS rn FROM {U}) t WHERE t.rn <= 5",
        {"ssn": "ssn"},
        {"ssn"},
    ),
    # conditional values and casts
    q(
        f"SELECT user_id, CASE WHEN app = 'douyin' THEN email ELSE name END AS who FROM {U}",
        {"who": "email"},
        {"email"},
    ),
    q(
        f"SELECT user_id, cast(phone AS string) AS p, concat(name, ' <', email, '>') AS label FROM {U}",
        {"p": "phone", "label": "email"},
        {"phone", "email"},
    ),
]
