"""Parameters rendered into FalkorDB's `CYPHER name=value` header come back from a real server
exactly as the Python strings were: control characters (Hive's `\\001` field separator), quotes,
backslashes, backticks, non-ASCII, and map keys that are not identifiers."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from watershed.graph.falkordb_store import cypher_literal

CONTROL = "".join(chr(c) for c in range(1, 0x20)) + "\x7f"

STRINGS = [
    "\x01",
    "a\x01b\x02c",
    CONTROL,
    "\\u0001",  # the text the old rendering stored for "\x01"
    "\\\x01",
    "\\\\u0001",
    "\\",
    'say "hi"',
    "it's",
    "`tick`",
    "é ü 中文",
    "😀 𝄞",
    'a\\"b',
    "line\nbreak\ttab\r",
    "",
]

KEYS = [
    'has"quote',
    "has space",
    "has'apostrophe",
    "x\x01y",
    "back\\slash",
    "é",
    "😀",
    "1",
    "",
    "plain",
    'x"abc',
    "\\u0001",
]

# Everything the server can store: no NUL (its strings are C strings) and no lone surrogates
# (not UTF-8).
_text = st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=12)
_key = st.text(st.characters(exclude_characters="\x00`", exclude_categories=("Cs",)), max_size=8)


def _round_trip(store, value, mapping):
    """Writes `value` and `mapping` through the load path (`_write`), reads them back."""
    store.write_all(
        [
            (
                "CREATE (:Tag {id: 'probe', value: $value, key: keys($map), "
                "name: [k IN keys($map) | $map[k]]})",
                {"value": value, "map": mapping},
            )
        ]
    )
    rows = store.read("MATCH (t:Tag {id: 'probe'}) RETURN t.value, t.key, t.name")
    store.execute("MATCH (t:Tag {id: 'probe'}) DELETE t")
    assert len(rows) == 1
    stored, keys, values = rows[0]
    return stored, dict(zip(keys or [], values or [], strict=True))


@pytest.mark.parametrize("text", STRINGS, ids=repr)
def test_strings_are_stored_exactly(graph_store, text):
    stored, mapping = _round_trip(graph_store, text, {"value": text})
    assert stored == text
    assert mapping == {"value": text}


def test_map_keys_that_are_not_identifiers(graph_store):
    mapping = {key: f"v{i}\x01" for i, key in enumerate(KEYS)}
    _, stored = _round_trip(graph_store, "x", mapping)
    assert stored == mapping


def test_nested_rows_as_a_load_sends_them(graph_store):
    rows = [{"id": f"r{i}", "predicates": [f"col = '\x01{i}'"], "odd key": {'k"': "\x1f"}} for i in range(3)]
    graph_store.write_all(
        [
            (
                "UNWIND $rows AS row CREATE (:Tag {id: row.id, predicates: row.predicates, "
                "value: row['odd key']['k\"']})",
                {"rows": rows},
            )
        ]
    )
    stored = graph_store.read("MATCH (t:Tag) RETURN t.id, t.predicates, t.value ORDER BY t.id")
    assert stored == [[row["id"], row["predicates"], "\x1f"] for row in rows]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_text, mapping=st.dictionaries(_key, _text, max_size=4))
def test_any_string_and_key_round_trips(graph_store, value, mapping):
    stored, stored_map = _round_trip(graph_store, value, mapping)
    assert stored == value
    assert stored_map == mapping


@pytest.mark.parametrize(
    ("value", "why"),
    [("a\x00b", "NUL"), ({"a`b": 1}, "backtick"), ({"a\x00": 1}, "NUL"), ([{"x": "\x00"}], "NUL")],
)
def test_what_the_server_cannot_hold_is_refused(value, why):
    with pytest.raises(ValueError, match=why):
        cypher_literal(value)
