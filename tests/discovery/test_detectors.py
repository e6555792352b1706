"""Each detector on valid values and on near misses: wrong check digits, wrong lengths, look-alikes."""

from __future__ import annotations

import random

import pytest

from bench.pii_values import bank_card, cn_ric, luhn_check, ric_check
from watershed.discovery.detectors import (
    DEFAULT_REGIONS,
    Detector,
    UnknownRegionError,
    detectors_for,
    keep_ends,
    mask_card,
    mask_email,
    mask_identifier,
    mask_ip,
    mask_phone,
    mask_ssn,
)


@pytest.fixture(scope="module")
def detectors() -> dict[str, Detector]:
    return {d.name: d for d in detectors_for(DEFAULT_REGIONS)}


CASES = {
    "email": (
        ["john.doe@example.com", "li_lei+tag@mail.example.cn", " a.b@sub.example.org "],
        ["john.doe@", "a@b", "a@@example.com", "john doe@example.com", "@example.com", "x@example", "plain"],
    ),
    "phone": (
        # CN mobiles bare or with +86, a Beijing landline with its trunk 0, US numbers as written
        [
            "13812345678",
            "+86 138 1234 5678",
            "010-12345678",
            "(415) 555-2671",
            "+1 415 555 2671",
            "14155552671",
        ],
        # too short, too long, a mobile prefix that does not exist, a landline without its trunk 0
        # (any id starting with 10), an IPv4 address, letters
        ["1381234567", "138123456789", "11012345678", "1012345678", "192.168.10.1", "tel:13812345678"],
    ),
    "bank_card": (
        [
            "4111111111111111",
            "4111 1111 1111 1111",
            "378282246310005",
            "6011111111111117",
            "5555555555554444",
        ],
        # Luhn off by one, the right Luhn but no issuer's length, an issuer no network has, too short
        ["4111111111111112", "41111111111111111", "9111111111111116", "411111111111", "abcd111111111111"],
    ),
    "ip": (
        ["192.168.1.10", "8.8.8.8", "2001:db8::1", "::1"],
        ["999.1.1.1", "1.2.3", "192.168.1", "1.2.3.4.5", "2001:db8:::1", "12"],
    ),
    "cn_ric": (
        ["11010519491231002X", "440103198503101472", "510104199001010019"],
        # wrong check digit, a 13th month, 17 characters, a province that does not exist
        ["110105194912310021", "11010519491331002X", "11010519491231002", "990105194912310027"],
    ),
    "us_ssn": (
        ["536-90-4399", "401-23-5678"],
        # bare or spaced digits (no check digit: any nine digits), area 000, 666 and 9xx, group 00, serial 0000
        [
            "536904399",
            "536 90 4399",
            "000-12-3456",
            "666-12-3456",
            "900-12-3456",
            "536-00-4399",
            "536-90-0000",
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_valid_values_validate(detectors, name):
    valid, _ = CASES[name]
    assert [v for v in valid if not detectors[name].matches(v)] == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_near_misses_do_not_validate(detectors, name):
    _, invalid = CASES[name]
    assert [v for v in invalid if detectors[name].matches(v)] == []


def test_the_ric_oracle_agrees_with_the_detector_and_a_changed_check_digit_fails(detectors):
    """Numbers built with the standard's own weights validate; every other last character fails."""
    r = random.Random(3)
    for _ in range(200):
        number = cn_ric(r)
        assert detectors["cn_ric"].matches(number), number
        for other in "0123456789X":
            if other != number[-1]:
                assert not detectors["cn_ric"].matches(number[:-1] + other)
    assert ric_check("11010519491231002") == "X"


def test_every_other_check_digit_of_a_card_fails(detectors):
    r = random.Random(5)
    for _ in range(200):
        number = bank_card(r)
        assert detectors["bank_card"].matches(number), number
        assert luhn_check(number[:-1]) == number[-1]
        for other in "0123456789":
            if other != number[-1]:
                assert not detectors["bank_card"].matches(number[:-1] + other)


def test_a_library_failing_on_odd_input_is_no_match():
    def broken(value: str) -> bool:
        raise KeyError("county")

    assert not Detector("x", "id_card", "L4", broken, mask_identifier).matches("110105194912310021")


def test_regions_choose_the_identifiers_and_a_bad_region_is_named():
    names = {d.name for d in detectors_for(["BR", "US"])}
    assert {"br_cpf", "us_ssn"} <= names and "cn_ric" not in names
    brazil = {d.name: d for d in detectors_for(["BR"])}
    assert brazil["br_cpf"].matches("390.533.447-05")
    assert not brazil["br_cpf"].matches("390.533.447-06")
    with pytest.raises(UnknownRegionError, match="XX"):
        detectors_for(["CN", "XX"])


@pytest.mark.parametrize(
    ("mask", "value", "masked"),
    [
        (mask_phone, "13812345678", "138******78"),
        (mask_phone, "+86 138 1234 5678", "861*******678"),
        (mask_email, "john.doe@example.com", "j*******@e******.com"),
        (mask_card, "4111 1111 1111 1111", "************1111"),
        (mask_identifier, "11010519491231002X", "110*************2X"),
        (mask_ssn, "536-90-4399", "***-**-4399"),
        (mask_ip, "192.168.1.10", "192.168.*.*"),
    ],
)
def test_masks(mask, value, masked):
    assert mask(value) == masked


def test_a_mask_hides_at_least_half_whatever_it_is_asked():
    for text in ["", "a", "ab", "abcdef", "abcdefghijk"]:
        masked = keep_ends(text, 5, 5)
        assert len(masked) == len(text)
        assert masked.count("*") >= len(text) - len(text) // 2
