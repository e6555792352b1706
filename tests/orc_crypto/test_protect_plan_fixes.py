"""Review fixes of the plan (issue 14): the full target, files that lack a wanted column, and
corrupt tails reported per file instead of aborting the plan."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.orc as orc
import pytest

from tests.support.plan_table import TABLE, apply, files, policy, set_table, tags
from watershed.graph.protection import ColumnKey
from watershed.orc_crypto.codec.tail import read_tail
from watershed.orc_crypto.encrypt import encrypt_file
from watershed.orc_crypto.errors import OrcFormatError
from watershed.orc_crypto.protect.plan import plan_protection
from watershed.orc_crypto.protect.tails import file_protection

# the plan tests' fixtures `provider` and `warehouse` are tests/orc_crypto/conftest.py's

PII = ColumnKey(key="pii", mask="nullify")


def test_the_target_holds_every_protected_column_unchanged_ones_included(graph_store, warehouse, provider):
    apply(graph_store, plan_protection(graph_store, policy()), provider)
    set_table(graph_store, TABLE, str(warehouse), {"email": tags("L3")})
    [table] = plan_protection(graph_store, policy()).tables
    assert [c.name for c in table.columns if c.action == "encrypt"] == ["email"]
    assert table.target == {"ssn": PII, "email": PII}


def test_the_target_is_filled_on_a_first_plan_too(graph_store, warehouse):
    [table] = plan_protection(graph_store, policy()).tables
    assert table.target == {"ssn": PII}


def test_a_file_without_the_wanted_column_at_top_level_is_a_problem(graph_store, warehouse):
    hive = warehouse / "dt=2026-01-03"
    hive.mkdir()
    positional = pa.table({"_col0": [1], "_col1": ["a"], "_col2": ["x@y"]})
    orc.write_table(positional, hive / "part-0.orc")
    [table] = plan_protection(graph_store, policy()).tables
    assert str(hive / "part-0.orc") not in [f.path for f in table.files]
    assert len(table.files) == 2  # the two files that have `ssn` are still planned
    [problem] = table.problems
    assert str(hive / "part-0.orc") in problem and "ssn" in problem and "_col0" in problem


def test_a_corrupt_file_is_a_problem_and_the_others_are_planned(graph_store, warehouse):
    bad = warehouse / "dt=2026-01-01" / "part-9.orc"
    bad.write_bytes(b"ORC" + b"\x00" * 40)
    [table] = plan_protection(graph_store, policy()).tables
    assert [f.path for f in table.files] == files(warehouse)
    [problem] = table.problems
    assert str(bad) in problem


@pytest.mark.parametrize("field", ["key", "root"])
def test_an_out_of_range_index_in_the_encryption_footer_names_the_file(warehouse, provider, field):
    path = files(warehouse)[0]
    encrypt_file(path, path, provider, {"pii": ["ssn"]}, {"ssn": "nullify"}, in_place=True)
    tail = read_tail(path)
    assert set(file_protection(tail)) == {"ssn"}
    setattr(tail.footer.encryption.variants[0], field, 99)
    with pytest.raises(OrcFormatError) as caught:
        file_protection(tail)
    assert path in str(caught.value) and "99" in str(caught.value)
