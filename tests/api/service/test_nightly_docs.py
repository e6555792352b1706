"""docs/operations.md's "The nightly run" names every step of the chain (in order) and every
setting the emit step reads."""

from __future__ import annotations

import re
from pathlib import Path

from watershed.api.service.lineage_emission import LineageEmissionSettings
from watershed.api.service.nightly import STEPS

DOC = Path(__file__).resolve().parents[3] / "docs" / "operations.md"
#: the emit step's settings (api/service/nightly/steps.py emit: the URL and the key)
EMIT_SETTINGS = ("openlineage_emit_url", "openlineage_api_key_file", "openlineage_api_key")


def nightly_section() -> str:
    text = DOC.read_text()
    start = text.index("## The nightly run")
    return text[start : text.index("\n## ", start + 1)]


def test_the_chain_names_every_step_in_order():
    chain = nightly_section().split("\n\n")[1]  # the paragraph after the heading: a → b → c
    words = re.sub(r"\s+", " ", chain).lower()
    positions = [words.find(step.replace("_", " ")) for step in STEPS]
    assert -1 not in positions, dict(zip(STEPS, positions, strict=True))
    assert positions == sorted(positions)


def test_the_emit_step_s_settings_are_documented():
    section = nightly_section()
    for name in EMIT_SETTINGS:
        assert name in LineageEmissionSettings.model_fields
        assert f"WATERSHED_{name.upper()}" in section, name
    assert "`emit`" in section and "propagate" in section
