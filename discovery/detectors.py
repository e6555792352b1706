"""Per-value detectors: each validates one kind of sensitive value with a well-kept library.

A detector has a name, the `pii_type` it proposes with a default level (the use case takes the
level the policy's name rules give that type, when they give one), a validator and a mask. The
validators are the libraries' own (email-validator, phonenumbers, python-stdnum, ipaddress): a
value counts only when the library accepts it, check digits included. A cheap test of the
value's shape runs first, so that the libraries see only candidates (phonenumbers costs about
0.2 ms a value).

A validator never raises: a library that fails on odd input (python-stdnum 2.2's `cn.ric` raises
KeyError on some birth places) counts as "does not validate". Nothing here logs or keeps a value.
"""

from __future__ import annotations

import importlib
import ipaddress
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import phonenumbers
from email_validator import EmailNotValidError, validate_email
from stdnum import luhn
from stdnum.cn import ric
from stdnum.exceptions import ValidationError

from watershed.graph.errors import WatershedError

#: regions phone numbers are read in when a setting names none
DEFAULT_REGIONS = ("CN", "US")


@dataclass(frozen=True)
class Detector:
    name: str
    #: the pii_type a column of such values is proposed with
    pii_type: str
    #: the level proposed when the policy's name rules give this type none
    level: str
    validate: Callable[[str], bool]
    mask: Callable[[str], str]

    def matches(self, value: str) -> bool:
        try:
            return bool(self.validate(value))
        except Exception:  # a library's bug on odd input is "not this kind of value", never a crash
            return False

    def masked(self, value: str) -> str:
        """The example shown for `value`; a mask that fails hides it whole, since its exception
        could carry the value into a log or an answer."""
        try:
            return self.mask(value)
        except Exception:
            return "*" * len(value)


# ---------------------------------------------------------------- masks


def keep_ends(value: str, head: int, tail: int, fill: str = "*") -> str:
    """`value` with all but `head` leading and `tail` trailing characters replaced by `fill`; at
    least half of the characters are always hidden, whatever `head` and `tail` ask."""
    shown = max(0, min(head + tail, len(value) // 2))
    head = min(head, shown)
    tail = min(tail, shown - head)
    return value[:head] + fill * (len(value) - head - tail) + (value[len(value) - tail :] if tail else "")


def _digits(value: str) -> str:
    return "".join(c for c in value if c.isdigit())


def mask_phone(value: str) -> str:
    """138****5678: the operator prefix and the last four digits of the digits only."""
    digits = _digits(value)
    return keep_ends(digits, 3, 4) if len(digits) >= 11 else keep_ends(digits, 2, 2)


def mask_email(value: str) -> str:
    """j***@e******.com: the first letter of each part and the top-level domain."""
    local, _, domain = value.strip().rpartition("@")
    host, dot, top = domain.rpartition(".")
    if not dot:
        host, top = domain, ""
    return f"{keep_ends(local, 1, 0)}@{keep_ends(host, 1, 0)}{dot}{top}"


def mask_identifier(value: str) -> str:
    """110*************3X: three leading and two trailing characters of the compact form."""
    compact = re.sub(r"[\s\-./]", "", value)
    return keep_ends(compact, 3, 2)


def mask_card(value: str) -> str:
    """The last four digits only, as card receipts print them."""
    return keep_ends(_digits(value), 0, 4)


def mask_ssn(value: str) -> str:
    return "***-**-" + _digits(value)[-4:]


def mask_ip(value: str) -> str:
    """192.168.*.* (IPv4), 2001:db8:*:... (IPv6): the network's first half only."""
    address = ipaddress.ip_address(value.strip())
    if address.version == 4:
        return ".".join([*str(address).split(".")[:2], "*", "*"])
    return ":".join(address.exploded.split(":")[:2] + ["*"] * 6)


# ---------------------------------------------------------------- validators

# no dots: an IPv4 address would parse as a number
_PHONE_CHARACTERS = re.compile(r"^\+?[\d\s\-()]{7,24}$")


def _written_whole(value: str, number: phonenumbers.PhoneNumber) -> bool:
    """Whether `value` holds the whole number as people write it: with + and the country code, as
    the country code and national number (E.164 without its +), or in the national form with its
    trunk prefix. A Chinese landline is `010 1234 5678`: the ten digits `1012345678` are the same
    number by the plan, but written so they are any identifier that starts with 10 or 2x."""
    if value.startswith("+"):
        return True
    digits = _digits(value)
    national = _digits(phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.NATIONAL))
    return digits in (national, f"{number.country_code}{number.national_number}")


def phone_validator(regions: Sequence[str]) -> Callable[[str], bool]:
    """Valid in one of `regions` by phonenumbers' is_valid_number (the numbering plan's lengths
    and prefixes) and written whole (`_written_whole`)."""
    regions = tuple(r.upper() for r in regions) or DEFAULT_REGIONS

    def validate(value: str) -> bool:
        value = value.strip()
        if not _PHONE_CHARACTERS.match(value) or not 7 <= len(_digits(value)) <= 15:
            return False
        for region in regions:
            try:
                number = phonenumbers.parse(value, region)
            except phonenumbers.NumberParseException:
                continue
            if phonenumbers.is_valid_number(number) and _written_whole(value, number):
                return True
        return False

    return validate


def is_email(value: str) -> bool:
    """Syntax only (no DNS: check_deliverability=False), as email-validator reads RFC 5322/6531."""
    value = value.strip()
    if "@" not in value or len(value) > 254 or any(c.isspace() for c in value):
        return False
    try:
        validate_email(value, check_deliverability=False)
    except EmailNotValidError:
        return False
    return True


#: issuer identification number ranges (first digits, inclusive) and the lengths each issuer
#: issues, for the networks a warehouse meets; a number must pass Luhn AND fall in one of these
CARD_ISSUERS: tuple[tuple[str, tuple[int, int], tuple[int, ...]], ...] = (
    ("visa", (4, 4), (13, 16, 19)),
    ("mastercard", (51, 55), (16,)),
    ("mastercard", (2221, 2720), (16,)),
    ("amex", (34, 34), (15,)),
    ("amex", (37, 37), (15,)),
    ("unionpay", (62, 62), (16, 17, 18, 19)),
    ("discover", (6011, 6011), (16, 19)),
    ("discover", (644, 649), (16, 19)),
    ("discover", (65, 65), (16, 19)),
    ("jcb", (3528, 3589), (16, 17, 18, 19)),
    ("diners", (300, 305), (14, 16, 19)),
    ("diners", (36, 36), (14, 16, 19)),
    ("diners", (38, 39), (16, 19)),
    ("maestro", (50, 50), (12, 13, 14, 15, 16, 17, 18, 19)),
    ("maestro", (56, 58), (12, 13, 14, 15, 16, 17, 18, 19)),
)
_CARD_CHARACTERS = re.compile(r"^\d[\d\s\-]{11,22}$")


def card_issuer(digits: str) -> str | None:
    """The network whose IIN range and lengths `digits` fits, else None."""
    for name, (low, high), lengths in CARD_ISSUERS:
        prefix = int(digits[: len(str(low))])
        if low <= prefix <= high and len(digits) in lengths:
            return name
    return None


def is_bank_card(value: str) -> bool:
    """Luhn (python-stdnum) plus an issuer's prefix and length."""
    value = value.strip()
    if not _CARD_CHARACTERS.match(value):
        return False
    digits = _digits(value)
    return card_issuer(digits) is not None and luhn.is_valid(digits)


def is_ip(value: str) -> bool:
    value = value.strip()
    if not 3 <= len(value) <= 45 or not (("." in value) or (":" in value)):
        return False
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


#: written with its dashes (the form python-stdnum reads): an SSN has no check digit, so nine bare digits cannot be told from
#: any other nine-digit number (88% of random ones pass python-stdnum's area/group/serial rules)
_SSN_FORM = re.compile(r"^\d{3}-\d{2}-\d{4}$")


def stdnum_validator(module: str, *, delimited: re.Pattern[str] | None = None) -> Callable[[str], bool]:
    """python-stdnum's `is_valid` of `module` (e.g. `cn.ric`), on values of the `delimited` form
    when one is given."""
    checker = importlib.import_module(f"stdnum.{module}").is_valid

    def validate(value: str) -> bool:
        value = value.strip()
        if not 5 <= len(value) <= 40:
            return False
        if delimited is not None and not delimited.match(value):
            return False
        return bool(checker(value))

    return validate


#: the provinces (first two digits) of Chinese resident identity numbers, Hong Kong, Macau and
#: Taiwan's included
CN_PROVINCES = frozenset(
    {11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46}
    | {50, 51, 52, 53, 54, 61, 62, 63, 64, 65, 71, 81, 82, 83, 91}
)


def is_cn_ric(value: str) -> bool:
    """A Chinese resident identity number by python-stdnum's check digit (ISO 7064 MOD 11-2) and
    birth date, and a province code. Not stdnum's `is_valid` whole: its table of counties lacks
    real ones (Chengdu's 510104, 510105), which would read real numbers as invalid."""
    number = ric.compact(value.strip())
    if len(number) != 18 or not number[:-1].isdigit() or int(number[:2]) not in CN_PROVINCES:
        return False
    if number[-1] != ric.calc_check_digit(number):
        return False
    try:
        ric.get_birth_date(number)
    except ValidationError:
        return False
    return True


@dataclass(frozen=True)
class IdentifierKind:
    """A national or tax identifier python-stdnum validates: its module and the type it proposes;
    `validator` replaces the module's own `is_valid` where that one is wrong (`is_cn_ric`)."""

    module: str
    pii_type: str
    level: str = "L4"
    delimited: re.Pattern[str] | None = None
    validator: Callable[[str], bool] | None = None


#: identifiers of persons by region (ISO 3166 code), each validated by python-stdnum with its
#: check digits (birth dates, region codes) where the scheme has them
IDENTIFIERS: dict[str, tuple[IdentifierKind, ...]] = {
    "CN": (IdentifierKind("cn.ric", "id_card", validator=is_cn_ric),),
    "US": (IdentifierKind("us.ssn", "ssn", delimited=_SSN_FORM),),
    "IN": (IdentifierKind("in_.aadhaar", "id_card"), IdentifierKind("in_.pan", "id_card")),
    "BR": (IdentifierKind("br.cpf", "id_card"),),
    "FR": (IdentifierKind("fr.nir", "id_card"),),
    "DE": (IdentifierKind("de.idnr", "id_card"),),
    "ES": (IdentifierKind("es.dni", "id_card"),),
    "IT": (IdentifierKind("it.codicefiscale", "id_card"),),
    "KR": (IdentifierKind("kr.rrn", "id_card"),),
    "NL": (IdentifierKind("nl.bsn", "id_card"),),
    "JP": (IdentifierKind("jp.in_", "id_card"),),
    "CA": (IdentifierKind("ca.sin", "id_card"),),
    "MX": (IdentifierKind("mx.curp", "id_card"),),
    "ZA": (IdentifierKind("za.idnr", "id_card"),),
    "SE": (IdentifierKind("se.personnummer", "id_card"),),
    "DK": (IdentifierKind("dk.cpr", "id_card"),),
    "FI": (IdentifierKind("fi.hetu", "id_card"),),
    "NO": (IdentifierKind("no.fodselsnummer", "id_card"),),
    "PL": (IdentifierKind("pl.pesel", "id_card"),),
    "BE": (IdentifierKind("be.nn", "id_card"),),
    "CH": (IdentifierKind("ch.ssn", "id_card"),),
    "TR": (IdentifierKind("tr.tckimlik", "id_card"),),
    "IL": (IdentifierKind("il.idnr", "id_card"),),
}


class UnknownRegionError(WatershedError, ValueError):
    """A region setting names a region no identifier table or phone plan knows."""


def detectors_for(regions: Iterable[str] = DEFAULT_REGIONS) -> list[Detector]:
    """Every detector, the identifiers of `regions` among them (ISO 3166 codes, e.g. CN, US)."""
    regions = [r.strip().upper() for r in regions if r.strip()] or list(DEFAULT_REGIONS)
    unknown = [r for r in regions if r not in phonenumbers.SUPPORTED_REGIONS]
    if unknown:
        raise UnknownRegionError(
            f"regions: {', '.join(unknown)} is not an ISO 3166 region phonenumbers knows"
        )
    found = [
        Detector("email", "email", "L3", is_email, mask_email),
        Detector("phone", "phone", "L3", phone_validator(regions), mask_phone),
        Detector("bank_card", "bank_card", "L4", is_bank_card, mask_card),
        Detector("ip", "ip", "L2", is_ip, mask_ip),
    ]
    for region in regions:
        for kind in IDENTIFIERS.get(region, ()):
            mask = mask_ssn if kind.pii_type == "ssn" else mask_identifier
            found.append(
                Detector(
                    kind.module.replace("_.", ".").replace(".", "_").rstrip("_"),
                    kind.pii_type,
                    kind.level,
                    kind.validator or stdnum_validator(kind.module, delimited=kind.delimited),
                    mask,
                )
            )
    return found


__all__ = [
    "CARD_ISSUERS",
    "CN_PROVINCES",
    "DEFAULT_REGIONS",
    "IDENTIFIERS",
    "Detector",
    "IdentifierKind",
    "UnknownRegionError",
    "card_issuer",
    "detectors_for",
    "is_bank_card",
    "is_cn_ric",
    "is_email",
    "is_ip",
    "keep_ends",
    "mask_card",
    "mask_email",
    "mask_identifier",
    "mask_ip",
    "mask_phone",
    "mask_ssn",
    "phone_validator",
    "stdnum_validator",
]
