"""The semantic rules, one test per rule, on hand-made incoming edges."""

from __future__ import annotations

import pytest

from watershed.propagation.policy import Policy, PolicyError, default_policy
from watershed.propagation.rules import MANUAL, SEED, TABLE_EDGE, Incoming, TagValue, derive, filter_values


@pytest.fixture(scope="module")
def policy() -> Policy:
    return default_policy()


def seed(key: str, *values: str) -> TagValue:
    return TagValue(key, frozenset(values), SEED)


PII = {
    "pii": seed("pii", "L3"),
    "pii_type": seed("pii_type", "email"),
    "app": seed("app", "douyin", "toutiao"),
}


def edge(kind="direct", functions=(), weak=False, filters=None, tags=PII, source="ods.u.email"):
    return Incoming(source, tags, "task1", kind, tuple(functions), weak, filters or {})


def values(tags, key):
    return set(tags[key].values) if key in tags else None


def test_direct_inherits_everything(policy):
    tags = derive([edge()], policy)
    assert values(tags, "pii") == {"L3"} and values(tags, "pii_type") == {"email"}
    assert values(tags, "app") == {"douyin", "toutiao"}
    prov = tags["pii"].provenance[0]
    assert (prov.source, prov.task, prov.kind, prov.hops) == ("ods.u.email", "task1", "direct", 1)


def test_value_preserving_expression_keeps(policy):
    tags = derive([edge("expression", ["trim", "upper", "substr"])], policy)
    assert values(tags, "pii") == {"L3"} and tags["pii"].provenance[0].rule == "keep"


def test_count_drops(policy):
    tags = derive([edge("aggregate", ["count_distinct"])], policy)
    assert "pii" not in tags and "pii_type" not in tags
    assert values(tags, "app") == {"douyin", "toutiao"}


def test_hash_downgrades_to_the_pseudonymised_level(policy):
    tags = derive([edge("expression", ["lower", "md5"])], policy)
    assert values(tags, "pii") == {"L1"}
    assert tags["pii"].provenance[0].rule == "downgrade:md5->L1"


def test_level_is_the_maximum_of_contributions(policy):
    low = edge("expression", ["sha2"], source="ods.u.a")
    high = edge(source="ods.u.b", tags={"pii": seed("pii", "L4")})
    tags = derive([low, high], policy)
    assert values(tags, "pii") == {"L4"}
    assert [p.source for p in tags["pii"].provenance] == ["ods.u.b"]


def test_weak_reference_carries_nothing_by_default(policy):
    assert derive([edge("filter", weak=True)], policy) == {}
    business = Policy.from_data({**policy.model_dump(), "weak_references": "business"})
    tags = derive([edge("filter", weak=True)], business)
    assert set(tags) == {"app"}


@pytest.mark.parametrize(
    ("predicates", "expected"),
    [
        ([("app", "=", ["douyin"])], {"douyin"}),
        ([("app", "in", ["douyin", "xigua"])], {"douyin"}),
        ([("app_id", "=", ["1128"])], {"douyin"}),
    ],
)
def test_filter_narrows_business_values(policy, predicates, expected):
    tags = derive([edge(filters=filter_values(predicates, policy))], policy)
    assert values(tags, "app") == expected
    assert tags["app"].provenance[0].rule.startswith("narrow:app")


def test_union_of_inputs_merges_values(policy):
    a = edge(source="ods.a.x", tags={"app": seed("app", "douyin")})
    b = edge(source="ods.b.x", tags={"app": seed("app", "xigua")})
    assert values(derive([a, b], policy), "app") == {"douyin", "xigua"}


def test_block_and_manual_win(policy):
    manual = {"pii": TagValue("pii", frozenset(["L2"]), MANUAL)}
    tags = derive([edge()], policy, manual=manual, blocks=frozenset(["pii_type"]))
    assert values(tags, "pii") == {"L2"} and tags["pii"].origin == MANUAL
    assert "pii_type" not in tags


def test_conditional_value_rule_is_configurable(policy):
    assert values(derive([edge("conditional-value")], policy), "pii") == {"L3"}
    strict = Policy.from_data({**policy.model_dump(), "conditional_value": "downgrade:L2"})
    assert values(derive([edge("conditional-value")], strict), "pii") == {"L2"}


def test_function_table_overrides_and_retype(policy):
    custom = Policy.from_data(
        {
            **policy.model_dump(),
            "functions": {"sum": "drop", "mask_email": "retype:name", "tokenize": "downgrade:L2"},
        }
    )
    assert "pii" not in derive([edge("aggregate", ["sum"])], custom)
    retyped = derive([edge("expression", ["mask_email"])], custom)
    assert values(retyped, "pii_type") == {"name"} and values(retyped, "pii") == {"L3"}
    assert values(derive([edge("expression", ["tokenize"])], custom), "pii") == {"L2"}


def test_table_tag_is_union_of_inputs_after_narrowing(policy):
    def table_edge(source, tags, filters):
        return Incoming(source, tags, "t1", TABLE_EDGE, (), False, filters)

    tags = derive(
        [
            table_edge(
                "ods.a",
                {"app": seed("app", "douyin", "toutiao"), "pii": seed("pii", "L4")},
                {"app": frozenset(["douyin"])},
            ),
            table_edge("ods.b", {}, {"app": frozenset(["xigua"])}),
            table_edge("ods.d", {"app": seed("app", "xigua", "lark")}, {}),
            table_edge("ods.c", {"region": seed("region", "cn")}, {}),
        ],
        policy,
    )
    # ods.b has no app values: its filter narrows nothing into existence
    assert values(tags, "app") == {"douyin", "xigua", "lark"} and values(tags, "region") == {"cn"}
    assert "pii" not in tags  # sensitivity follows columns, not tables


def test_seed_rules_from_column_name_patterns(policy):
    assert policy.seed_tags("ods.user.ssn_raw") == {"pii": "L4", "pii_type": "ssn"}
    assert policy.seed_tags("ods.user.city") == {}


def test_bad_policy_names_the_key():
    with pytest.raises(PolicyError, match=r"functions: .*explode.*keep, drop"):
        Policy.from_data({"functions": {"md5": "explode"}}, source="p.yaml")
    with pytest.raises(PolicyError, match=r"p.yaml: sensitivity.pii.levels"):
        Policy.from_data({"sensitivity": {"pii": {"levels": []}}}, source="p.yaml")
    with pytest.raises(PolicyError, match=r"names no level"):
        Policy.from_data({"sensitivity": {"pii": {"levels": ["L1"]}}, "functions": {"md5": "downgrade:L9"}})
