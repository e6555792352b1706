"""An earlier propagation run keeps its per-layer record once a newer run exists: the Redis record
holds only the latest run, so the layers come from the run's node in the graph."""

from __future__ import annotations

from tests.support.api_service import propagate_locally


def test_an_earlier_run_keeps_its_layers_after_a_newer_run(api):
    with api.client("viewer") as viewer:
        first = viewer.get("/propagation/runs").json()["items"][0]
        assert first["layers"], first  # the fixture's full run, while it is still the current one
        propagate_locally(api.graph, api.settings)
        listed = viewer.get("/propagation/runs").json()["items"]
        # two runs started in the same second may list in either order
        assert len({r["run_id"] for r in listed}) >= 2
        earlier = next(r for r in listed if r["run_id"] == first["run_id"])
        assert earlier["layers"] == first["layers"]
        assert viewer.get(f"/propagation/runs/{first['run_id']}").json()["layers"] == first["layers"]
