"""Labelled values for discovery's tests and benchmark: sensitive ones that are valid by their own
rules (check digits computed here, independently of python-stdnum) and decoys that look alike but
are not (a wrong check digit, hashes, amounts, sequential order numbers).

Every generator takes a `random.Random`, so a seed gives the same values on every run.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable

#: GB 11643-1999 weights of the first 17 digits of a Chinese resident identity number
_RIC_WEIGHTS = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2]
_RIC_CHECK = "10X98765432"
#: county codes that exist (Beijing Dongcheng, Shanghai Huangpu, Guangzhou Tianhe, Chengdu Wuhou)
_RIC_COUNTIES = ["110101", "310101", "440106", "510107"]


def ric_check(first17: str) -> str:
    return _RIC_CHECK[sum(int(d) * w for d, w in zip(first17, _RIC_WEIGHTS, strict=True)) % 11]


def cn_ric(r: random.Random) -> str:
    birth = f"{r.randint(1950, 2004)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    first17 = r.choice(_RIC_COUNTIES) + birth + f"{r.randint(0, 999):03d}"
    return first17 + ric_check(first17)


def cn_ric_bad_check(r: random.Random) -> str:
    good = cn_ric(r)
    wrong = [c for c in _RIC_CHECK if c != good[-1]]
    return good[:-1] + r.choice(wrong)


def luhn_check(payload: str) -> str:
    total = 0
    for i, digit in enumerate(reversed(payload)):
        d = int(digit)
        if i % 2 == 0:  # doubled: the check digit will sit to the right of these
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return str((10 - total % 10) % 10)


def bank_card(r: random.Random) -> str:
    prefix, length = r.choice([("4", 16), ("51", 16), ("62", 19), ("37", 15), ("6011", 16)])
    payload = prefix + "".join(str(r.randint(0, 9)) for _ in range(length - len(prefix) - 1))
    return payload + luhn_check(payload)


def bank_card_bad_check(r: random.Random) -> str:
    good = bank_card(r)
    return good[:-1] + str((int(good[-1]) + r.randint(1, 9)) % 10)


def cn_mobile(r: random.Random) -> str:
    return r.choice(["138", "139", "150", "186", "177"]) + "".join(str(r.randint(0, 9)) for _ in range(8))


def us_phone(r: random.Random) -> str:
    area = r.choice(["212", "415", "312", "617", "206"])
    return f"({area}) {r.randint(200, 999)}-{r.randint(1000, 9999)}"


def email(r: random.Random) -> str:
    user = "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(3, 9)))
    return f"{user}{r.randint(1, 999)}@{r.choice(['example.com', 'mail.example.cn', 'corp.example.org'])}"


def ssn(r: random.Random) -> str:
    area = r.choice([n for n in range(1, 900) if n != 666])
    return f"{area:03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"


def ipv4(r: random.Random) -> str:
    return f"{r.randint(1, 223)}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"


def md5_hex(r: random.Random) -> str:
    return hashlib.md5(str(r.random()).encode()).hexdigest()


def amount(r: random.Random) -> str:
    return f"{r.randint(1, 99999)}.{r.randint(0, 99):02d}"


def order_number(r: random.Random) -> str:
    return str(1_000_000_000 + r.randint(0, 999_999))


def digits(r: random.Random, length: int) -> str:
    return str(r.randrange(10 ** (length - 1), 10**length))


def city(r: random.Random) -> str:
    return r.choice(["beijing", "shanghai", "shenzhen", "chengdu", "new york", "seattle"])


#: kind -> (generator, the pii_type discovery should find, or None for a decoy)
KINDS: dict[str, tuple[Callable[[random.Random], str], str | None]] = {
    "email": (email, "email"),
    "cn_mobile": (cn_mobile, "phone"),
    "us_phone": (us_phone, "phone"),
    "cn_ric": (cn_ric, "id_card"),
    "bank_card": (bank_card, "bank_card"),
    "ssn": (ssn, "ssn"),
    "ipv4": (ipv4, "ip"),
    "ric_bad_check": (cn_ric_bad_check, None),
    "card_bad_check": (bank_card_bad_check, None),
    "md5": (md5_hex, None),
    "amount": (amount, None),
    "order_number": (order_number, None),
    # uniform numbers of an identifier's length: 64% of ten-digit ones are valid US numbers
    "digits10": (lambda r: digits(r, 10), None),
    "digits11": (lambda r: digits(r, 11), None),
    "digits16": (lambda r: digits(r, 16), None),
    "digits18": (lambda r: digits(r, 18), None),
    "city": (city, None),
}


def column_values(kind: str, rows: int, r: random.Random, nulls: float = 0.0) -> list[str | None]:
    make = KINDS[kind][0]
    return [None if nulls and r.random() < nulls else make(r) for _ in range(rows)]
