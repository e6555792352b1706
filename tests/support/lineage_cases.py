"""The lineage cases of tests/ingest/cases/*.yaml (format: tests/ingest/README.md) as pytest params,
one per case with id `family::name`, and each case's catalog parsed once: the case runner
(tests/ingest/test_lineage_cases.py) and the packing test (test_harvest_rows.py) read them all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from watershed.graph.catalog import Catalog

CASES_DIR = Path(__file__).resolve().parents[1] / "ingest" / "cases"
EXPECT_KEYS = {
    "reads",
    "writes",
    "columns",
    "weak",
    "predicates",
    "windows",
    "unresolved",
    "errors",
    "table_edges",
}
CASE_KEYS = {"name", "dialect", "vars", "sql", "catalog", "expect", "xfail"}

# Parsing a catalog costs more than most extractions: build each one once.
_catalog_cache: dict[int, Catalog] = {}


def catalog_for(raw: dict[str, Any] | None) -> Catalog | None:
    if raw is None:
        return None
    key = id(raw)
    if key not in _catalog_cache:
        _catalog_cache[key] = Catalog.from_dict(raw)
    return _catalog_cache[key]


def load_cases() -> list[Any]:
    params = []
    seen: set[str] = set()
    for path in sorted(CASES_DIR.glob("*.yaml")):
        try:
            data = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            raise ValueError(f"{path}: not valid YAML: {exc}") from exc
        family = data.get("family", path.stem)
        for case in data["cases"]:
            case_id = f"{family}::{case['name']}"
            unknown = set(case) - CASE_KEYS
            unknown_expect = set(case.get("expect") or {}) - EXPECT_KEYS
            # A typo in a key would silently check nothing: refuse it at collection.
            if unknown or unknown_expect or case_id in seen:
                raise ValueError(
                    f"{path.name}: case {case['name']!r}: duplicate id or unknown keys "
                    f"{sorted(unknown | unknown_expect)}"
                )
            seen.add(case_id)
            catalog = case["catalog"] if "catalog" in case else data.get("catalog")
            marks = [pytest.mark.xfail(reason=case["xfail"], strict=True)] if case.get("xfail") else []
            params.append(pytest.param(case, catalog, id=case_id, marks=marks))
    return params
