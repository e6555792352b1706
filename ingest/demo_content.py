"""Content for the demo warehouse's discovery story (`generate_warehouse(..., content_tables=N)`).

A few ODS tables get an ORC file whose filler columns, with names that say nothing (`f0`, `f1`, …),
hold sensitive values beside decoys that look like them, and the DWD tables cleaned from them get
the values their task's SQL computes. So discovery finds what the name rules (`*email*`,
`*phone*`) miss, passes over the decoys, flags the derived copies of an untagged root as possible
leaks, and flags the copies of a `phone` column holding device models (the name rule's mistake)
as possible over-tagging. Values are synthetic; the check digits come from python-stdnum.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from stdnum import luhn
from stdnum.cn import ric

#: filler column -> the kind of value it holds: sensitive ones first, then decoys
FILLERS = {
    "f0": "cn_mobile",
    "f1": "email",
    "f2": "cn_ric",
    "f3": "bank_card",
    "f4": "ric_bad_check",
    "f5": "card_bad_luhn",
    "f6": "md5",
    "f7": "amount",
}
#: what discovery must propose for the fillers (the decoys: nothing)
SENSITIVE = {"f0": "phone", "f1": "email", "f2": "id_card", "f3": "bank_card"}
DEVICES = ["iPhone 12", "Mi 11 Ultra", "Galaxy S21", "Pixel 7", "Mate 40 Pro", "Reno 8", "Redmi K40"]
_AREAS = ["110101", "310104", "440305", "510104", "330106", "420102"]
_DOMAINS = ["example.com", "mail.example.cn", "corp.example.org"]


def cn_mobile(r: random.Random) -> str:
    return r.choice(["138", "139", "150", "158", "186", "188", "177"]) + f"{r.randrange(10**8):08d}"


def email(r: random.Random) -> str:
    name = "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(4, 9)))
    return f"{name}{r.randrange(1000)}@{r.choice(_DOMAINS)}"


def _ric_body(r: random.Random) -> str:
    birth = f"{r.randint(1960, 2004)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    return f"{r.choice(_AREAS)}{birth}{r.randrange(1000):03d}"


def cn_ric(r: random.Random) -> str:
    body = _ric_body(r)
    return body + ric.calc_check_digit(body + "0")  # stdnum leaves the last character out


def cn_ric_bad_check(r: random.Random) -> str:
    body = _ric_body(r)
    good = ric.calc_check_digit(body + "0")  # stdnum leaves the last character out
    return body + r.choice([c for c in "0123456789X" if c != good])


def _card_body(r: random.Random) -> str:
    return r.choice(["4", "62"]) + "".join(
        str(r.randrange(10)) for _ in range(13 if r.random() < 0.5 else 14)
    )


def bank_card(r: random.Random) -> str:
    body = _card_body(r).ljust(15, "0")
    return body + luhn.calc_check_digit(body)


def bank_card_bad_luhn(r: random.Random) -> str:
    body = _card_body(r).ljust(15, "0")
    good = luhn.calc_check_digit(body)
    return body + r.choice([c for c in "0123456789" if c != good])


def md5_hex(r: random.Random) -> str:
    return hashlib.md5(str(r.random()).encode()).hexdigest()


def amount(r: random.Random) -> str:
    return f"{r.uniform(1, 5000):.2f}"


KINDS: dict[str, Callable[[random.Random], str]] = {
    "cn_mobile": cn_mobile,
    "email": email,
    "cn_ric": cn_ric,
    "bank_card": bank_card,
    "ric_bad_check": cn_ric_bad_check,
    "card_bad_luhn": bank_card_bad_luhn,
    "md5": md5_hex,
    "amount": amount,
    "device": lambda r: r.choice(DEVICES),
}


def source_values(columns: Sequence[str], rows: int, r: random.Random, *, devices: bool) -> dict[str, list]:
    """An ODS table's values by column: named and filler columns as above, the rest plain codes.
    `devices`: its `phone` column holds device models (a name rule seeds it anyway)."""
    named = {"email": "email", "phone": "device" if devices else "cn_mobile", "amount": "amount"}
    values: dict[str, list] = {}
    for column in columns:
        kind = FILLERS.get(column) or named.get(column)
        if kind is not None:
            values[column] = [KINDS[kind](r) for _ in range(rows)]
        elif column == "payload":
            values[column] = [json.dumps({"page": {"name": f"page_{r.randrange(50)}"}}) for _ in range(rows)]
        else:
            values[column] = [f"{column[:2]}{r.randrange(10**6)}" for _ in range(rows)]
    return values


_SHAPES: list[tuple[re.Pattern[str], Callable[[re.Match[str], dict[str, list], int], object]]] = [
    (re.compile(r"^(\w+)$"), lambda m, v, i: v[m[1]][i]),
    (re.compile(r"^upper\(trim\((\w+)\)\)$"), lambda m, v, i: v[m[1]][i].strip().upper()),
    (
        re.compile(r"^CASE WHEN (\w+) > 100 THEN (\w+) ELSE NULL END$"),
        lambda m, v, i: v[m[2]][i] if _number(v[m[1]][i]) > 100 else None,
    ),
    (re.compile(r"^md5\((\w+)\)$"), lambda m, v, i: hashlib.md5(v[m[1]][i].encode()).hexdigest()),
    (re.compile(r"^coalesce\((\w+), ''\)$"), lambda m, v, i: v[m[1]][i] or ""),
    (re.compile(r"^cast\((\w+) AS string\)$"), lambda m, v, i: v[m[1]][i]),
    (
        re.compile(r"^get_json_object\((\w+), '\$\.page\.name'\)$"),
        lambda m, v, i: json.loads(v[m[1]][i])["page"]["name"],
    ),
]


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def derived_values(pairs: Sequence[tuple[str, str]], source: dict[str, list], rows: int) -> dict[str, list]:
    """What a clean task's projections (expression, name) compute from its source's values, row by
    row, for the shapes the generator writes (an expression of another shape gives nulls)."""
    out: dict[str, list] = {}
    for expression, name in pairs:
        for pattern, compute in _SHAPES:
            match = pattern.match(expression)
            if match is not None:
                out[name] = [compute(match, source, i) for i in range(rows)]
                break
        else:
            out[name] = [None] * rows
    return out


def write_table(location: Path, values: dict[str, list], partitions: Sequence[str]) -> Path:
    """One ORC file of text columns under the table's partition directories."""
    import pyarrow as pa
    import pyarrow.orc as orc

    directory = location.joinpath(*partitions)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "part-0.orc"
    orc.write_table(pa.table({k: pa.array(v, pa.string()) for k, v in values.items()}), str(path))
    return path


__all__ = [
    "DEVICES",
    "FILLERS",
    "KINDS",
    "SENSITIVE",
    "derived_values",
    "source_values",
    "write_table",
]
