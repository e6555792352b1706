"""Search answers any valid text, the top of the Unicode range included (its prefix range has an
end past U+D7FF and U+10FFFF), and refuses text that is not valid (invalid UTF-8, a lone
surrogate) with a 400 naming `q`, or one line from the CLI."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from watershed.api.cli import app
from watershed.graph.queries import id_words

TOP = "\U0010ffff"
BELOW_SURROGATES = "\ud7ff"
#: tables whose ids end at the top of the range, and a neighbour each prefix range must not reach
IDS = [f"uni.a{TOP}", f"uni.a{TOP}b", f"uni.a{TOP}{TOP}", f"uni.x{BELOW_SURROGATES}", "uni.b", "uni.y"]


@pytest.fixture(scope="module")
def unicode_tables(api):
    api.graph.execute(
        f"UNWIND $ids AS id MERGE (t:Table {{id: id}}) SET t.id_words = {id_words('id')}", {"ids": IDS}
    )
    return api


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        (f"uni.a{TOP}", [f"uni.a{TOP}", f"uni.a{TOP}{TOP}", f"uni.a{TOP}b"]),
        (f"uni.a{TOP}{TOP}", [f"uni.a{TOP}{TOP}"]),
        (f"uni.x{BELOW_SURROGATES}", [f"uni.x{BELOW_SURROGATES}"]),
        # neither is a letter or digit: no word to look for, and inside a word they are no word's start
        (BELOW_SURROGATES, []),
        (TOP, []),
        # `a` then U+10FFFF is no word `a` to RediSearch: the index answers nothing
        (f"a{TOP}", []),
        (TOP * 3, []),
    ],
)
def test_a_query_at_the_top_of_the_range_answers(unicode_tables, q, expected):
    with unicode_tables.client("viewer") as viewer:
        answer = viewer.get("/search", params={"q": q, "kind": "table"})
        assert answer.status_code == 200, answer.text
        # the module's other tables (`ads.app_events`: a word starting with `a`) are not these
        assert sorted(hit["id"] for hit in answer.json()["items"] if hit["id"].startswith("uni.")) == sorted(
            expected
        )


@pytest.mark.parametrize("raw", ["q=%ED%9F%BF", "q=a%F4%8F%BF%BF", "q=%F4%8F%BF%BF", "q=uni.a%F4%8F%BF%BF"])
def test_the_reported_queries_answer(unicode_tables, raw):
    with unicode_tables.client("viewer") as viewer:
        assert viewer.get(f"/search?{raw}").status_code == 200


@pytest.mark.parametrize("raw", ["q=%FF", "q=a%ED%A0%80", "q=%C3", "kind=table&q=%F4%90%80%80"])
def test_text_that_is_not_utf8_is_a_400_naming_q(unicode_tables, raw):
    with unicode_tables.client("viewer") as viewer:
        answer = viewer.get(f"/search?{raw}")
        assert answer.status_code == 400, answer.text
        assert answer.json()["detail"].startswith("q: "), answer.text


def test_the_cli_answers_the_top_of_the_range_and_refuses_a_lone_surrogate(unicode_tables, monkeypatch):
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(unicode_tables.settings.falkordb_port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", unicode_tables.settings.graph_name)
    runner = CliRunner()
    found = runner.invoke(app, ["graph", "search", f"uni.a{TOP}{TOP}", "--format", "json"])
    assert found.exit_code == 0, found.output
    assert "uni.a" in found.output
    # what a command line that is not UTF-8 decodes to (surrogateescape)
    refused = runner.invoke(app, ["graph", "search", "uni.\udcff"])
    assert refused.exit_code == 1, refused.output
    [line] = refused.output.strip().splitlines()
    assert line.startswith("error: q ") and "lone surrogate" in line, line
