"""Issue 11 item 14: node ids are unambiguous, one spelling per name, parsed by one function."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from watershed.graph import ids
from watershed.graph.model import node_label

# Names as lower-case identifiers may hold anything, dots and backticks included.
NAMES = st.text(alphabet="ab.`_ 1", min_size=1, max_size=6)


def test_dotted_names_give_different_ids() -> None:
    assert ids.join("ods", "x", "y.z") == "ods.x.`y.z`"
    assert ids.join("ods", "x.y", "z") == "ods.`x.y`.z"
    assert ids.join("ods", "x", "y.z") != ids.join("ods", "x.y", "z")
    assert ids.split("ods.x.`y.z`") == ["ods", "x", "y.z"]
    assert ids.split("ods.`x.y`.z") == ["ods", "x.y", "z"]


def test_plain_names_are_not_quoted_and_backticks_are_doubled() -> None:
    assert ids.join("ods", "user_log", "uid") == "ods.user_log.uid"
    assert ids.quote("a`b") == "`a``b`"
    assert ids.split("ods.t.`a``b`") == ["ods", "t", "a`b"]
    assert ids.canonical("ods.`t`.`c`") == "ods.t.c"


def test_parent_name_and_depth_respect_quoting() -> None:
    column = "ods.`x.y`.`a.b`"
    assert ids.parent(column) == "ods.`x.y`"
    assert ids.name(column) == "a.b"
    assert ids.split_last(column) == ("ods.`x.y`", "a.b")
    assert ids.child("ods.`x.y`", "a.b") == column
    assert ids.depth(column) == 3 and ids.depth("ods.`x.y`") == 2
    assert ids.parent("ods.t.c") == "ods.t" and ids.name("ods.t.c") == "c"


def test_node_label_follows_the_parts_not_the_dots() -> None:
    assert node_label("ods.t") == "Table"
    assert node_label("ods.t.c") == "Column"
    assert node_label("ods.`x.y`") == "Table"
    assert node_label("ods.x.`y.z`") == "Column"


@pytest.mark.parametrize("bad", ["ods.`x", "ods.`x`y.z", "ods..z", ".x", "x.", "o`ds.x"])
def test_broken_quoting_is_an_error(bad: str) -> None:
    with pytest.raises(ids.InvalidIdError):
        ids.split(bad)


@given(st.lists(NAMES, min_size=1, max_size=4))
def test_split_inverts_join(names: list[str]) -> None:
    node_id = ids.join(*names)
    assert ids.split(node_id) == names
    assert ids.canonical(node_id) == node_id
    assert ids.depth(node_id) == len(names)
    if len(names) > 1:
        assert ids.split_last(node_id) == (ids.join(*names[:-1]), names[-1])


@given(st.lists(NAMES, min_size=1, max_size=4), st.lists(NAMES, min_size=1, max_size=4))
def test_different_names_never_share_an_id(first: list[str], second: list[str]) -> None:
    if first != second:
        assert ids.join(*first) != ids.join(*second)


def test_path_tables_keep_the_location_and_meet_whatever_the_format():
    written = ids.path_table("/data/out/")
    assert written == "path:fs./data/out"
    assert ids.split(written) == ["path:fs", "/data/out"]
    assert ids.depth(written) == 2 and ids.depth(ids.child(written, "c")) == 3
    assert ids.path_table("/data/out") == written
    assert ids.path_table("/Data/Out") != written  # paths are case-sensitive
    assert ids.path_table("/tmp/x", local=True) == "path:local./tmp/x"
    assert ids.path_table("s3a://bucket/d.parquet") == "path:fs.`s3a://bucket/d.parquet`"
    assert ids.is_path(written) and not ids.is_path("path.t") and not ids.is_path("cat2:db.t")
    with pytest.raises(ids.InvalidIdError, match="empty path"):
        ids.path_table("  ")
