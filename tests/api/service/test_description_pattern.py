"""A description's rule as the OpenAPI schema states it (api/http/models.py DESCRIPTION_PATTERN) is
exactly the rule the use case checks (api/service/node_metadata.py valid_description), so
schemathesis need not excuse PUT /nodes/{id}/description."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from watershed.api.http.models import DESCRIPTION_PATTERN
from watershed.api.service.node_metadata import MAX_DESCRIPTION, InvalidMetadataError, valid_description

#: characters near the rule's edges: whitespace that strip() takes (control or not), other control
#: characters, tab and line feed (kept inside), and ordinary ones
_EDGE = ["a", "é", " ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x7f", "\x85", "\x9f", "\xa0"]
_EDGE += ["\u1680", "\u2000", "\u200b", "\u2028", "\u3000", "\ufeff", "\x07", "\x00"]


def _accepted(text: str) -> bool:
    try:
        valid_description(text)
    except InvalidMetadataError:
        return False
    return True


@settings(max_examples=600, deadline=None)
@given(st.one_of(st.text(st.sampled_from(_EDGE), max_size=12), st.text(max_size=12)))
def test_the_pattern_takes_exactly_what_the_use_case_takes(text):
    assert bool(re.fullmatch(DESCRIPTION_PATTERN, text)) == _accepted(text), repr(text)


def test_the_length_bound_counts_the_text_once_trimmed():
    inside = "x" * MAX_DESCRIPTION
    for text, accepted in [(inside, True), (f"  {inside}\n", True), (inside + "y", False)]:
        assert bool(re.fullmatch(DESCRIPTION_PATTERN, text)) == accepted == _accepted(text)
