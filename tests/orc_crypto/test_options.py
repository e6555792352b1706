"""ORC's orc.encrypt / orc.mask option syntax: quoting, nested names, conflicts and errors."""

from __future__ import annotations

import pytest

from watershed.orc_crypto.options import (
    MaskSpec,
    OptionError,
    format_mask,
    parse_encrypt_option,
    parse_mask,
    parse_mask_option,
    quote_name,
    split_field,
)


def test_encrypt_option():
    assert parse_encrypt_option("pii:ssn,email;fin:salary") == {"pii": ["ssn", "email"], "fin": ["salary"]}
    assert parse_encrypt_option("pii:`my col`,addr.zip,3") == {"pii": ["`my col`", "addr.zip", "3"]}
    assert parse_encrypt_option("pii:a;pii:b") == {"pii": ["a", "b"]}
    assert parse_encrypt_option("  ") == {}


def test_mask_option_keeps_the_mask_text_with_its_quotes():
    masks = parse_mask_option("nullify:ssn;sha256:email;redact,`Xx9$.`,`_`,`0:2,-3:-1`:salary,name")
    assert masks == {
        "ssn": "nullify",
        "email": "sha256",
        "salary": "redact,`Xx9$.`,`_`,`0:2,-3:-1`",
        "name": "redact,`Xx9$.`,`_`,`0:2,-3:-1`",
    }
    assert parse_mask(masks["salary"]) == MaskSpec("redact", ("Xx9$.", "_", "0:2,-3:-1"), masks["salary"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("pii", "expected ':'"),
        ("pii:", "missing name"),
        ("pii:a b", "unexpected text"),
        ("pii:`open", "unmatched backquote"),
        ("pii:``", "empty quoted name"),
        ("pii:a;fin:a", "two keys"),
    ],
)
def test_encrypt_option_errors(text, message):
    with pytest.raises(OptionError, match=message):
        parse_encrypt_option(text)


def test_mask_option_errors():
    with pytest.raises(OptionError, match="two masks"):
        parse_mask_option("nullify:a;sha256:a")
    with pytest.raises(OptionError, match=r"unexpected text at position 10 \(back-quote"):
        parse_mask_option("redact,0:3:a")


def test_quoting_round_trips():
    assert quote_name("plain_1") == "plain_1"
    assert quote_name("a.b") == "`a.b`"
    assert quote_name("back`tick") == "`back``tick`"
    assert split_field("a.`b.c`.`x``y`") == ["a", "b.c", "x`y"]
    text = format_mask("redact", ["Xx", "0:3"])
    assert text == "redact,Xx,`0:3`"
    assert parse_mask(text).parameters == ("Xx", "0:3")
