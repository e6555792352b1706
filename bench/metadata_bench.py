"""What the descriptions-and-owners pass (propagation/metadata.py) adds to a propagation run.

    .venv/bin/python bench/metadata_bench.py --tasks 3000

Starts its own FalkorDB and Redis on free ports, generates a warehouse, gives every ODS column a
catalog description and takes the owner away from the ADS tables (so descriptions flow from the
roots and owners into the ADS columns), loads it (bench/propagation_bench.py's loader), then runs
in this process: a full propagation run (the pass included), an incremental run with nothing
changed (which skips the pass: no lineage, tag or metadata change since the last run), and the pass
alone. Prints the seconds of each and the pass's share of the full run; writes
bench/results/metadata.json with the command line in it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.propagation_bench import load_generated  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402
from watershed.ingest.generator import generate_warehouse  # noqa: E402


def describe_catalog(path: Path) -> tuple[int, int]:
    """Every ODS column gets a description, every ADS table loses its owner; returns how many of each."""
    data = json.loads(path.read_text())
    described = unowned = 0
    for name, table in data["tables"].items():
        if name.startswith("ods."):
            for column in table["columns"]:
                column["description"] = f"{column['name']} as {name} receives it"
                described += 1
        elif name.startswith("ads."):
            table.pop("owner", None)
            unowned += 1
    path.write_text(json.dumps(data))
    return described, unowned


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3, help="times the pass alone is run")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "metadata.json")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="watershed-metadata-bench-"))
    falkordb = ServerSpec("falkordb", "127.0.0.1", free_port(), work / "falkordb", with_falkordb=True)
    redis = ServerSpec("redis", "127.0.0.1", free_port(), work / "redis", with_falkordb=False)
    start(falkordb)
    start(redis)
    try:
        from watershed.graph.falkordb_store import FalkorDBStore
        from watershed.propagation.coordinator import Progress, local_runner, propagate
        from watershed.propagation.metadata import propagate_metadata
        from watershed.propagation.policy import default_policy
        from watershed.propagation.run_state import RunState
        from watershed.propagation.settings import PropagationSettings

        generate_warehouse(work / "warehouse", tasks=args.tasks, seed=args.seed)
        described, unowned = describe_catalog(work / "warehouse" / "catalog.json")
        graph = FalkorDBStore("127.0.0.1", falkordb.port, graph="bench")
        graph.ensure_schema()
        loaded, _ = load_generated(graph, work / "warehouse")
        stats = graph.stats()
        policy = default_policy()
        settings = PropagationSettings(
            falkordb_port=falkordb.port, graph_name="bench", celery_broker=f"redis://127.0.0.1:{redis.port}/0"
        )
        state = RunState.from_url(settings.broker_url(), "bench")
        said: list[str] = []

        def run(full: bool) -> tuple[float, str]:
            said.clear()
            began = time.monotonic()
            propagate(
                graph,
                policy,
                state,
                local_runner,
                full=full,
                settings=settings,
                batch_size=args.batch_size,
                progress=Progress(on_message=said.append),
            )
            return time.monotonic() - began, next((m for m in said if "descriptions" in m), "")

        full_seconds, full_line = run(full=True)
        incremental_seconds, incremental_line = run(full=False)
        token = state.last_completed().token
        passes = []
        for _ in range(args.rounds):
            began = time.monotonic()
            report = propagate_metadata(graph, token, batch_size=args.batch_size)
            passes.append(time.monotonic() - began)
        pass_seconds = statistics.median(passes)
        propagated = {
            field: graph.read(f"MATCH (n:Column) WHERE n.{field}_source = 'propagated' RETURN count(n)")[0][0]
            for field in ("description", "owner")
        }
        result = {
            "command": " ".join(sys.argv),
            "tasks": loaded,
            "columns": stats.columns,
            "described_ods_columns": described,
            "ads_tables_without_owner": unowned,
            "propagated": propagated,
            "full_run_seconds": round(full_seconds, 2),
            "full_run_pass": full_line,
            "incremental_run_seconds": round(incremental_seconds, 2),
            "incremental_run_pass": incremental_line,
            "pass_seconds_median": round(pass_seconds, 2),
            "pass_share_of_full_run": round(pass_seconds / full_seconds, 3),
            "pass_again_wrote": report.line(),
        }
        print(json.dumps(result, indent=2))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    finally:
        stop(falkordb)
        stop(redis)


if __name__ == "__main__":
    main()
