"""The gateway's masking rule (issue 35 items 1 and 2), through the real service on a FalkorDB graph.

An output is masked when any protected value can decide it (its value, a subscript's key, a
CASE/IF/decode/COALESCE choice, a returned comparison, a lambda, a window's spec, a scalar
subquery), unless the function-effect table says the value is destroyed; a plain hash of an
enumerable type (phone, ssn) stays masked, a keyed one does not.
"""

from __future__ import annotations

import pytest

from tests.api.service.masking_gateway import SECRET, start

DIGITS = ", ".join(f"'{d}', '{d}'" for d in range(10))
CASE_DIGITS = " ".join(f"WHEN '{d}' THEN '{d}'" for d in range(10))

#: (expression, grouped): each reads the phone digit by digit, or decides on it (item 1)
DECIDED = [
    f"map({DIGITS})[substr(phone, 1, 1)]",
    f"CASE substr(phone, 1, 1) {CASE_DIGITS} END",
    f"element_at(map({DIGITS}), substr(phone, 1, 1))",
    "if(substr(phone, 1, 1) = '1', 'one', 'other')",
    "decode(substr(phone, 1, 1), '0', 'a', '1', 'b', 'c')",
    "array_position(array('0', '1', '2'), substr(phone, 1, 1))",
    "instr(phone, '1')",
    "ascii(phone)",
    "phone = '13800001111'",
    "phone LIKE '1%'",
    "array_contains(array('0', '1'), substr(phone, 1, 1))",
    "coalesce(nullif(substr(phone, 1, 1), '1'), 'x')",
    "nvl(CASE WHEN phone LIKE '1%' THEN 'a' END, 'b')",
    "array('a', 'b', 'c')[cast(substr(phone, 1, 1) AS int) % 3]",
    "size(filter(array('0', '1', '2'), x -> x = substr(phone, 1, 1)))",
    "row_number() OVER (ORDER BY phone)",
    "count(*) OVER (PARTITION BY substr(phone, 1, 1))",
    "(SELECT max(d.v) FROM digits d WHERE d.k = substr(s.phone, 1, 1))",
    "EXISTS (SELECT 1 FROM digits d WHERE d.k = substr(s.phone, 1, 1))",
    # a value-destroying function of a value the phone decided tells the decision
    "length(regexp_replace(phone, '[^1]', ''))",
    "length(CASE WHEN phone LIKE '1%' THEN 'aa' ELSE 'b' END)",
    "mask(if(phone LIKE '1%', 'aaa', '99999'))",
    "md5(substr(email, 1, 1))",
    # plain hashes of enumerable types (item 2)
    "sha2(phone, 256)",
    "md5(ssn)",
    "sha1(phone)",
    "hash(phone)",
    "xxhash64(ssn)",
    "crc32(phone)",
    "sha2(concat('pepper', phone), 256)",
    "md5(concat(phone, current_date()))",
    # a key written in the query is the asker's: they hash every candidate with it
    "hmac('k', phone)",
    "hmac('k', ssn)",
    # arguments that keep part of the value where the effect table assumes it whole or hidden
    "length(trim(BOTH '1' FROM phone))",
    "length(rtrim(phone, '0'))",
    "length(btrim(phone, '1'))",
    "trim(LEADING '1' FROM phone)",
    "mask(phone, 'X', 'x', NULL, NULL)",
    "mask(phone, NULL, NULL, NULL, NULL)",
    "mask(phone, 'X', 'x', cast(NULL AS string))",
]
GROUPED = [
    "count(CASE WHEN phone LIKE '1%' THEN 1 END)",
    "count(DISTINCT if(substr(phone, 1, 1) = '1', 'a', null))",
    "max(substr(phone, 1, 1))",
]
#: destroyed, or hashed with a key, or a hash of a type not enumerable
NOT_MASKED = [
    "count(phone)",
    "count(DISTINCT ssn)",
    "length(phone)",
    "mask(phone)",
    "md5(email)",
    "sha2(upper(trim(email)), 256)",
    f"hmac({SECRET}(), phone)",
    f"sha2(concat({SECRET}(), phone), 256)",
    f"sha2(concat({SECRET}(), upper(ssn)), 256)",
    "CASE WHEN length(phone) = 11 THEN 'ok' END",
    "id",
    "length(trim(phone))",
    "mask(phone, 'X', 'x', 'n', NULL)",
]


@pytest.fixture(scope="module")
def service(falkordb_server):
    service, graph = start(falkordb_server, "masking_gateway")
    yield service
    graph.clear()
    graph.close()


def output(service, expression: str, grouped: bool = False):
    group = " GROUP BY s.id" if grouped else ""
    rewrite = service.rewrite("masked", f"SELECT {expression} AS d1 FROM src_38 s{group}")
    assert rewrite.decision.allowed, rewrite.decision
    [out] = rewrite.outputs
    return out


@pytest.mark.parametrize("expression", DECIDED)
def test_an_output_a_protected_value_decides_is_masked(service, expression):
    out = output(service, expression)
    assert out.masked and out.mask == "nullify", out.why
    assert out.tags["pii"] in (["L3"], ["L4"])


@pytest.mark.parametrize("expression", GROUPED)
def test_an_aggregate_of_a_decided_value_is_masked(service, expression):
    out = output(service, expression, grouped=True)
    assert out.masked, out.why


@pytest.mark.parametrize("expression", NOT_MASKED)
def test_destroyed_or_keyed_values_are_not_masked(service, expression):
    grouped = expression.startswith("count(")
    out = output(service, expression, grouped=grouped)
    assert not out.masked, out.why


def test_the_answer_says_where_the_phone_decides(service):
    out = output(service, f"map({DIGITS})[substr(phone, 1, 1)]")
    assert "default.src_38.phone" in out.why and "decides:subscript" in out.why
    hashed = output(service, "sha2(phone, 256)")
    assert hashed.tags == {"pii": ["L3"], "pii_type": ["phone"]}
    keyed = output(service, f"hmac({SECRET}(), phone)")
    assert keyed.tags["pii"] == ["L1"]


def test_a_row_filter_is_the_cells_business_not_masking(service):
    # WHERE decides which rows, not a value: the phone is a cell column of the check, unmasked
    rewrite = service.rewrite("masked", "SELECT count(*) AS n FROM src_38 WHERE phone LIKE '1%'")
    assert rewrite.decision.allowed and not rewrite.outputs[0].masked
    [cell] = rewrite.decision.points.cells
    assert [c.text for c in cell.conditions] == ["phone LIKE '1%'"]


#: (query, the output a protected value decides through a join, a lateral view, a cast or a
#: secret function): each came back unmasked before
LOOKUPS = [
    ("SELECT s.id, d.v FROM src_38 s JOIN digits d ON d.k = substr(s.phone, 11, 1)", "v"),
    ("SELECT s.id, d.v FROM src_38 s LEFT JOIN digits d ON d.k = substr(s.phone, 11, 1)", "v"),
    ("SELECT s.id, d.k FROM src_38 s FULL JOIN digits d ON d.k = substr(s.phone, 3, 1)", "k"),
    ("SELECT s.id, d.k FROM src_38 s, digits d WHERE d.k = substr(s.phone, 3, 1)", "k"),
    ("SELECT s.id, d.k FROM src_38 s JOIN digits d ON d.k < substr(s.phone, 3, 1)", "k"),
    ("SELECT s.id, d.k FROM src_38 s JOIN digits d ON d.k = substr(s.phone, 3, 1) OR d.k = 'z'", "k"),
    (
        "SELECT s.id, count(d.k) AS n FROM src_38 s JOIN digits d ON d.k < substr(s.phone, 3, 1) GROUP BY s.id",
        "n",
    ),
    (
        "SELECT s.id, v.x FROM src_38 s JOIN (VALUES ('13', 'a'), ('15', 'b')) AS v(k, x) "
        "ON substr(s.phone, 1, 2) = v.k",
        "x",
    ),
    ("SELECT * FROM src_38 s JOIN digits d ON d.k = substr(s.phone, 3, 1)", "v"),
    # a chain: the second lookup is keyed by what the first one chose
    (
        "SELECT s.id, e.v FROM src_38 s JOIN digits d ON d.k = substr(s.phone, 3, 1) "
        "JOIN digits e ON e.k = d.v",
        "v",
    ),
    ("SELECT t.v FROM (SELECT d.v FROM src_38 s JOIN digits d ON d.k = substr(s.phone, 2, 1)) t", "v"),
    ("SELECT d.k FROM digits d LEFT SEMI JOIN src_38 s ON d.k = substr(s.phone, 3, 1)", "k"),
    # a position in an array the phone decides (item 3)
    (
        "SELECT id, pos FROM src_38 LATERAL VIEW posexplode(filter(split(phone, ''), x -> x = '1')) e AS pos, c",
        "pos",
    ),
    (
        "SELECT id, pos FROM src_38 "
        "LATERAL VIEW posexplode(array_repeat('x', cast(substr(phone, 2, 1) AS int))) e AS pos, c",
        "pos",
    ),
    # a cast to a number drops a leading zero: no whole value for the length after it (item 5)
    ("SELECT id, length(cast(phone AS bigint)) AS n FROM src_38", "n"),
    ("SELECT id, count(cast(phone AS int)) AS n FROM src_38 GROUP BY id", "n"),
    # the policy's secret function is never returned (item 4)
    (f"SELECT {SECRET}() AS salt FROM src_38", "salt"),
    (f"SELECT concat({SECRET}(), 'x') AS salt FROM src_38", "salt"),
    (f"SELECT concat({SECRET}(), id) AS salt FROM src_38", "salt"),
    (f"SELECT sha2(concat({SECRET}(), '13800001111'), 256) AS candidate FROM src_38", "candidate"),
]
#: joins that choose no less protected rows, or on no protected value at all
PLAIN_JOINS = [
    ("SELECT s.id, u.name FROM src_38 s JOIN users_38 u ON s.phone = u.phone", "name"),
    ("SELECT s.id, u.name FROM src_38 s JOIN users_38 u ON upper(s.phone) = u.phone", "name"),
    ("SELECT s.id, u.name FROM src_38 s, users_38 u WHERE u.phone = s.phone", "name"),
    ("SELECT d.v, e.v AS w FROM digits d JOIN digits e ON e.k = d.v", "w"),
    ("SELECT s.id, d.v FROM src_38 s JOIN digits d ON d.k = cast(s.id AS string)", "v"),
    ("SELECT s.id, length(cast(s.id AS bigint)) AS n FROM src_38 s", "n"),
    (f"SELECT id, sha2(concat({SECRET}(), phone), 256) AS h FROM src_38", "h"),
]


def named(service, sql: str, name: str):
    rewrite = service.rewrite("masked", sql)
    assert rewrite.decision.allowed, rewrite.decision
    [out] = [o for o in rewrite.outputs if o.name == name]
    return out


@pytest.mark.parametrize(("sql", "name"), LOOKUPS)
def test_a_value_a_protected_value_chooses_through_a_join_is_masked(service, sql, name):
    out = named(service, sql, name)
    assert out.masked, out.why


@pytest.mark.parametrize(("sql", "name"), PLAIN_JOINS)
def test_a_join_on_keys_no_less_protected_masks_nothing(service, sql, name):
    out = named(service, sql, name)
    assert not out.masked, out.why


def test_the_other_side_of_a_plain_protected_join_stays_masked(service):
    # the phone itself, and a user's phone chosen by the ssn (more protected than it)
    rewrite = service.rewrite(
        "masked", "SELECT s.phone, u.name FROM src_38 s JOIN users_38 u ON substr(s.ssn, 1, 11) = u.phone"
    )
    phone, name = rewrite.outputs
    assert phone.masked and name.masked, (phone.why, name.why)
    assert "decides:join" in name.why and "against:default.users_38.phone" in name.why
