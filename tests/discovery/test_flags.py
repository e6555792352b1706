"""The pure parts of leak and over-tag flags: which level is a leak, which paths keep a value's
form, and when a sample clearly holds none of a tag's types."""

from __future__ import annotations

from watershed.discovery.detectors import detectors_for
from watershed.discovery.flags import clearly_not, is_leak, keeps_form
from watershed.discovery.proposals import Thresholds, judge

LEVELS = ["L1", "L2", "L3", "L4"]
DETECTORS = detectors_for(["CN", "US"])
PHONES = [f"1380013{i:04d}" for i in range(8000, 8020)]


def test_a_leak_is_no_tag_or_a_lower_level():
    assert is_leak("L3", None, LEVELS) and is_leak("L3", "L1", LEVELS) and is_leak("L3", "nonsense", LEVELS)
    assert not is_leak("L3", "L3", LEVELS) and not is_leak("L3", "L4", LEVELS)


def test_only_whole_value_functions_keep_the_form():
    assert keeps_form([]) and keeps_form(["upper", "trim", "cast", "coalesce", "max"])
    assert not keeps_form(["upper", "md5"]) and not keeps_form(["substr"]) and not keeps_form(["concat"])


def test_clearly_not_needs_enough_values_and_known_types():
    models = judge(["iPhone 12", "Mi 11", "Pixel 7"] * 10, DETECTORS)
    thresholds = Thresholds(min_sampled=10)
    assert clearly_not(models, DETECTORS, ["phone"], thresholds, 0.02) == 0.0
    assert clearly_not(judge(["iPhone 12"] * 5, DETECTORS), DETECTORS, ["phone"], thresholds, 0.02) is None
    assert clearly_not(models, DETECTORS, ["name"], thresholds, 0.02) is None  # no detector knows names
    assert clearly_not(models, DETECTORS, [], thresholds, 0.02) is None
    mostly = judge(PHONES[:2] + ["iPhone 12"] * 28, DETECTORS)
    assert clearly_not(mostly, DETECTORS, ["phone"], thresholds, 0.02) is None  # 2 of 30 validate
    assert abs(clearly_not(mostly, DETECTORS, ["phone"], thresholds, 0.1) - 2 / 30) < 1e-9
    assert clearly_not(judge(PHONES, DETECTORS), DETECTORS, ["phone"], thresholds, 0.02) is None
