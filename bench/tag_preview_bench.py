"""Preview of a tag change against applying it: time and exactness, on a generated warehouse.

    .venv/bin/python bench/tag_preview_bench.py --tasks 3000

Starts its own FalkorDB and Redis on free ports, generates and loads the warehouse
(bench/propagation_bench.py's loader) with a fan-out of 2,000 columns beside it (bench/ui_render.py's),
seeds it as that benchmark does and runs a full propagation. Then, in `--rounds` rounds, for each
change of a sequence that leaves the graph as it found it (on the root column whose value reaches
the most columns: set pii=L4, unset it, a family block of pii, unblock; a business value on its
table and back; on the fan-out's root: set pii, block, unblock, unset), times the preview
(api/service/tag_preview.py: the engine's incremental run on an in-memory overlay, nothing
written), then makes the change (api/service/tag_changes.py) and times it together with the real
incremental propagation run (in this process, as the preview is), and compares the
(node, key, value) set the run changed with the preview's. Prints each change's median times,
the ratio apply / preview and whether the sets were equal every round; writes
bench/results/tag_preview.json with the command line in it.
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
from bench.ui_render import fan_out_tasks  # noqa: E402
from watershed.api.service import tag_changes  # noqa: E402
from watershed.api.service.tag_preview import MAX_LIMIT, TagChange, preview_change  # noqa: E402
from watershed.graph.lineage import SqlTask  # noqa: E402
from watershed.graph.server import ServerSpec, free_port, start, stop  # noqa: E402
from watershed.ingest.extract import extract_lineage  # noqa: E402
from watershed.ingest.generator import generate_warehouse, seed_apps  # noqa: E402
from watershed.propagation.engine import downstream_cone  # noqa: E402
from watershed.propagation.preview import OwnChange, preview  # noqa: E402


def snapshot(store) -> set[tuple[str, str, str]]:
    tags = store.tags_of(store.tagged_nodes())
    return {(n, k, v) for n, found in tags.items() for k, tag in found.items() for v in tag.values}


def make(store, change: TagChange) -> None:
    if change.action == "set":
        tag_changes.set_tags(store, change.node, {change.key: change.values}, by="bench")
    elif change.action == "unset":
        tag_changes.unset_tags(store, change.node, [change.key], actor="bench")
    elif change.action == "block":
        tag_changes.block(store, change.node, change.key, by="bench")
    else:
        tag_changes.unblock(store, change.node, change.key, actor="bench")


def widest_root(store, candidates: list[str]) -> tuple[str, int]:
    """The candidate with the largest downstream cone, and its size."""
    sizes = {node: len(downstream_cone(store, [node])) for node in candidates}
    node = max(sorted(sizes), key=lambda n: sizes[n])
    return node, sizes[node]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument(
        "--rounds", type=int, default=3, help="times each change is previewed and applied (medians kept)"
    )
    parser.add_argument("--candidates", type=int, default=1000, help="root columns sized to pick the widest")
    parser.add_argument("--fan-tables", type=int, default=50, help="fan-out: first-hop tables of big.src.c")
    parser.add_argument("--fan-width", type=int, default=20, help="fan-out: columns per first-hop table")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "tag_preview.json")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="watershed-preview-bench-"))
    falkordb = ServerSpec("falkordb", "127.0.0.1", free_port(), work / "falkordb", with_falkordb=True)
    redis = ServerSpec("redis", "127.0.0.1", free_port(), work / "redis", with_falkordb=False)
    start(falkordb)
    start(redis)
    try:
        from watershed.graph.falkordb_store import FalkorDBStore
        from watershed.propagation.coordinator import local_runner, propagate
        from watershed.propagation.graph_store import GraphTagStore
        from watershed.propagation.policy import default_policy
        from watershed.propagation.run_state import RunState
        from watershed.propagation.settings import PropagationSettings

        generate_warehouse(work / "warehouse", tasks=args.tasks, seed=args.seed)
        graph = FalkorDBStore("127.0.0.1", falkordb.port, graph="bench")
        graph.ensure_schema()
        loaded, catalog = load_generated(graph, work / "warehouse")
        # a wide cone beside the generated one (bench/ui_render.py's fan-out: 2 * tables * width columns)
        fan = fan_out_tasks("big.src", "c", args.fan_tables, args.fan_width)
        graph.upsert_tasks(
            [(task, extract_lineage(task)) for task in (SqlTask(task_id=t, sql=q) for t, q in fan.items())]
        )
        stats = graph.stats()
        policy = default_policy()
        store = GraphTagStore(graph, policy, batch_size=args.batch_size)
        seed_apps(store, catalog)
        settings = PropagationSettings(
            falkordb_port=falkordb.port, graph_name="bench", celery_broker=f"redis://127.0.0.1:{redis.port}/0"
        )
        state = RunState.from_url(settings.broker_url(), "bench")

        def run(full: bool = False):
            return propagate(
                graph, policy, state, local_runner, full=full, settings=settings, batch_size=args.batch_size
            )

        t0 = time.monotonic()
        run(full=True)
        full_seconds = time.monotonic() - t0
        print(
            f"warehouse: {loaded} tasks, {stats.columns} columns; full run {full_seconds:.1f} s", flush=True
        )

        roots = sorted(
            row[0]
            for row in graph.read(
                "MATCH (c:Column)-[:FLOWS_TO]->() WHERE c.id STARTS WITH 'ods.' AND c.tags CONTAINS '\"pii\"' "
                "RETURN DISTINCT c.id"
            )
        )[: args.candidates]
        column, cone = widest_root(store, roots)
        table = column.rsplit(".", 1)[0]
        print(f"changed column: {column} (downstream cone {cone} nodes)", flush=True)
        apps = sorted(
            e["value"] for e in store.own_tags(table) if e["key"] == "app" and e["origin"] == "manual"
        )
        # each sequence leaves the graph as it found it, so the rounds repeat the same changes
        changes = [
            TagChange(node=column, action="set", key="pii", values=["L4"]),
            TagChange(node=column, action="unset", key="pii"),
            TagChange(node=column, action="block", key="pii"),
            TagChange(node=column, action="unblock", key="pii"),
            TagChange(node=table, action="set", key="app", values=["lark"]),
            TagChange(node=table, action="set", key="app", values=apps)
            if apps
            else TagChange(node=table, action="unset", key="app"),
            TagChange(node="big.src.c", action="set", key="pii", values=["L3"]),
            TagChange(node="big.src.c", action="block", key="pii"),
            TagChange(node="big.src.c", action="unblock", key="pii"),
            TagChange(node="big.src.c", action="unset", key="pii"),
        ]
        seen: list[dict] = [{"preview": [], "apply": [], "same": []} for _ in changes]
        for round_ in range(args.rounds):
            for change, times in zip(changes, seen, strict=True):
                t0 = time.monotonic()
                found = preview_change(store, change, limit=MAX_LIMIT)
                times["preview"].append(time.monotonic() - t0)
                if found.truncated:  # the listing is bounded: compare the engine's whole answer
                    whole = preview(
                        store,
                        policy,
                        OwnChange(change.node, change.action, change.key, frozenset(change.values)),
                    )
                    previewed = {(d.node, d.key, v) for d in whole.deltas for v in d.before ^ d.after}
                else:
                    previewed = {
                        (i.node, i.key, v)
                        for g in found.groups
                        for i in g.items
                        for v in set(i.before) ^ set(i.after)
                    }
                before = snapshot(store)
                t0 = time.monotonic()
                make(store, change)
                record = run()
                times["apply"].append(time.monotonic() - t0)
                applied = before ^ snapshot(store)
                times["same"].append(previewed == applied)
                times.update(found=found, record=record, applied=len(applied))
            print(f"round {round_ + 1} of {args.rounds} done", flush=True)
        rows = []
        for change, times in zip(changes, seen, strict=True):
            found, record = times["found"], times["record"]
            preview_seconds, apply_seconds = (
                statistics.median(times["preview"]),
                statistics.median(times["apply"]),
            )
            row = {
                "change": f"{change.action} {change.key}"
                + (f"={','.join(change.values)}" if change.values else ""),
                "node": change.node,
                "cone": found.cone,
                "layers": found.layers,
                "changed_tags": found.total,
                "changed_columns": found.columns,
                "changed_tables": found.tables,
                "preview_seconds": round(preview_seconds, 4),
                "apply_and_run_seconds": round(apply_seconds, 4),
                "preview_seconds_each": [round(t, 4) for t in times["preview"]],
                "apply_and_run_seconds_each": [round(t, 4) for t in times["apply"]],
                "run_nodes_processed": record.nodes_processed,
                "ratio_apply_to_preview": round(apply_seconds / preview_seconds, 2),
                "same_set": all(times["same"]),
                "changed_values": times["applied"],
            }
            rows.append(row)
            print(
                f"  {row['change']:<16} on {change.node}: preview {preview_seconds * 1000:8.1f} ms, "
                f"apply + run {apply_seconds * 1000:8.1f} ms (x{row['ratio_apply_to_preview']}), "
                f"{found.total} tags in {found.columns} columns / {found.tables} tables changed, "
                f"same set: {row['same_set']}",
                flush=True,
            )
        result = {
            "command": " ".join(["python", "bench/tag_preview_bench.py", *sys.argv[1:]]),
            "tasks": loaded,
            "columns": stats.columns,
            "column_edges": stats.column_edges,
            "batch_size": args.batch_size,
            "full_run_seconds": round(full_seconds, 2),
            "changed_column": column,
            "changes": rows,
            "all_same_set": all(row["same_set"] for row in rows),
            "preview_faster_every_time": all(row["ratio_apply_to_preview"] > 1 for row in rows),
            "rounds": args.rounds,
            "median_ratio_apply_to_preview": statistics.median(row["ratio_apply_to_preview"] for row in rows),
        }
        print(json.dumps(result, indent=2))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        if not result["all_same_set"]:
            sys.exit(1)
    finally:
        stop(redis)
        stop(falkordb)


if __name__ == "__main__":
    main()
