"""bench/scale_bench.py's arithmetic on its results: the size exponents it fits per backend, the
targets it marks, and the results file it merges (files written before `--backend` included)."""

from __future__ import annotations

import argparse
import json

from bench import scale_bench


def size(backend: str, columns: int, full_seconds: float, peak_mib: float, page_p99: float) -> dict:
    return {
        "backend": backend,
        "warehouse": {"columns": columns},
        "stages": {
            "full_propagation": {
                "seconds": full_seconds,
                "process_peak_mib": peak_mib,
                "processes_peak_mib": {"stage:propagate": peak_mib},
            },
            "incremental_propagation": {"seconds": 1.0 * columns / 50_000},
        },
        "probes_during_propagation": {"column_page": {"p99_ms": page_p99}},
        "processes": {"propagation_coordinator": peak_mib, "bench": 9000.0},
    }


def test_the_fit_is_the_least_squares_slope_over_every_size_and_the_pairs_are_kept():
    # seconds grow as n^1.2, memory as n^0.5: the fit recovers both over three sizes
    sizes = {
        f"falkordb/{n}": size("falkordb", n, 10.0 * (n / 50_000) ** 1.2, 100.0 * (n / 50_000) ** 0.5, 10)
        for n in (50_000, 200_000, 2_000_000)
    }
    sizes["neo4j/50000"] = size("neo4j", 50_000, 99.0, 1.0, 10)
    growth = scale_bench.exponents(sizes, "falkordb")
    assert growth["fit"]["full_propagation.seconds"] == {"exponent": 1.2, "sizes": 3}
    assert growth["fit"]["full_propagation.peak_mib"]["exponent"] == 0.5
    assert set(growth["pairs"]) == {"50000->200000", "200000->2000000"}
    assert growth["pairs"]["200000->2000000"]["full_propagation.seconds"] == 1.2
    # another backend's sizes are not mixed in: one size, no fit
    assert scale_bench.exponents(sizes, "neo4j") == {"pairs": {}, "fit": {}}


def test_targets_mark_each_figure_met_or_missed_with_the_pair_ending_at_the_size():
    small = size("falkordb", 50_000, 10.0, 100.0, 20.0)
    big = size("falkordb", 500_000, 10.0 * 10**1.3, 5000.0, 80.0)
    growth = scale_bench.exponents({"a": small, "b": big}, "falkordb")
    marks = scale_bench.targets(big, small, growth)
    assert marks["column_page_p99_ms_during_propagation"] == {"value": 80.0, "target": 50.0, "met": False}
    assert (
        marks["incremental_vs_smallest"]["value"] == 10.0 and marks["incremental_vs_smallest"]["met"] is False
    )
    # the bench's own process is not a Watershed process
    assert marks["largest_watershed_process_mib"]["process"] == "propagation_coordinator"
    assert marks["largest_watershed_process_mib"]["met"] is False
    # memory 100 -> 5000 MiB over 10x the columns: exponent 1.7, the steepest of the pair
    assert marks["largest_exponent_to_this_size"] == {
        "value": 1.7,
        "target": 1.1,
        "met": False,
        "figure": "full_propagation.peak_mib",
    }
    # a figure not measured is neither met nor missed
    assert marks["search_p99_ms_idle"]["met"] is None


def test_the_results_file_keys_sizes_by_backend_and_keeps_older_files_sizes(tmp_path, monkeypatch):
    out = tmp_path / "scale.json"
    # a file from before `--backend`: FalkorDB's sizes keyed by columns alone
    old = size("falkordb", 50_000, 10.0, 100.0, 20.0)
    del old["backend"]
    out.write_text(json.dumps({"sizes": {"50000": old}}))
    args = argparse.Namespace(out=out, workers=1, concurrency=2)
    monkeypatch.setattr("sys.argv", ["scale_bench.py", "--sizes", "200000"])
    scale_bench.write({"falkordb/200000": size("falkordb", 200_000, 40.0, 100.0, 20.0)}, args)
    written = json.loads(out.read_text())
    assert set(written["sizes"]) == {"falkordb/50000", "falkordb/200000"}
    assert written["exponents"]["falkordb"]["fit"]["full_propagation.seconds"]["exponent"] == 1.0
    assert written["commands"] == [".venv/bin/python bench/scale_bench.py --sizes 200000"]
    assert written["sizes"]["falkordb/200000"]["targets"]["full_propagation_s"]["met"] is True
