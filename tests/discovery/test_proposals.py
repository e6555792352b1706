"""From sampled values to proposals: confidence, masked evidence, thresholds, content fingerprints."""

from __future__ import annotations

import random

import pytest

from bench.pii_values import KINDS, cn_mobile, column_values, md5_hex
from tests.discovery.warehouse import EXPECTED, LABELLED, labelled_table
from watershed.discovery.detectors import detectors_for
from watershed.discovery.proposals import Thresholds, content_fingerprint, judge, level_tags, propose

DETECTORS = detectors_for(["CN", "US"])
NAMED_LEVELS = {"ssn": "L4", "email": "L3", "phone": "L3"}


def tags_of(detector):
    return level_tags(detector, "pii", "pii_type", ["L1", "L2", "L3", "L4"], NAMED_LEVELS)


def _propose(column, values, name_type=None, thresholds=Thresholds()):
    verdict = judge(values, DETECTORS)
    return propose(
        f"ods.t.{column}", "ods.t", verdict, DETECTORS, tags_of, thresholds, at="now", name_type=name_type
    )


def test_columns_whose_names_say_nothing_are_found_and_decoys_are_not():
    table = labelled_table(rows=200)
    found = {}
    for column in LABELLED:
        values = [v for v in table.column(column).to_pylist() if v is not None]
        proposal = _propose(column, values)
        if proposal is not None:
            found[column] = proposal.tags["pii_type"]
    assert found == EXPECTED


def test_a_proposal_says_its_confidence_over_how_many_values_and_shows_two_masked_examples():
    r = random.Random(1)
    phones = [cn_mobile(r) for _ in range(90)]
    values = phones + [md5_hex(r) for _ in range(10)] + ["", "  "]
    proposal = _propose("c17", values)
    assert proposal.tags == {"pii": "L3", "pii_type": "phone"}
    assert proposal.sampled == 100  # blanks are no values
    assert proposal.confidence == 0.9
    assert proposal.evidence.detectors == {"phone": 90}
    assert len(proposal.evidence.examples) == 2
    for example, raw in zip(proposal.evidence.examples, phones, strict=False):
        assert example != raw and "*" in example and len(example) == len(raw)
        assert example[:3] == raw[:3] and example[-2:] == raw[-2:]


def test_below_the_confidence_or_with_too_few_values_nothing_is_proposed():
    r = random.Random(2)
    mixed = [cn_mobile(r) for _ in range(60)] + [md5_hex(r) for _ in range(40)]
    assert _propose("c17", mixed) is None  # 0.6 < 0.8
    assert _propose("c17", [cn_mobile(r) for _ in range(9)]) is None  # 9 < min_sampled 10
    assert _propose("c17", [cn_mobile(r) for _ in range(10)]) is not None


def test_the_name_rules_agreeing_lower_the_bar():
    r = random.Random(2)
    mixed = [cn_mobile(r) for _ in range(60)] + [md5_hex(r) for _ in range(40)]
    proposal = _propose("contact_phone", mixed, name_type="phone")
    assert proposal is not None and proposal.evidence.name_rule == "phone"
    assert _propose("contact_email", mixed, name_type="email") is None  # the name says another type


def test_levels_come_from_the_name_rules_else_the_detector_else_the_top_level():
    by_name = {d.name: d for d in DETECTORS}
    assert tags_of(by_name["us_ssn"]) == {"pii": "L4", "pii_type": "ssn"}
    assert tags_of(by_name["ip"]) == {"pii": "L2", "pii_type": "ip"}
    assert level_tags(by_name["cn_ric"], "pii", "pii_type", ["low", "high"], {}) == {
        "pii": "high",
        "pii_type": "id_card",
    }


def test_the_content_fingerprint_is_the_kind_of_content_not_the_rows():
    r = random.Random(4)
    first = judge(column_values("cn_mobile", 100, r), DETECTORS)
    second = judge(column_values("cn_mobile", 100, r), DETECTORS)
    emails = judge(column_values("email", 100, r), DETECTORS)
    assert content_fingerprint(first, DETECTORS, 0.5) == content_fingerprint(second, DETECTORS, 0.5)
    assert content_fingerprint(first, DETECTORS, 0.5) != content_fingerprint(emails, DETECTORS, 0.5)


@pytest.mark.parametrize("kind", sorted(k for k, (_, t) in KINDS.items() if t is None))
def test_decoys_alone_are_not_proposed(kind):
    assert _propose("x", column_values(kind, 300, random.Random(9))) is None


def test_a_mask_that_fails_hides_the_whole_value_and_never_raises_it():
    from watershed.discovery.detectors import Detector

    def mask(value: str) -> str:
        raise ValueError(f"cannot mask {value}")

    broken = Detector("broken", "phone", "L3", validate=lambda v: True, mask=mask)
    verdict = judge(["13812345678"], [broken])
    assert verdict.examples["broken"] == ["*" * 11]
