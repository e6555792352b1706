"""The runs the API lists page by page, newest first, each run once: a cursor's page starts below
the last run of the page before (FalkorDB's index answered `id < $after` with every run)."""

from __future__ import annotations

from watershed.api.http.routers.runs import PROPAGATION_RUNS


def test_the_propagation_runs_page_below_the_cursor(graph_store):
    ids = [f"prop-20240131T00000{n}-abcdef" for n in range(5)]
    for run_id in ids:
        graph_store.execute(
            "CREATE (:PropagationRun {id: $id, mode: 'full', status: 'done'})", {"id": run_id}
        )
    seen, after = [], "~"
    for _ in range(len(ids)):  # bounded: a cursor that went nowhere repeated its page forever
        rows = graph_store.read(PROPAGATION_RUNS, {"after": after, "n": 2})
        seen += [row[0] for row in rows]
        if len(rows) < 2:
            break
        after = seen[-1]
    assert seen == ids[::-1]
