"""A pytest plugin that records every `query_points` call of a test run as a snapshot case
(the statement's text, dialect, default database, variables and catalog), for make.py:

    .venv/bin/python -m pytest -p tests.ingest.points_snapshot.record tests/ingest/test_points.py ...

It replaces `watershed.ingest.points.query_points` before the test modules import it; the
recorded inputs go to the file named by WATERSHED_POINTS_RECORD (JSON lines)."""

from __future__ import annotations

import json
import os

from sqlglot import exp

import watershed.ingest.points as points

_original = points.query_points


def _recording(sql, catalog, *, dialect="spark", default_database="default", variables=None):
    # parse_query keeps the text under this meta key (ingest/points.py)
    text = sql.meta.get("watershed_sql") if isinstance(sql, exp.Expression) else sql
    if isinstance(text, str):
        case = {
            "sql": text,
            "dialect": dialect,
            "default_database": default_database,
            "variables": variables,
            "catalog": catalog.model_dump(mode="json"),
        }
        with open(os.environ["WATERSHED_POINTS_RECORD"], "a", encoding="utf-8") as out:
            out.write(json.dumps(case, sort_keys=True) + "\n")
    return _original(sql, catalog, dialect=dialect, default_database=default_database, variables=variables)


points.query_points = _recording
