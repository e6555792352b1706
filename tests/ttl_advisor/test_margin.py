"""Advice never deletes data its own evidence says is read: no negative margin, no TTL under the widest window."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from watershed.ttl_advisor.advisor import recommend
from watershed.ttl_advisor.model import ColumnUse, Recommendation
from watershed.ttl_advisor.settings import AdvisorSettings

USES = [ColumnUse(task_id="t_month", window_days=30), ColumnUse(task_id="t_day", window_days=1)]


def test_negative_margin_setting_is_refused(monkeypatch):
    monkeypatch.setenv("WATERSHED_TTL_MARGIN_DAYS", "-5")
    with pytest.raises(ValidationError, match="ttl_margin_days"):
        AdvisorSettings()


def test_recommend_refuses_a_negative_margin():
    with pytest.raises(ValueError, match="margin"):
        recommend("db.t.c", USES, table_ttl_days=365, margin_days=-5)


def test_a_recommendation_shorter_than_its_widest_window_cannot_exist():
    with pytest.raises(ValidationError, match="shorter than the 30-day window"):
        Recommendation(column="db.t.c", table="db.t", status="ttl", ttl_days=25, evidence=USES)


def test_only_the_table_ttl_may_cut_below_a_window():
    rec = recommend("db.t.c", USES, table_ttl_days=20, margin_days=3)
    assert rec.ttl_days == 20 and rec.capped
    rec = recommend("db.t.c", USES, table_ttl_days=365, margin_days=0)
    assert rec.ttl_days == 30 and rec.max_window_days == 30


def test_ttl_advise_on_a_graph_that_does_not_exist(falkordb_server, monkeypatch):
    from typer.testing import CliRunner

    from watershed.api.cli import app

    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(falkordb_server.port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", "no_such_graph_here")
    result = CliRunner().invoke(app, ["ttl", "advise"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "no_such_graph_here" in result.output and "0 columns" not in result.output
