"""Hashes of enumerable types (issue 35 item 2): a plain hash of a phone number or an ssn keeps its
level in propagation too (`rules.derive`, the table the gateway uses); a keyed hash downgrades."""

from __future__ import annotations

import pytest

from watershed.propagation.policy import Policy, PolicyError, default_policy
from watershed.propagation.rules import SEED, Incoming, TagValue, derive

POLICY = default_policy()


def tags(level: str, kind: str | None) -> dict[str, TagValue]:
    found = {"pii": TagValue("pii", frozenset([level]), SEED)}
    if kind is not None:
        found["pii_type"] = TagValue("pii_type", frozenset([kind]), SEED)
    return found


def level(functions, kind="phone", policy=POLICY, strict=False):
    edge = Incoming("ods.u.c", tags("L3", kind), "t1", "expression", tuple(functions))
    derived = derive([edge], policy, strict=strict)
    return sorted(derived["pii"].values) if "pii" in derived else None


@pytest.mark.parametrize("hash_", ["md5", "sha1", "sha2", "hash", "xxhash64", "crc32"])
@pytest.mark.parametrize("kind", ["phone", "ssn", "id_card", "bank_card"])
def test_a_plain_hash_of_an_enumerable_type_keeps_its_level(hash_, kind):
    assert level([hash_], kind) == ["L3"]
    assert level(["trim", hash_], kind) == ["L3"]


def test_a_hash_of_a_type_not_enumerable_still_downgrades():
    assert level(["md5"], "email") == ["L1"]
    assert level(["md5"], None) == ["L1"]


def test_a_keyed_hash_downgrades_any_type():
    assert level(["hmac"], "phone") == ["L1"]
    salted = Policy.from_data({**POLICY.model_dump(), "secret_functions": ["Vault_Salt"]})
    assert level(["vault_salt", "concat", "sha2"], "phone", salted) == ["L1"]
    # the salt must come before the hash: a salt concatenated after it keys nothing
    assert level(["sha2", "vault_salt", "concat"], "phone", salted) == ["L3"]
    # without the policy naming it, a column-free function is no secret
    assert level(["vault_salt", "concat", "sha2"], "phone") == ["L3"]


def test_the_rule_is_written_in_the_provenance():
    edge = Incoming("ods.u.phone", tags("L3", "phone"), "t1", "expression", ("md5",))
    assert derive([edge], POLICY)["pii"].provenance[0].rule == "keep:md5 of enumerable phone"


def test_the_policy_names_the_enumerable_types():
    data = POLICY.model_dump()
    data["sensitivity"]["pii"]["enumerable"] = ["ssn"]
    only_ssn = Policy.from_data(data)
    assert level(["md5"], "phone", only_ssn) == ["L1"]
    assert level(["md5"], "ssn", only_ssn) == ["L3"]
    data["sensitivity"]["pii"]["enumerable"] = ["passport"]
    with pytest.raises(PolicyError, match=r"sensitivity\.pii: enumerable: passport not one of its types"):
        Policy.from_data(data, source="p.yaml")


def test_default_enumerable_types_are_those_of_the_family():
    family = Policy.from_data(
        {"sensitivity": {"pii": {"levels": ["L1", "L2"], "types_key": "t", "types": ["phone", "email"]}}}
    ).sensitivity["pii"]
    assert family.enumerable == ["phone"]


def test_strict_mode_keeps_a_level_a_computed_value_would_lose():
    # propagation: a length or a count drops the tag wherever it stands on the path
    assert level(["regexp_replace", "length"], "email") is None
    assert level(["like", "decides:case", "count"], "email") is None
    # the gateway: only of the column's whole value
    assert level(["regexp_replace", "length"], "email", strict=True) == ["L3"]
    assert level(["like", "decides:case", "count"], "email", strict=True) == ["L3"]
    assert level(["upper", "length"], "email", strict=True) is None
    assert level(["substr", "md5"], "email", strict=True) == ["L3"]
    assert level(["upper", "md5"], "email", strict=True) == ["L1"]
    conditional = Policy.from_data(
        {**POLICY.model_dump(), "conditional_value": "drop", "unknown_function": "drop"}
    )
    edge = Incoming("ods.u.c", tags("L3", "email"), "t1", "conditional-value", ("decides:if",))
    assert derive([edge], conditional) == {}
    assert sorted(derive([edge], conditional, strict=True)["pii"].values) == ["L3"]
